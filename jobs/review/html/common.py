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
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def chips(counts: Counter[str] | dict[str, int], order: Iterable[str] = SEVERITY) -> str:
    return '<div class="chips">' + "".join(
        f'<span class="chip v-{v}">{counts[v]} {v}</span>' for v in order if counts.get(v)
    ) + "</div>"


def chip(verdict: str) -> str:
    return f'<span class="chip v-{esc(verdict)}">{esc(verdict)}</span>'


def sha(value: str | None, site: Site | None, *, what: str = "commit") -> str:
    if not value:
        return "–"
    text = f'<span class="sha">{esc(value[:12])}</span>'
    if site is None or set(value) == {"0"}:
        return f'<span title="{esc(value)}">{text}</span>'
    return f'<a href="{esc(site.commit(value))}" title="{esc(what)} {esc(value)}">{text}</a>'


def group_attr(group: Group) -> str:
    return f' data-repo="{esc(group.key)}"'


def repo_task(group: Group, task: str | None, title: str | None) -> str:
    """"app TASK-2 — its title", the repository's identity on hover."""
    label = task or "(repository)"
    if title:
        label += f" — {title}"
    return f'<span title="{esc(group.identity)}">{esc(group.name)}</span> {esc(label)}'


def name(repo: str) -> str:
    return repo.rstrip("/").rsplit("/", 1)[-1] or repo
