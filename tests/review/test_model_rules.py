"""The review's rules on plain data: new or still failing (over the whole history, a pass in
between resets, days counted in the configured zone), one group per repository identity, the
days without a run, the reasons folded by kind and the counts by verdict."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from jobs.ledger.model import Run
from jobs.review.identity import Identities, RepoChoice, choice_matches, group_names
from jobs.review.links import Site
from jobs.review.model import Edges, OutputView, build_review, timeline_columns
from jobs.review.mornings import NoRun, RunEntry, RunsView, build_runs
from jobs.review.query import AttemptRow, LedgerData, PassRow
from jobs.review.streaks import standings

UTC_ZONE = ZoneInfo("UTC")
BERLIN = ZoneInfo("Europe/Berlin")
T0 = datetime(2026, 11, 20, 6, 30, tzinfo=UTC)


def same(_machine: str | None, repo: str) -> str:
    return {"/a/app": "github.com/acme/app", "/b/app-2": "github.com/acme/app"}.get(repo, repo)


def row(day: int, verdict: str, *, rid: int, repo: str = "/a/app", task: str = "TASK-1",
        label: str = "2026-11-01", hour: int = 6) -> tuple[str, int, str | None, str,
                                                          str | None, str | None, str]:
    started = (T0 + timedelta(days=day)).replace(hour=hour, tzinfo=None)
    return (started.isoformat(sep=" "), rid, "mac", repo, task, label, verdict)


# -- new or still failing ----------------------------------------------------------------------

def test_a_first_failure_is_new_and_the_next_ones_still_failing_since_it() -> None:
    rows = [row(0, "pass", rid=1), row(1, "fail", rid=2), row(2, "timeout", rid=3),
            row(3, "fail", rid=4)]
    got = standings(rows, same, UTC_ZONE)
    assert got[2].new and got[2].words(UTC_ZONE) == "new"
    assert not got[4].new
    assert got[4].words(UTC_ZONE) == "still failing since 2026-11-21 (3 mornings)"
    assert got[3].words(UTC_ZONE) == "still failing since 2026-11-21 (2 mornings)"


def test_a_pass_in_between_makes_the_next_failure_new() -> None:
    rows = [row(0, "fail", rid=1), row(1, "fail", rid=2), row(2, "pass", rid=3),
            row(3, "fail", rid=4), row(4, "drift", rid=5)]
    got = standings(rows, same, UTC_ZONE)
    assert not got[2].new
    assert got[4].new
    assert got[5].words(UTC_ZONE) == "still failing since 2026-11-23 (2 mornings)"


def test_other_verdicts_neither_break_nor_extend_a_streak() -> None:
    rows = [row(0, "fail", rid=1), row(1, "skipped", rid=2), row(2, "error", rid=3),
            row(3, "fail", rid=4)]
    got = standings(rows, same, UTC_ZONE)
    assert set(got) == {1, 4}
    assert got[4].words(UTC_ZONE) == "still failing since 2026-11-20 (2 mornings)"


def test_another_label_or_task_or_repository_is_its_own_streak() -> None:
    rows = [row(0, "fail", rid=1), row(1, "fail", rid=2, label="2026-11-15"),
            row(1, "fail", rid=3, task="TASK-2"), row(1, "fail", rid=4, repo="/c/lib")]
    got = standings(rows, same, UTC_ZONE)
    assert all(got[i].new for i in (1, 2, 3, 4))


def test_clones_of_one_repository_share_a_streak() -> None:
    # Failed on one machine's clone, then on another's: the same due verification.
    rows = [row(0, "fail", rid=1, repo="/a/app"), row(1, "fail", rid=2, repo="/b/app-2")]
    got = standings(rows, same, UTC_ZONE)
    assert got[2].words(UTC_ZONE) == "still failing since 2026-11-20 (2 mornings)"
    # ...and a pass on either clone ends it.
    rows.insert(1, row(0, "pass", rid=3, repo="/b/app-2", hour=9))
    assert standings(rows, same, UTC_ZONE)[2].new


def test_mornings_are_days_in_the_configured_zone() -> None:
    # 23:30 and 00:30 UTC the next day are two days in UTC, and one in Berlin (UTC+1 in
    # November: 00:30 and 01:30 on the 21st).
    first = ("2026-11-20 23:30:00.000000", 1, "mac", "/a/app", "TASK-1", "2026-11-01", "fail")
    second = ("2026-11-21 00:30:00", 2, "mac", "/a/app", "TASK-1", "2026-11-01", "fail")
    assert standings([first, second], same, UTC_ZONE)[2].mornings == 2
    berlin = standings([first, second], same, BERLIN)[2]
    assert berlin.mornings == 1
    assert berlin.words(BERLIN) == "still failing since 2026-11-21 (1 morning)"


# -- one group per repository ------------------------------------------------------------------

def test_identities_from_claims_then_this_machines_clones_then_the_path() -> None:
    claimed = {("mac", "/Users/me/app"): "github.com/acme/app",
               ("ci", "/srv/app"): "github.com/acme/app",
               ("ci", "/srv/moved"): "github.com/acme/moved"}
    asked: list[str] = []

    def local(repo: str) -> str | None:
        asked.append(repo)
        return "github.com/acme/lib" if repo == "/home/me/lib" else None

    identity = Identities(claimed, "laptop", local)
    assert identity("mac", "/Users/me/app") == identity("ci", "/srv/app") == "github.com/acme/app"
    # A row from before machines were recorded: its path's only claimed identity.
    assert identity(None, "/srv/moved") == "github.com/acme/moved"
    # This machine's clone that never claimed: asked of the clone itself, once.
    assert identity("laptop", "/home/me/lib") == identity("laptop", "/home/me/lib")
    assert asked == ["/home/me/lib"]
    # Another machine's unclaimed clone, or a clone git cannot name: its path.
    assert identity("ci", "/home/me/lib") == "/home/me/lib"
    assert identity("laptop", "/tmp/gone") == "/tmp/gone"


def test_identities_an_earlier_version_spelled_otherwise_are_one_repository() -> None:
    # Before 2026-12 GitHub's case was kept and ssh.github.com:443 was a host of its own.
    claimed = {("mac", "/Users/me/app"): "github.com/Acme/App",
               ("mac", "/Users/me/app-2"): "ssh.github.com:443/acme/app",
               ("ci", "/srv/app"): "github.com/acme/app"}
    identity = Identities(claimed, "laptop", lambda _repo: None)
    assert identity("mac", "/Users/me/app") == identity("mac", "/Users/me/app-2") \
        == identity("ci", "/srv/app") == "github.com/acme/app"
    assert identity(None, "/Users/me/app") == "github.com/acme/app"


def test_repo_choice_by_path_or_by_name() -> None:
    clones = ["/Users/me/src/app", "/srv/ci/application"]
    assert choice_matches(RepoChoice(name="app"), "github.com/acme/app", clones)
    assert choice_matches(RepoChoice(name="application"), "github.com/acme/app", clones)
    assert not choice_matches(RepoChoice(name="ap"), "github.com/acme/app", clones)
    assert choice_matches(RepoChoice(path="/srv/ci/application"), "github.com/acme/app", clones)
    assert not choice_matches(RepoChoice(path="/srv/ci"), "github.com/acme/app", clones)
    # A GitHub identity is in lower case now: the name as GitHub shows it still names it.
    assert choice_matches(RepoChoice(name="WebApp"), "github.com/acme/webapp", [])
    assert not choice_matches(RepoChoice(name="WebApp"), "git.example.com/acme/webapp", [])


def test_group_names_tell_equal_last_parts_apart() -> None:
    names = group_names(["github.com/acme/app", "github.com/other/app", "github.com/acme/lib"])
    assert names == {"github.com/acme/app": "acme/app", "github.com/other/app": "other/app",
                     "github.com/acme/lib": "lib"}


# -- the review as a whole: groups, reasons, counts -------------------------------------------

def attempt(rid: int, verdict: str, *, repo: str, machine: str, task: str | None,
            reason: str | None = None, day: int = 0, summary: str | None = None) -> AttemptRow:
    return AttemptRow(rid, T0 + timedelta(days=day, minutes=rid), repo, task,
                      f"backlog/tasks/{task}.md" if task else None, "2026-11-01",
                      "verify-x", verdict, reason, 1 if verdict != "pass" else 0, 2.0, None,
                      None, "none", machine, summary)


def edges() -> Edges:
    return Edges(identity=same, site_of=lambda _repo: None,
                 identity_site=lambda i: Site(f"https://{i}") if i.startswith("github") else None,
                 audit_site_of=lambda _run, _finding: None,
                 read_output=lambda _row: OutputView(missing="not here"),
                 title_of=lambda _repo, _path: None)


def test_one_group_per_identity_with_reasons_folded_and_counted_by_kind() -> None:
    since, until = T0 - timedelta(days=2), T0 + timedelta(days=2)
    failing = [attempt(5, "fail", repo="/b/app-2", machine="ci", task="TASK-1", day=1,
                       summary="verify-failed ...: `just verify-x` timed out after 2s"),
               attempt(4, "fail", repo="/a/app", machine="mac", task="TASK-1")]
    unchecked = [attempt(13, "refused", repo="/a/app", machine="mac", task="TASK-9", day=1,
                         reason="malformed verify-cmd 'make check'"),
                 attempt(12, "refused", repo="/a/app", machine="mac", task="TASK-9",
                         reason="malformed verify-cmd 'make check'"),
                 attempt(11, "skipped", repo="/b/app-2", machine="ci", task=None,
                         reason="work tree not clean: notes.txt"),
                 attempt(10, "locked", repo="/c/lib", machine="ci", task=None,
                         reason="another loop-verify holds /c/lib/.git/loop-verify.lock"),
                 attempt(9, "interrupted", repo="/c/lib", machine="ci", task="TASK-3",
                         reason="not run: loop-verify was told to stop"),
                 attempt(8, "error", repo="/c/lib", machine="ci", task="TASK-4", reason=None)]
    passes = [PassRow(T0 + timedelta(hours=h), "mac", "/a/app", "TASK-2", f"{h:040x}")
              for h in range(7)]
    marks = [(r.started_at.replace(tzinfo=None).isoformat(sep=" "), r.machine, r.repo,
              r.task_id, r.verdict, None) for r in [*failing, *unchecked]]
    marks += [(p.started_at.replace(tzinfo=None).isoformat(sep=" "), p.machine, p.repo,
               p.task_id, "pass", p.commit_sha) for p in passes]
    history = sorted((r.started_at.replace(tzinfo=None).isoformat(sep=" "), r.id, r.machine,
                      r.repo, r.task_id, r.label_date, r.verdict) for r in failing)
    data = LedgerData(marks, failing, 2, unchecked, 6, history, [], [], {}, [], True)
    review = build_review(data, since=since, until=until, now=until, zone=UTC_ZONE, filters=[],
                          edges=edges())
    # Two clones, one repository: one group; lib is the other.
    assert [(g.name, g.identity) for g in review.groups] == [
        ("app", "github.com/acme/app"), ("lib", "/c/lib")]
    app = review.groups[0]
    assert app.clones == {("mac", "/a/app"), ("ci", "/b/app-2")}
    assert app.site == Site("https://github.com/acme/app")
    rows = [(r.group.name, r.task) for r in review.timeline.rows]
    assert rows == [("app", None), ("app", "TASK-1"), ("app", "TASK-2"), ("app", "TASK-9"),
                    ("lib", None), ("lib", "TASK-3"), ("lib", "TASK-4")]
    # The newer failure (on the other clone) is still failing since the first; its summary
    # is the task's own, the older one's is rebuilt from the ledger.
    newer, older = review.failures
    assert newer.standing.words(UTC_ZONE) == "still failing since 2026-11-20 (2 mornings)"
    assert older.standing.new
    assert newer.summary_recorded and newer.summary is not None and "after 2s" in newer.summary
    assert not older.summary_recorded and older.summary == "`just verify-x` exited 1 after 2.0s"
    # Each reason once per task and verdict, with how often, when, and where.
    folded = [(u.group.name, u.task, u.verdict, u.reason, u.count) for u in review.unchecked]
    assert folded == [
        ("app", "TASK-9", "refused", "malformed verify-cmd 'make check'", 2),
        ("app", None, "skipped", "work tree not clean: notes.txt", 1),
        ("lib", None, "locked", "another loop-verify holds /c/lib/.git/loop-verify.lock", 1),
        ("lib", "TASK-3", "interrupted", "not run: loop-verify was told to stop", 1),
        ("lib", "TASK-4", "error", None, 1)]
    refused = review.unchecked[0]
    assert (refused.first, refused.last) == (unchecked[1].started_at, unchecked[0].started_at)
    assert review.unchecked[1].machines == {"ci"}
    # Counted by kind: every verdict its own, nothing "other".
    assert dict(review.timeline.totals) == {"fail": 2, "refused": 2, "skipped": 1, "locked": 1,
                                            "interrupted": 1, "error": 1, "pass": 7}
    # Passes: per task, the newest five listed, the count of all.
    (task_passes,) = review.passes
    assert (task_passes.task, task_passes.count, len(task_passes.newest)) == ("TASK-2", 7, 5)
    assert [p.commit_sha for p in task_passes.newest] == [f"{h:040x}" for h in (6, 5, 4, 3, 2)]
    assert task_passes.newest[0].started_at == T0 + timedelta(hours=6)
    assert "older attempt(s) not checked" not in " ".join(review.unshown)
    assert any("rebuilt from the ledger" in line for line in review.unshown)


# -- did it run ---------------------------------------------------------------------------------

def run(day: int, hour: int, machine: str = "mac", exit_code: int | None = 0,
        ended: bool = True) -> Run:
    start = datetime(2026, 11, day, hour, tzinfo=UTC)
    return Run(f"r{day}-{hour}-{machine}", machine, "launchd", start,
               ended_at=start + timedelta(minutes=2) if ended else None, exit_code=exit_code,
               counts={"pass": 1})


def runs_view(recorded: list[Run], pieced: list[Run], *, since: datetime, until: datetime,
              now: datetime, zone: ZoneInfo = UTC_ZONE) -> RunsView:
    columns, step, _starts = timeline_columns(since, until, zone)
    return build_runs(recorded, pieced, since=since, until=until, now=now, zone=zone,
                      columns=columns, step=step)


def test_every_day_without_a_run_is_marked_in_list_and_grid() -> None:
    since = datetime(2026, 11, 1, tzinfo=UTC)
    until = datetime(2026, 11, 8, 8, tzinfo=UTC)
    recorded = [run(1, 7), run(2, 7, exit_code=1), run(2, 9, machine="ci", exit_code=3),
                run(5, 7, ended=False, exit_code=None)]
    view = runs_view(recorded, [], since=since, until=until, now=until)
    gaps = [e for e in view.entries if isinstance(e, NoRun)]
    assert [(g.first, g.last, g.so_far) for g in gaps] == [
        (date(2026, 11, 6), date(2026, 11, 8), True), (date(2026, 11, 3), date(2026, 11, 4),
                                                       False)]
    assert gaps[0].words() == "no run 2026-11-06 – 2026-11-08 (3 days) (yet)"
    assert view.no_run_days == 5 and view.total == 4
    # Newest first: the gap after the 5th, the unfinished run, the gap, the 2nd's runs (9:00
    # before 7:00), the 1st's.
    order = [e.words() if isinstance(e, NoRun) else (e.run.run_id, e.state)
             for e in view.entries]
    assert order == ["no run 2026-11-06 – 2026-11-08 (3 days) (yet)",
                     ("r5-7-mac", "unfinished"), "no run 2026-11-03 – 2026-11-04 (2 days)",
                     ("r2-9-ci", "unchecked"), ("r2-7-mac", "failed"), ("r1-7-mac", "ok")]
    cells = {c.first.day: (c.state, c.no_run, c.title) for c in view.cells}
    assert cells[2] == ("failed", 0, "2026-11-02: 2 run(s); worst: something failed")
    assert cells[3] == (None, 1, "2026-11-03: no run")
    assert cells[5][0] == "unfinished"
    assert view.states == {"ok": 1, "failed": 1, "unchecked": 1, "unfinished": 1}
    assert view.machines == ["ci", "mac"]


def test_days_to_come_are_not_missing_and_days_are_the_zones() -> None:
    since = datetime(2026, 11, 1, tzinfo=BERLIN)
    until = datetime(2026, 11, 11, tzinfo=BERLIN)
    now = datetime(2026, 11, 4, 5, tzinfo=UTC)
    # 23:30 UTC on the 1st is the 2nd in Berlin: the 1st had no run there.
    late = Run("late", "mac", "serve", datetime(2026, 11, 1, 23, 30, tzinfo=UTC),
               ended_at=datetime(2026, 11, 1, 23, 31, tzinfo=UTC), exit_code=0)
    view = runs_view([late], [], since=since, until=until, now=now, zone=BERLIN)
    gaps = [(g.first.day, g.last.day, g.so_far) for g in view.entries if isinstance(g, NoRun)]
    # The 3rd and the 4th (today, not over) had none; the 5th to the 10th are still to come.
    assert gaps == [(3, 4, True), (1, 1, False)]
    assert view.no_run_days == 3


def test_runs_from_before_the_runs_table_are_told_by_their_attempts() -> None:
    pieced = Run("old", "mac", "", datetime(2026, 11, 1, 7, tzinfo=UTC),
                 ended_at=datetime(2026, 11, 1, 7, 5, tzinfo=UTC),
                 counts={"pass": 3, "skipped": 1})
    view = runs_view([], [pieced], since=datetime(2026, 11, 1, tzinfo=UTC),
                     until=datetime(2026, 11, 2, tzinfo=UTC),
                     now=datetime(2026, 11, 2, tzinfo=UTC))
    (entry,) = view.entries
    assert isinstance(entry, RunEntry) and entry.pieced and entry.state == "unchecked"
    assert entry.duration == 300
    assert view.no_run_days == 0


def test_a_long_window_counts_the_days_without_listing_millions() -> None:
    since = datetime(2, 1, 1, tzinfo=UTC)
    until = datetime(2026, 11, 3, tzinfo=UTC)
    view = runs_view([run(1, 7)], [], since=since, until=until, now=until)
    assert len(view.cells) <= 101
    assert [e.words() for e in view.entries if isinstance(e, NoRun)] == [
        "no run 2026-11-02",  # the window ended with the day: it is over
        f"no run 0002-01-01 – 2026-10-31 ({(date(2026, 10, 31) - date(2, 1, 1)).days + 1} days)"]
    assert view.cells[0].title.endswith("days without a run")


def test_the_summary_says_new_and_still_failing_count_only_the_failures_listed() -> None:
    # Beyond the listed failures the Markdown summary said "3 failing attempt(s): 1 new, 0
    # still failing": the two not listed were in neither count, and nothing said so (the HTML
    # page says "(of those listed)").
    from jobs.review.html.page import render_html
    from jobs.review.markdown import render_markdown

    since, until = T0 - timedelta(days=2), T0 + timedelta(days=2)
    failing = [attempt(3, "fail", repo="/a/app", machine="mac", task="TASK-1", day=1)]
    marks = [((T0 + timedelta(days=d)).replace(tzinfo=None).isoformat(sep=" "), "mac", "/a/app",
              "TASK-1", "fail", None) for d in (-1, 0, 1)]
    data = LedgerData(marks, failing, 3, [], 0, [], [], [], {}, [], True)
    review = build_review(data, since=since, until=until, now=until, zone=UTC_ZONE, filters=[],
                          edges=edges())
    text = render_markdown(review, until)
    assert "3 failing attempt(s): 1 new, 0 still failing (of those listed)" in text
    assert "3 failing attempt(s): 1 new, 0 still failing (of those listed)" in render_html(
        review, until)
