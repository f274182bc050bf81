"""What every part of the HTML page shares: escaping, times, chips, commit links."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime, tzinfo
from html import escape

from jobs.review.links import Site
from jobs.review.model import SEVERITY, Group
from jobs.review.visible import visible


def esc(text: object) -> str:
    """Text from tasks, output, commits or the ledger as HTML text: markup escaped (quotes
    too), control characters and bidirectional overrides shown as escapes."""
    return escape(visible(str(text), block=True), quote=True)


def when(moment: datetime, tz: tzinfo) -> str:
    """A moment in the configured zone, to the minute: digits only, safe as HTML as it is."""
    t = moment.astimezone(tz)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d} {t.hour:02d}:{t.minute:02d}"


def chips(counts: Counter[str] | dict[str, int], order: Iterable[str] = SEVERITY) -> str:
    return '<div class="chips">' + "".join(
        f'<span class="chip v-{v}">{counts[v]} {v}</span>' for v in order if counts.get(v)
    ) + "</div>"


def chip(verdict: str) -> str:
    return f'<span class="chip v-{esc(verdict)}">{esc(verdict)}</span>'


def sha(value: str | None, site: Site | None, *, what: str = "commit", title: bool = True) -> str:
    """A commit: linked to its page when the repository has one, its full sha on hover (which a
    long list spares: the link holds it)."""
    if not value:
        return "–"
    text = f'<span class="sha">{esc(value[:12])}</span>'
    if site is None or set(value) == {"0"}:
        return f'<span title="{esc(value)}">{text}</span>'
    hover = f' title="{esc(what)} {esc(value)}"' if title else ""
    return f'<a href="{esc(site.commit(value))}"{hover}>{text}</a>'


def group_attr(group: Group) -> str:
    return f' data-repo="{esc(group.key)}"'


def repo_task(group: Group, task: str | None, title: str | None) -> str:
    """"app TASK-2 — its title", the repository's identity on hover. Each is isolated
    (`<bdi>`): a name or title in a right-to-left script would otherwise take the counts and
    words after it into its run and show them on its other side."""
    label = task or "(repository)"
    if title:
        label += f" — {title}"
    return f'<bdi title="{esc(group.identity)}">{esc(group.name)}</bdi> <bdi>{esc(label)}</bdi>'


def name(repo: str) -> str:
    return repo.rstrip("/").rsplit("/", 1)[-1] or repo


def folded_list(summary: str, rows: Iterable[str]) -> str:
    """Rows kept one line each under a closed `<details>`: what a page lists after its detailed
    part (older failures, more audit runs, the timeline's last rows)."""
    return (f"<details><summary>{summary}</summary>"
            f'<div class="scroll"><table class="list">{"".join(rows)}</table></div></details>')
