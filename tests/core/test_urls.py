"""Remote URLs read one way everywhere: the scp-like form as git tells it from a path, a
repository's identity across clones, and credentials never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.core.urls import github_remote, normalise_remote, redact_url, scp_parts


@pytest.mark.parametrize(("url", "parts"), [
    ("git@github.com:o/app.git", ("git", "github.com", "o/app.git")),
    ("host:/srv/x", (None, "host", "/srv/x")),       # ssh with an absolute path, as git reads it
    ("host:x", (None, "host", "x")),
    ("[::1]:repo", (None, "::1", "repo")),
    ("./a:b", None),                                  # a slash before the colon: a local path
    ("/srv/a:b", None),
    ("https://github.com/o/app", None),
    ("file:///srv/x", None),
    ("plain", None),
    (":x", None),
])
def test_scp_like_urls_are_told_from_local_paths_as_git_tells_them(
        url: str, parts: tuple[str | None, str, str] | None) -> None:
    assert scp_parts(url) == parts


def test_the_identity_and_the_github_reading_agree_on_every_scp_form() -> None:
    base = Path("/unused")
    assert normalise_remote("host:/srv/x", base) == "host/srv/x"
    assert normalise_remote("ssh://host/srv/x", base) == "host/srv/x"
    assert github_remote("git@github.com:/o/app.git") == ("github.com", "o/app")
    assert normalise_remote("git@github.com:/o/app.git", base) == "github.com/o/app"


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql+psycopg://loop:s3cret@db.example/ledger",
     "postgresql+psycopg://***@db.example/ledger"),
    # SQLAlchemy cannot parse this one; the password must not be shown all the same.
    ("postgresql+psycopg://loop:s3cr/et@db.example:notaport/ledger",
     "postgresql+psycopg://***@db.example:notaport/ledger"),
    ("postgresql://loop@db.example/ledger", "postgresql://loop@db.example/ledger"),
    ("sqlite:////home/o/.local/state/loop-jobs/ledger.db",
     "sqlite:////home/o/.local/state/loop-jobs/ledger.db"),
])
def test_a_ledger_url_never_shows_its_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_a_port_and_a_path_holding_an_at_sign_are_no_credentials() -> None:
    assert redact_url("https://registry.example:8080/@scope/pkg") == \
        "https://registry.example:8080/@scope/pkg"
    assert redact_url("https://x-access-token:ghs_abc@github.com/o/n") == \
        "https://***@github.com/o/n"
