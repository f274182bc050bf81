"""`notify:` messages through Apprise (the optional extra `loop-jobs[notify]`), imported only when
a message is sent: its import is slow and most runs send nothing."""

from __future__ import annotations

from jobs.notify.bounded import CALL_LIMIT, within

# Apprise's own notification types.
FAILURE = "failure"
WARNING = "warning"
NOT_INSTALLED = ("Apprise is not installed: pip install 'loop-jobs[notify]' "
                 "(or pipx inject loop-jobs apprise)")


def apprise_missing() -> bool:
    import importlib.util

    return importlib.util.find_spec("apprise") is None


def send(url: str, title: str, body: str, kind: str, *, limit: float = CALL_LIMIT) -> str | None:
    """Send one message to one Apprise URL; None when it was delivered, else why not."""
    try:
        import apprise
    except ImportError:
        return NOT_INSTALLED

    def call() -> str | None:
        teller = apprise.Apprise()
        if not teller.add(url):
            return "Apprise does not understand this URL"
        if teller.notify(title=title, body=body, notify_type=kind,
                         body_format=apprise.NotifyFormat.TEXT):
            return None
        return "the service did not take the message"

    return within(limit, call)
