"""Where the review links a commit, ref or release: GitHub, GitHub Enterprise, or nowhere."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jobs.commands.review import audit_site
from jobs.ledger.audits import AuditFinding, AuditRun
from jobs.review.links import site_for_url

SHA = "0123456789abcdef0123456789abcdef01234567"
GHE = {"GITHUB_API_URL": "https://ghe.example.com/api/v3"}


@pytest.mark.parametrize("url", [
    "https://github.com/acme/app.git", "https://github.com/acme/app",
    "git@github.com:acme/app.git", "ssh://git@github.com/acme/app.git",
    "https://token:x-oauth@github.com/acme/app.git", "ssh://git@ssh.github.com:443/acme/app.git",
])
def test_github_remotes_link_to_github(url: str) -> None:
    site = site_for_url(url, {})
    assert site is not None
    assert site.commit(SHA) == f"https://github.com/acme/app/commit/{SHA}"
    assert site.ref("refs/heads/main") == "https://github.com/acme/app/tree/main"
    assert site.ref("refs/tags/v1.2.0") == "https://github.com/acme/app/tree/v1.2.0"
    assert site.ref("releases/v1.2.0") == "https://github.com/acme/app/releases/tag/v1.2.0"


def test_enterprise_host_only_with_its_api_url() -> None:
    url = "git@ghe.example.com:acme/lib.git"
    assert site_for_url(url, {}) is None
    site = site_for_url(url, GHE)
    assert site is not None and site.base == "https://ghe.example.com/acme/lib"


@pytest.mark.parametrize("url", ["/srv/git/app.git", "file:///srv/git/app.git",
                                 "https://gitlab.com/acme/app.git",
                                 "https://github.com/acme/app/extra.git"])
def test_anything_else_is_the_sha_alone(url: str) -> None:
    assert site_for_url(url, GHE) is None


def test_audit_findings_link_through_the_recorded_remotes(monkeypatch: pytest.MonkeyPatch,
                                                          ) -> None:
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    run = AuditRun(recorded_at=datetime(2026, 11, 30, tzinfo=UTC), command="closeout",
                   verdict="fail", exit_code=1,
                   repos={"/w/app": {"origin": "git@github.com:acme/app.git",
                                     "mirror": "/srv/mirror.git"}})

    def finding(remote: str) -> AuditFinding:
        return AuditFinding("/w/app", remote, "refs/heads/main", "commit", None, None, SHA,
                            "UNGRANTED", "a push the log never saw")

    origin = audit_site(run, finding("origin"))
    assert origin is not None and origin.base == "https://github.com/acme/app"
    assert audit_site(run, finding("mirror")) is None
    release = audit_site(run, finding("github:acme/app"))
    assert release is not None
    assert release.ref("releases/v2") == "https://github.com/acme/app/releases/tag/v2"
