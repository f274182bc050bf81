"""GitHub releases through PyGithub against pytest-httpserver answering GitHub-shaped JSON."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from audit_helpers import gh_release, git, isolate_git, link_header, make_repo_with_remote
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from audit.evidence.github import find_token, read_releases
from audit.evidence.rundir import BEFORE
from audit.evidence.snapshot import snapshot_complete, take_snapshot
from audit.main import main as audit_main
from jobs.core.urls import github_hosts, github_repo_from_url

PREFIX = "/api/v3"
OWNER_NAME = "octo/widgets"
TOKEN = "test-token-123"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


def api(httpserver: HTTPServer) -> str:
    return httpserver.url_for(PREFIX).rstrip("/")


def releases_path(owner_name: str = OWNER_NAME) -> str:
    return f"{PREFIX}/repos/{owner_name}/releases"


def notes_digest(body: str) -> str:
    """What a snapshot records of a release's notes (its body)."""
    return hashlib.sha256(body.encode()).hexdigest()


def serve_two_pages(httpserver: HTTPServer, owner_name: str = OWNER_NAME) -> None:
    base = api(httpserver)
    page2 = f"{base}/repos/{owner_name}/releases?per_page=100&page=2"
    httpserver.expect_request(releases_path(owner_name), query_string={"per_page": "100"}) \
        .respond_with_json(
            [gh_release(base, owner_name, 3, "v1.1.0", draft=True, author="octocat"),
             gh_release(base, owner_name, 2, "v1.1.0-rc.1", prerelease=True,
                        created_at="2026-11-28T09:00:00Z", published_at="2026-11-28T09:30:00Z")],
            headers={"Link": link_header([("next", page2), ("last", page2)])})
    httpserver.expect_request(releases_path(owner_name),
                              query_string={"per_page": "100", "page": "2"}) \
        .respond_with_json([gh_release(base, owner_name, 1, "v1.0.0", target="release-branch",
                                       name="First", created_at="2026-11-01T08:00:00+00:00",
                                       published_at="2026-11-01T08:10:00Z")])


def test_releases_are_read_across_pages_with_drafts_prereleases_and_authors(
        httpserver: HTTPServer) -> None:
    serve_two_pages(httpserver)
    part = read_releases(OWNER_NAME, token=TOKEN, base_url=api(httpserver), timeout=5)
    assert part == {"available": True, "releases": [
        {"id": 1, "tag_name": "v1.0.0", "name": "First", "draft": False, "prerelease": False,
         "author": "release-please[bot]", "target_commitish": "release-branch",
         "created_at": "2026-11-01T08:00:00Z", "published_at": "2026-11-01T08:10:00Z",
         "assets": [], "body_sha256": notes_digest("Release v1.0.0")},
        {"id": 3, "tag_name": "v1.1.0", "name": "v1.1.0", "draft": True, "prerelease": False,
         "author": "octocat", "target_commitish": "main",
         "created_at": "2026-11-29T10:00:00Z", "published_at": None, "assets": [],
         "body_sha256": notes_digest("Release v1.1.0")},
        {"id": 2, "tag_name": "v1.1.0-rc.1", "name": "v1.1.0-rc.1", "draft": False,
         "prerelease": True, "author": "release-please[bot]", "target_commitish": "main",
         "created_at": "2026-11-28T09:00:00Z", "published_at": "2026-11-28T09:30:00Z",
         "assets": [], "body_sha256": notes_digest("Release v1.1.0-rc.1")},
    ]}
    assert len(httpserver.log) == 2
    assert all(req.headers["Authorization"] == f"token {TOKEN}" for req, _ in httpserver.log)
    httpserver.check_assertions()


def rate_limited(httpserver: HTTPServer) -> None:
    httpserver.expect_request(releases_path()).respond_with_json(
        {"message": "API rate limit exceeded for user ID 1.",
         "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"},
        status=403, headers={"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                             "x-ratelimit-used": "5000",
                             "x-ratelimit-reset": str(int(time.time()) + 3600)})


def malformed(httpserver: HTTPServer) -> None:
    httpserver.expect_request(releases_path()).respond_with_data(
        '[{"tag_name": "v1", "draft": fal', content_type="application/json")


def incomplete(httpserver: HTTPServer) -> None:
    httpserver.expect_request(releases_path()).respond_with_json(
        [{"id": 5, "draft": False}])


def error(status: int, message: str) -> Callable[[HTTPServer], None]:
    def serve(httpserver: HTTPServer) -> None:
        httpserver.expect_request(releases_path()).respond_with_json(
            {"message": message, "documentation_url": "https://docs.github.com/rest"},
            status=status)
    return serve


@pytest.mark.parametrize(("serve", "words"), [
    (error(401, "Bad credentials"), "GitHub refused the token (401 Bad credentials)"),
    (error(404, "Not Found"), "not found (404): octo/widgets does not exist"),
    (error(500, "Server Error"), "GitHub answered 500 Server Error"),
    (rate_limited, "GitHub rate limit exhausted"),
    (malformed, "malformed JSON"),
    (incomplete, "unusable release object"),
], ids=["401", "404", "500", "rate-limit", "malformed-json", "incomplete-release"])
def test_every_api_failure_makes_releases_unavailable_with_a_reason(
        httpserver: HTTPServer, serve: Callable[[HTTPServer], None], words: str) -> None:
    serve(httpserver)
    started = time.monotonic()
    part = read_releases(OWNER_NAME, token=TOKEN, base_url=api(httpserver), timeout=5)
    assert part["available"] is False
    assert words in part["reason"] and "octo/widgets" in part["reason"]
    assert set(part) == {"available", "reason"}
    # Never waits for the rate limit's reset, an hour away: any wait for it is far above this
    # bound, and no loaded machine takes as long for one refused request.
    assert time.monotonic() - started < 60
    assert TOKEN not in part["reason"]


def test_a_slow_answer_is_cut_off_at_the_timeout(httpserver: HTTPServer) -> None:
    # The server answers only once the test has its result: without the cut-off the read would
    # wait for ever (and the test time out), with it the read ends after its 1 s.
    answer, answered = threading.Event(), threading.Event()

    def slow(request: Request) -> Response:
        answer.wait(60)
        answered.set()
        return Response("[]", content_type="application/json")

    httpserver.expect_request(releases_path()).respond_with_handler(slow)
    started = time.monotonic()
    try:
        part = read_releases(OWNER_NAME, token=TOKEN, base_url=api(httpserver), timeout=1)
        elapsed = time.monotonic() - started
    finally:
        answer.set()
        answered.wait(60)  # the single-threaded server is free again for the next test
    assert 1 <= elapsed < 30, elapsed
    assert part == {"available": False, "reason": "GitHub did not answer within 1s reading "
                    f"releases of {OWNER_NAME} from {api(httpserver)}"}


def test_no_token_is_unavailable_without_asking(httpserver: HTTPServer) -> None:
    part = read_releases(OWNER_NAME, token=None, base_url=api(httpserver))
    assert part["available"] is False and part["reason"].startswith("no GitHub token")
    assert httpserver.log == []


@pytest.mark.parametrize(("url", "expected"), [
    ("https://github.com/rknightion/loop-pi.git", "rknightion/loop-pi"),
    ("https://github.com/rknightion/loop-pi", "rknightion/loop-pi"),
    ("https://x-access-token:abc@github.com/o/n.git/", "o/n"),
    ("http://GitHub.com/o/n", "o/n"),
    ("git@github.com:o/n.git", "o/n"),
    ("github.com:o/n", "o/n"),
    ("ssh://git@github.com/o/n.git", "o/n"),
    ("ssh://git@ssh.github.com:443/o/n.git", "o/n"),
    ("git://github.com/o/n.git", "o/n"),
    ("https://ghe.example.com/o/n.git", "o/n"),
    ("git@ghe.example.com:o/n.git", "o/n"),
    ("https://gitlab.com/o/n.git", None),
    ("git@gitlab.com:o/n.git", None),
    ("https://github.com/o", None),
    ("https://github.com/o/n/extra", None),
    ("/srv/git/o/n.git", None),
    ("../n.git", None),
    ("file:///github.com/o/n.git", None),
    ("file://github.com/o/n.git", None),
    ("C:/github.com/o/n", None),
])
def test_github_repo_from_url(url: str, expected: str | None) -> None:
    assert github_repo_from_url(url, extra_hosts=["ghe.example.com"]) == expected


def test_the_host_of_github_api_url_counts_as_github() -> None:
    hosts = github_hosts({"GITHUB_API_URL": "http://127.0.0.1:8080/api/v3"})
    assert "127.0.0.1" in hosts and "github.com" in hosts
    assert github_repo_from_url("https://127.0.0.1:8080/o/n.git", hosts) == "o/n"
    assert github_repo_from_url("git@127.0.0.1:o/n.git", hosts) == "o/n"
    assert github_repo_from_url("git@127.0.0.1:o/n.git", github_hosts({})) is None


def test_token_sources_in_order(tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    assert find_token({"GITHUB_TOKEN": "a", "GH_TOKEN": "b", "PATH": str(empty)}) == "a"
    assert find_token({"GH_TOKEN": "b", "PATH": str(empty)}) == "b"
    assert find_token({"PATH": str(empty)}) is None
    # With gh installed, its `auth token` answer is used (this gh prints what a logged-in gh does).
    bindir = tmp_path / "bin"
    bindir.mkdir()
    gh = bindir / "gh"
    gh.write_text('#!/bin/sh\n[ "$1 $2" = "auth token" ] && echo "gho_fromgh $3 $4"\n')
    gh.chmod(0o755)
    assert find_token({"PATH": str(bindir)}) == "gho_fromgh"
    assert find_token({"PATH": str(bindir), "GITHUB_API_URL": "https://ghe.example.com/api/v3"}) \
        == "gho_fromgh --hostname ghe.example.com"


# --- releases inside snapshots -------------------------------------------------------------------

def github_clone(tmp_path: Path, httpserver: HTTPServer,
                 monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone whose origin is configured as a GitHub URL on the test server's host, rewritten by
    url.<base>.insteadOf to a real bare repository on disk."""
    clone, bare = make_repo_with_remote(tmp_path)
    github_url = f"https://localhost:{httpserver.port}/{OWNER_NAME}.git"
    git(clone, "remote", "set-url", "origin", github_url)
    git(clone, "config", f"url.{bare}.insteadOf", github_url)
    monkeypatch.setenv("GITHUB_API_URL", api(httpserver))
    return clone


def test_snapshot_reads_releases_for_the_configured_github_url(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clone = github_clone(tmp_path, httpserver, monkeypatch)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    serve_two_pages(httpserver)
    snap = take_snapshot([clone], charter_sha256=None)
    repo = snap["repos"][str(clone.resolve())]
    assert repo["remotes"]["origin"]["available"] is True  # reached through insteadOf
    assert repo["remotes"]["origin"]["url"].startswith("https://localhost:")
    releases = repo["releases"]
    assert releases["available"] is True and releases["github_repo"] == OWNER_NAME
    assert releases["github_repos"] == [OWNER_NAME]
    assert [(r["tag_name"], r["repo"]) for r in releases["releases"]] == [
        ("v1.0.0", OWNER_NAME), ("v1.1.0", OWNER_NAME), ("v1.1.0-rc.1", OWNER_NAME)]
    assert snapshot_complete(snap) == []


def test_two_github_repositories_are_both_read_origin_first(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clone = github_clone(tmp_path, httpserver, monkeypatch)
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    # A fork remote named "aaa" sorts first but origin's repository stays the primary one.
    git(clone, "remote", "add", "aaa", str(tmp_path / "work-remote.git"))
    git(clone, "remote", "set-url", "--push", "aaa", "git@localhost:someone/widgets-fork.git")
    serve_two_pages(httpserver)
    base = api(httpserver)
    httpserver.expect_request(releases_path("someone/widgets-fork")).respond_with_json(
        [gh_release(base, "someone/widgets-fork", 9, "v0.9.0", author="someone")])
    releases = take_snapshot([clone], charter_sha256=None)["repos"][str(clone.resolve())][
        "releases"]
    assert releases["github_repo"] == OWNER_NAME
    assert releases["github_repos"] == [OWNER_NAME, "someone/widgets-fork"]
    assert [(r["repo"], r["tag_name"]) for r in releases["releases"]] == [
        (OWNER_NAME, "v1.0.0"), (OWNER_NAME, "v1.1.0"), (OWNER_NAME, "v1.1.0-rc.1"),
        ("someone/widgets-fork", "v0.9.0")]


def test_begin_refuses_when_releases_cannot_be_read(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    clone = github_clone(tmp_path, httpserver, monkeypatch)
    empty = tmp_path / "no-gh"
    empty.mkdir()
    (empty / "git").symlink_to(git_binary())
    monkeypatch.setenv("PATH", str(empty))  # no token and no gh to ask
    run_dir = tmp_path / "run"
    assert audit_main(["begin", str(clone), "--run-dir", str(run_dir)]) == 1
    assert "releases: no GitHub token" in capsys.readouterr().err
    assert not (run_dir / BEFORE).exists()
    assert httpserver.log == []

    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    httpserver.expect_request(releases_path()).respond_with_json(
        {"message": "Bad credentials"}, status=401)
    assert audit_main(["begin", str(clone), "--run-dir", str(run_dir)]) == 1
    assert "GitHub refused the token" in capsys.readouterr().err
    assert not (run_dir / BEFORE).exists()


def test_local_and_file_remotes_make_releases_not_applicable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    git(clone, "remote", "add", "viafile", f"file://{bare}")
    monkeypatch.setenv("GITHUB_API_URL", "http://localhost:9/api/v3")
    snap = take_snapshot([clone], charter_sha256=None)
    releases = snap["repos"][str(clone.resolve())]["releases"]
    assert releases == {"available": True, "releases": [], "note": "no remote on a GitHub host",
                        "github_repo": None, "github_repos": []}
    assert json.loads(json.dumps(snap)) == snap


def git_binary() -> str:
    found = shutil.which("git")
    assert found is not None
    return found


def test_a_shorthand_that_reaches_github_through_insteadof_is_not_hidden(
        tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clone, bare = make_repo_with_remote(tmp_path)
    monkeypatch.setenv("GITHUB_API_URL", api(httpserver))
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    # Fetches go to the local bare repository; pushes would go to GitHub via pushInsteadOf.
    git(clone, "remote", "set-url", "origin", "gh:octo/widgets.git")
    git(clone, "config", f"url.{bare.parent}/.insteadOf", "gh:octo/")
    git(clone, "config", f"url.{tmp_path}/nowhere/.insteadOf", "gh:")  # shorter: loses
    git(clone, "config", "url.git@localhost:.pushInsteadOf", "gh:")
    (bare.parent / "widgets.git").symlink_to(bare)
    serve_two_pages(httpserver)
    repo = take_snapshot([clone], charter_sha256=None)["repos"][str(clone.resolve())]
    # Its pushes go to git@localhost:, which cannot be listed here: the remote is unavailable
    # (a push there could not be judged), its releases are read all the same.
    assert repo["remotes"]["origin"]["available"] is False
    assert "pushes) failed" in repo["remotes"]["origin"]["reason"]
    assert repo["remotes"]["origin"]["url"] == "gh:octo/widgets.git"
    assert repo["releases"]["available"] is True
    assert repo["releases"]["github_repo"] == OWNER_NAME
    assert len(repo["releases"]["releases"]) == 3


def test_a_release_repeated_across_pages_is_read_once(httpserver: HTTPServer) -> None:
    """GitHub pages releases by offset: one created while the pages are read pushes the last
    release of page 1 onto page 2, so it came twice, and closeout said "release changed: 1
    release(s) with this tag before, 2 after" (UNGRANTED) in an honest run."""
    api = httpserver.url_for("/api/v3").rstrip("/")
    path = "/api/v3/repos/octo/widgets/releases"
    page2 = f"{api}/repos/octo/widgets/releases?per_page=100&page=2"
    repeated = gh_release(api, "octo/widgets", 2, "v1.1.0")
    httpserver.expect_request(path, query_string={"per_page": "100"}).respond_with_json(
        [gh_release(api, "octo/widgets", 3, "v1.2.0"), repeated],
        headers={"Link": f'<{page2}>; rel="next", <{page2}>; rel="last"'})
    httpserver.expect_request(path, query_string={"per_page": "100", "page": "2"}) \
        .respond_with_json([repeated, gh_release(api, "octo/widgets", 1, "v1.0.0")])
    part = read_releases("octo/widgets", token="t", base_url=api, timeout=5)
    assert [(r["id"], r["tag_name"]) for r in part["releases"]] == [
        (1, "v1.0.0"), (2, "v1.1.0"), (3, "v1.2.0")]


@pytest.mark.parametrize("body", ["", "null", '{"items": []}', "{}"],
                         ids=["empty", "null", "items-object", "empty-object"])
def test_a_200_that_is_not_a_list_of_releases_is_unavailable_not_no_releases(
        httpserver: HTTPServer, body: str) -> None:
    """PyGithub reads an empty body, `null` or a search-shaped object as an empty page: a gateway
    answering 200 with nothing was "no releases", and a release the run made went unseen."""
    httpserver.expect_request(releases_path()).respond_with_data(
        body, content_type="application/json")
    part = read_releases(OWNER_NAME, token=TOKEN, base_url=api(httpserver), timeout=5)
    assert part["available"] is False
    assert "not a list" in part["reason"] and OWNER_NAME in part["reason"]


@pytest.mark.parametrize("status", [302, 303, 307, 308])
def test_a_redirect_is_not_read_as_no_releases_and_is_not_followed(
        httpserver: HTTPServer, status: int) -> None:
    """PyGithub follows only a 301 on its own host; any other redirect's empty body was read as
    an empty list of releases."""
    httpserver.expect_request(releases_path()).respond_with_data(
        "", status=status, headers={"Location": "http://evil.invalid/releases"})
    part = read_releases(OWNER_NAME, token=TOKEN, base_url=api(httpserver), timeout=5)
    assert part["available"] is False
    assert f"answered {status}" in part["reason"]
    assert len(httpserver.log) == 1


def test_a_link_header_that_loops_is_unavailable_at_once(httpserver: HTTPServer) -> None:
    """A `next` link back to a page already read was followed until the cap ran out (hundreds
    of requests a second against the rate limit), and the reason said GitHub was slow."""
    base = api(httpserver)
    page2 = f"{base}/repos/{OWNER_NAME}/releases?per_page=100&page=2"
    page1 = f"{base}/repos/{OWNER_NAME}/releases?per_page=100&page=1"
    httpserver.expect_request(releases_path(), query_string={"per_page": "100"}) \
        .respond_with_json([gh_release(base, OWNER_NAME, 2, "v2")],
                           headers={"Link": link_header([("next", page2)])})
    httpserver.expect_request(releases_path(), query_string={"per_page": "100", "page": "2"}) \
        .respond_with_json([gh_release(base, OWNER_NAME, 1, "v1")],
                           headers={"Link": link_header([("next", page2), ("first", page1)])})
    part = read_releases(OWNER_NAME, token=TOKEN, base_url=base, timeout=5)
    assert part["available"] is False
    assert "already read" in part["reason"]
    assert len(httpserver.log) == 2


def test_a_releases_page_that_leaves_the_api_is_not_followed(httpserver: HTTPServer) -> None:
    base = api(httpserver)
    httpserver.expect_request(releases_path()).respond_with_json(
        [gh_release(base, OWNER_NAME, 1, "v1")],
        headers={"Link": link_header([("next", "http://evil.invalid/api/v3/x?page=2")])})
    part = read_releases(OWNER_NAME, token=TOKEN, base_url=base, timeout=5)
    assert part["available"] is False and "a next page outside" in part["reason"]
    assert len(httpserver.log) == 1


@pytest.mark.parametrize("url", ["https://github.com/x/../octo/widgets.git",
                                 "https://github.com./octo/widgets.git",
                                 "git@github.com:octo/widgets/.git"],
                         ids=["dot-segments", "trailing-dot-host", "extra-segment"])
def test_a_github_url_whose_repository_cannot_be_named_makes_releases_unavailable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """Such a URL reaches GitHub (curl squashes `..`, DNS ignores a final dot), but only a
    two-part owner/name was taken for a GitHub remote: releases were "no remote on a GitHub
    host", so a release the run made was never looked for."""
    clone, bare = make_repo_with_remote(tmp_path)
    git(clone, "remote", "set-url", "origin", url)
    git(clone, "config", f"url.{bare}.insteadOf", url)
    snap = take_snapshot([clone], charter_sha256=None)
    releases = snap["repos"][str(clone.resolve())]["releases"]
    assert releases["available"] is False, releases
    assert "names no repository" in releases["reason"]


def test_a_page_that_drops_its_next_link_before_the_announced_last_is_unavailable(
        httpserver: HTTPServer) -> None:
    """Page 1 named page 3 as the last; page 2 came without a Link header, and the releases
    were taken as whole without page 3's."""
    base = api(httpserver)
    page2 = f"{base}/repos/{OWNER_NAME}/releases?per_page=100&page=2"
    page3 = f"{base}/repos/{OWNER_NAME}/releases?per_page=100&page=3"
    httpserver.expect_request(releases_path(), query_string={"per_page": "100"}) \
        .respond_with_json([gh_release(base, OWNER_NAME, 3, "v3")],
                           headers={"Link": link_header([("next", page2), ("last", page3)])})
    httpserver.expect_request(releases_path(), query_string={"per_page": "100", "page": "2"}) \
        .respond_with_json([gh_release(base, OWNER_NAME, 2, "v2")])
    httpserver.expect_request(releases_path(), query_string={"per_page": "100", "page": "3"}) \
        .respond_with_json([gh_release(base, OWNER_NAME, 1, "v1")])
    part = read_releases(OWNER_NAME, token=TOKEN, base_url=base, timeout=5)
    assert part["available"] is False
    assert "before the last page" in part["reason"]
