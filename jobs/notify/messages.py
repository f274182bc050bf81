"""`notify:` messages through Apprise (the optional extra `loop-jobs[notify]`), imported only when
a message is sent: its import is slow and most runs send nothing."""

from __future__ import annotations

import logging

from jobs.notify.bounded import CALL_LIMIT, within

# Apprise's own notification types.
FAILURE = "failure"
WARNING = "warning"
NOT_INSTALLED = ("Apprise is not installed: pip install 'loop-jobs[notify]' "
                 "(or pipx inject loop-jobs apprise)")
NOT_UNDERSTOOD = "Apprise does not understand this URL"


def apprise_missing() -> bool:
    import importlib.util

    return importlib.util.find_spec("apprise") is None


def understood(url: str) -> bool:
    """Whether Apprise (installed) can send to `url` at all: no message to it is tried."""
    import apprise

    try:
        return bool(apprise.Apprise().add(url))
    except Exception:  # a plugin's fault parsing the URL: it cannot be sent to either
        return False


def send(url: str, title: str, body: str, kind: str, *, limit: float = CALL_LIMIT) -> str | None:
    """Send one message to one Apprise URL; None when it was delivered, else why not."""
    try:
        import apprise
    except ImportError:
        return NOT_INSTALLED

    def call() -> str | None:
        teller = apprise.Apprise()
        if not teller.add(url):
            return NOT_UNDERSTOOD
        said = _Said()
        source = logging.getLogger("apprise")
        source.addHandler(said)
        try:
            if teller.notify(title=title, body=body, notify_type=kind,
                             body_format=apprise.NotifyFormat.TEXT):
                return None
        finally:
            source.removeHandler(said)
        # Apprise says why only in its log: its last warning is the reason.
        return "the service did not take the message" + (f": {said.last}" if said.last else "")

    return within(limit, call)


class _Said(logging.Handler):
    """The last warning Apprise logged while it sent one message."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.last = record.getMessage().strip()
