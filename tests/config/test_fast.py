"""The configuration file's fast reader must say exactly what PyYAML says, or step aside.

`read_simple` reads the common shapes of the loop-verify configuration without importing PyYAML
(issue 13 item 3: `list` and `--help` load only what they use). Whenever it answers, its data,
key lines and plain texts must be what `load_config` would have taken from PyYAML's SafeLoader;
checked on generated text built from the shapes and scalars that matter to YAML 1.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.config.fast import read_simple
from jobs.config.load import REPO_KEYS, TOP_KEYS, load_config
from jobs.config.yaml_keys import key_lines, plain_text

# Scalars YAML 1.1 reads as something other than text, or only just as text.
TRICKY = ["yes", "No", "ON", "off", "true", "FALSE", "null", "Null", "~", "", "0", "00", "07",
          "0730", "07:30", "7:30", "1_000", "0x1f", "0b10", "0o7", ".5", "1.5", "1e3", "1.0e+3",
          ".inf", "-.inf", ".NaN", "-1", "+1", "2026-11-30", "2026-11-30 07:30:00", "30m",
          "1.5h", "2d", "90s", "10", "30 m", "UTC", "Europe/London", "/tmp/x", "~/x", "~x",
          "./x", "a b", "a  b", "a#b", "a #b", "a: b", "a:b", "@x", "%x", "=", "<<", "-x",
          "'q'", "'it''s'", '"d"', '"a\\nb"', "[]", "[a]", "{}", "&a x", "*a", "!!str 1",
          "y", "n", "Y", "sqlite:///x.db", "x,y", "a - b", "a=b", "x~", "$HOME", "${X}/y",
          "{a}", "}x", "$", "$$", "a:{b}", "a: {b}", "${", "~/${X}", "16MiB", "1.5GB", "2KiB",
          "16MIB", "16mib", "10B", "1e3MB"]
# ... and some the fast reader takes, so that it answers often enough to be checked.
SIMPLE = ["UTC", "/tmp/x", "~/src/app", "30m", "10", "1.5", "'07:30'", '"a b"', "[]",
          "sqlite:///x.db", "a - b", "Europe/London", "'it''s'", "p:q", "~/a b/c",
          "$HOME/src", "${XDG_STATE_HOME}/lj", "sqlite:///~/l.db", "~/$X", "16MiB", "500KB"]


@st.composite
def config_text(draw: st.DrawFn) -> str:
    """Mostly the shapes the fast reader takes, each part now and then replaced by something
    that YAML reads differently or refuses."""

    def pick(usual: list[str], odd: list[str]) -> str:
        return draw(st.sampled_from(odd if draw(st.integers(0, 7)) == 0 else usual))

    def scalar() -> str:
        return draw(st.one_of(st.sampled_from(SIMPLE), st.sampled_from(TRICKY),
                              st.text(alphabet="ab1/~.:#' \"-_=@%${}", max_size=8)))

    keys = iter(draw(st.permutations(sorted(TOP_KEYS))))
    odd_keys = ["on", "yes", "x", "Repos", "timeout", "repos"]
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        key = next(keys, "x")
        shape = draw(st.sampled_from(["key"] * 4 + ["list"] * 3 + ["blank", "comment", "odd"]))
        comment = pick(["", "", " # c", "   # c"], ["#c", " #", "\t# c"])
        if shape == "key":
            lines.append(f"{pick([key], odd_keys)}:{pick([' ', '  '], ['', chr(9)])}"
                         f"{scalar()}{comment}")
        elif shape == "list":
            lines.append(f"{pick([key], odd_keys)}:{comment}")
            indent = draw(st.sampled_from(["", "  ", "    "]))
            for _ in range(draw(st.integers(0, 3))):
                item_indent = pick([indent], [indent + " ", "", " "])
                if draw(st.booleans()):
                    lines.append(f"{item_indent}- {scalar()}{comment}")
                    continue
                item_keys = iter(draw(st.permutations(sorted(REPO_KEYS))))
                first = pick([next(item_keys)], ["on", "x", "path"])
                lines.append(f"{item_indent}- {first}: {scalar()}{comment}")
                for _ in range(draw(st.integers(0, 2))):
                    more = pick([item_indent + "  "], [item_indent + "   ", item_indent + " "])
                    lines.append(f"{more}{pick([next(item_keys, 'x')], ['on', 'path'])}: "
                                 f"{scalar()}{comment}")
        elif shape == "blank":
            lines.append(draw(st.sampled_from(["", "  ", " \t"])))
        elif shape == "comment":
            lines.append(draw(st.sampled_from(["# x", "  # x", "#"])))
        else:
            lines.append(draw(st.sampled_from(["---", "...", "  more", "- x", "key", "\r",
                                               "a: \u00e9", "timeout: 5\r", "\ufeffx: 1"])))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


def typed(value: Any) -> Any:
    """The value with every scalar's type beside it (True == 1 and 1 == 1.0 in Python)."""
    if isinstance(value, dict):
        return {typed(k): typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def check(text: str) -> bool:
    """Assert `read_simple` agrees with PyYAML whenever it answers; say whether it did."""
    fast = read_simple(text, TOP_KEYS, REPO_KEYS)
    if fast is None:
        return False
    data, lines, plain = fast
    node = yaml.compose(text, Loader=yaml.SafeLoader)  # raises if the text is not valid YAML
    expected = yaml.safe_load(text)
    assert typed(data) == typed(expected if expected is not None else {}), text
    assert lines == key_lines(node), text
    for key in TOP_KEYS:
        assert plain.get(key) == plain_text(node, key), (text, key)
    return True


@pytest.mark.slow
@settings(max_examples=examples(1500), deadline=None)
@given(text=config_text())
def test_read_simple_agrees_with_pyyaml(text: str) -> None:
    check(text)


@pytest.mark.parametrize("text", [
    "",
    "# nothing yet\n",
    'state_dir: /tmp/s\ntimezone: UTC\n',
    'repos:\n  - path: ~/src/app\ntimezone: Europe/London\nschedule: "07:30"\n',
    "repos:\n  - ~/src/a\n  - path: ~/src/b\n    branch: trunk\n    timeout: 2h\n"
    "timeout: 30m   # per recipe\nkill_grace: 10\nmachine: 'lab-1'\n",
    "repos:\n- /a\n- /b\nledger: sqlite:///ledger.db\noutput_retention: 30d\nschedule: 730\n",
    "repos: []\nstate_dir: ~/Library/Application Support/loop-jobs\n",
])
def test_common_configurations_take_the_fast_path(text: str) -> None:
    assert check(text), text


@pytest.mark.parametrize("text", [
    "schedule: 07:30\n",           # sexagesimal 450: the schedule check needs the plain text
    "timeout: yes\n",              # a boolean
    "machine: null\n",             # null
    "timeout: 0x1f\n",             # hexadecimal
    "unknown: 1\n",                # PyYAML gives the unknown key its line
    "timeout: 5\ntimeout: 6\n",    # repeated key
    "state_dir: /a\n  /b\n",       # a plain scalar over two lines
    "repos:\n  - path: /a\n   branch: x\n",  # misaligned item key
    "timezone: \u00e9\n",          # non-ASCII
    "timezone: UTC\r\n",           # CRLF
])
def test_unusual_shapes_go_to_pyyaml(text: str) -> None:
    assert read_simple(text, TOP_KEYS, REPO_KEYS) is None


def test_load_config_reads_the_same_either_way(tmp_path: Path) -> None:
    """The fast path and PyYAML give the same Config (the fast one is forced off by a comment
    line that only PyYAML takes)."""
    for name in ("a", "b"):
        repo = tmp_path / name
        (repo / ".git").mkdir(parents=True)
    text = (f"repos:\n  - {tmp_path / 'a'}\n  - path: {tmp_path / 'b'}\n    timeout: 2h\n"
            f"timeout: 30m\nkill_grace: 10\nschedule: '06:15'\nstate_dir: {tmp_path / 's'}\n"
            "timezone: UTC\nmachine: lab\n")
    fast, slow = tmp_path / "fast.yaml", tmp_path / "slow.yaml"
    fast.write_text(text)
    slow.write_text("--- # a document marker: outside the fast subset\n" + text)
    assert read_simple(text, TOP_KEYS, REPO_KEYS) is not None
    assert read_simple(slow.read_text(), TOP_KEYS, REPO_KEYS) is None
    a, b = load_config(fast), load_config(slow)
    assert (a.repos, a.timeout, a.kill_grace, a.schedule, a.state_dir, a.timezone_name,
            a.machine) == (b.repos, b.timeout, b.kill_grace, b.schedule, b.state_dir,
                           b.timezone_name, b.machine)
