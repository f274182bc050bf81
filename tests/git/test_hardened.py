"""The hardened mode the audit reads history in: every option that neutralises a setting the run
could write is on git's command line."""

from __future__ import annotations


def test_hardened_reads_carry_every_neutralising_option() -> None:
    from jobs.git.hardened import HARDENED_CONFIG, hardened_argv
    argv = hardened_argv("log")
    assert "--no-replace-objects" in argv
    pairs = dict(HARDENED_CONFIG)
    for key, value in (("core.commitGraph", "false"), ("diff.ignoreSubmodules", "none"),
                       ("i18n.logOutputEncoding", "UTF-8"), ("log.showSignature", "false"),
                       ("trailer.separators", ":"), ("diff.relative", "false"),
                       ("core.hooksPath", "/dev/null")):
        assert pairs[key] == value
        assert f"{key}={value}" in argv
