"""`~` and `$VAR`/`${VAR}` in the configuration's paths and `ledger:` (SPEC: expanded in every path
and in ledger:; an undefined variable is a configuration error naming file, line, key and value).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.config.expand import ExpandError, expand
from jobs.config.fast import read_simple
from jobs.config.load import REPO_KEYS, TOP_KEYS, load_config
from jobs.core.errors import ConfigError

ENV = {"HOME": "/home/owner", "XDG_STATE_HOME": "/xdg/state", "PW": "s3cret", "EMPTY": ""}


@pytest.mark.parametrize(("raw", "expanded"), [
    ("~", "/home/owner"),
    ("~/src/app", "/home/owner/src/app"),
    ("$HOME/src", "/home/owner/src"),
    ("${HOME}/src", "/home/owner/src"),
    ("${XDG_STATE_HOME}/loop-jobs", "/xdg/state/loop-jobs"),
    ("$XDG_STATE_HOME/loop-jobs", "/xdg/state/loop-jobs"),
    ("/a/${EMPTY}b", "/a/b"),
    ("/cost/$$5", "/cost/$5"),          # `$$` is one literal `$`
    ("/a/~/b", "/a/~/b"),               # only a leading `~` is the home folder
    ("/plain/path", "/plain/path"),
    ("$HOME$HOME", "/home/owner/home/owner"),
])
def test_expand(raw: str, expanded: str) -> None:
    assert expand(raw, ENV) == expanded


@pytest.mark.parametrize(("raw", "problem"), [
    ("$NOT_SET/x", "undefined variable $NOT_SET"),
    ("${NOT_SET}/x", "undefined variable ${NOT_SET}"),
    ("${HOME", "unclosed ${"),
    ("${}", "empty ${}"),
    ("$/x", "a `$` must start $NAME, ${NAME} or $$"),
    ("a$", "a `$` must start $NAME, ${NAME} or $$"),
    ("~no-such-user-here/x", "cannot expand '~no-such-user-here'"),
])
def test_expand_refuses(raw: str, problem: str) -> None:
    with pytest.raises(ExpandError, match=problem.replace("$", r"\$").replace("{", r"\{")
                       .replace("}", r"\}")):
        expand(raw, ENV)


def _repo(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path


def test_paths_and_the_ledger_are_expanded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    app = _repo(home / "src" / "app")
    other = _repo(tmp_path / "xdg" / "other")
    cfg = tmp_path / "config.yaml"
    cfg.write_text("repos:\n  - path: ~/src/app\n  - ${WORK}/other\n"
                   "state_dir: $XDG_STATE_HOME/loop-jobs\n"
                   "log_file: ${HOME}/logs/loop-jobs.jsonl\n"
                   "ledger: sqlite:///~/ledgers/ledger.db\n")
    env = {"HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state"),
           "WORK": str(tmp_path / "xdg")}
    config = load_config(cfg, env=env)
    assert [r.path for r in config.repos] == [app.resolve(), other.resolve()]
    assert config.state_dir == tmp_path / "state" / "loop-jobs"
    assert config.log_file == home / "logs" / "loop-jobs.jsonl"
    assert config.ledger == f"sqlite:///{home}/ledgers/ledger.db"
    # Nothing named `~` or `$HOME` appears beside the configuration.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "home", "xdg"]


def test_a_variable_in_a_postgresql_ledger_url(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("ledger: postgresql+psycopg://loop:${PW}@db.example/ledger\n")
    assert load_config(cfg, env=ENV).ledger == "postgresql+psycopg://loop:s3cret@db.example/ledger"


@pytest.mark.parametrize(("text", "key", "line"), [
    ("timeout: 30m\nstate_dir: $NOPE_NOT_SET/loop-jobs\n", "state_dir", 2),
    ("log_file: '${NOPE_NOT_SET}/x.jsonl'\n", "log_file", 1),
    ("ledger: sqlite:///${NOPE_NOT_SET}/ledger.db\n", "ledger", 1),
    ("repos:\n  - path: $NOPE_NOT_SET/app\n", "repos[0].path", 2),
    ("repos:\n  - ${NOPE_NOT_SET}/app\n", "repos[0].path", 2),
    ("state_dir: $\n", "state_dir", 1),
])
def test_an_undefined_variable_names_file_line_key_and_value(tmp_path: Path, text: str,
                                                             key: str, line: int) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(cfg, env=ENV)
    assert info.value.key == key
    assert info.value.exit_code == 2
    message = str(info.value)
    assert message.startswith(f"{cfg}:{line}: {key}: "), message
    assert "(got '" in message and ("NOPE_NOT_SET" in message or "`$`" in message)


# --- the fast reader and PyYAML agree on what the expanded configuration is ------------------

_PIECES = ["~", "~/", "/", "$HOME", "${HOME}", "$XDG_STATE_HOME", "${XDG_STATE_HOME}", "$NOPE",
           "${NOPE}", "$$", "$", "${", "}", "{", "a", "b/c", "-", ".", "x_y", ":", " "]


@st.composite
def _values(draw: st.DrawFn) -> str:
    text = "".join(draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5)))
    quote = draw(st.sampled_from(["", "", "'", '"']))
    return f"{quote}{text}{quote}"


def _outcome(path: Path) -> object:
    try:
        c = load_config(path, env=ENV)
    except ConfigError as exc:
        return ("error", exc.key, str(exc).split(f": {exc.key}: ", 1)[1])
    return (c.state_dir, c.log_file, c.ledger)


@settings(max_examples=examples(400), deadline=None)
@given(state=_values(), log=_values(), ledger=_values())
def test_the_fast_reader_and_pyyaml_expand_alike(tmp_path_factory: pytest.TempPathFactory,
                                                 state: str, log: str, ledger: str) -> None:
    folder = tmp_path_factory.mktemp("cfg")
    bare = ledger.strip("'\"")
    text = f"state_dir: {state}\nlog_file: {log}\nledger: sqlite:///{bare}\n"
    fast, slow = folder / "fast.yaml", folder / "slow.yaml"
    fast.write_text(text)
    slow.write_text("--- # a document marker: outside the fast subset\n" + text)
    if read_simple(text, TOP_KEYS, REPO_KEYS) is None:
        return  # PyYAML reads both (or neither): nothing to compare
    a, b = _outcome(fast), _outcome(slow)
    assert a == b, text


def test_common_expanded_values_take_the_fast_path() -> None:
    text = ("repos:\n  - path: ~/src/app\n  - $HOME/src/b\nstate_dir: ${XDG_STATE_HOME}/lj\n"
            "ledger: sqlite:///~/ledger.db\n")
    assert read_simple(text, TOP_KEYS, REPO_KEYS) is not None
