"""Numeric settings take a number within their bounds (``config.Setting.bounds``):
`marm config set` refuses another value by name with exit 2 and keeps the saved one; a
command given one from the environment refuses it naming where it came from; hooks and
recall, which must not fail on it, use the default."""

from __future__ import annotations

import json

import pytest

from marm import config
from tests.helpers import invoke_marm

NUMERIC = sorted(k for k, s in config.SETTINGS.items() if s.bounds is not None)


def test_every_setting_with_a_numeric_default_has_bounds_and_its_default_is_within_them():
    numeric_defaults = {k for k, s in config.SETTINGS.items() if s.default.replace(".", "", 1).isdigit()}
    assert numeric_defaults == set(NUMERIC) and len(NUMERIC) == 9
    for key in NUMERIC:
        spec = config.SETTINGS[key]
        assert spec.refusal(spec.default) is None


@pytest.mark.parametrize("key", NUMERIC)
def test_config_set_refuses_a_value_out_of_bounds_and_keeps_the_saved_one(marm_home, key):
    spec = config.SETTINGS[key]
    assert spec.bounds is not None
    low, high = spec.bounds
    good = str(int(high)) if spec.whole else str(high)
    assert invoke_marm("config", "set", key, good).code == 0
    for bad in ("lots", str(high * 2), str(low - 1), "nan", *(["2.5"] if spec.whole else [])):
        run = invoke_marm("config", "set", "--", key, bad)  # "--": "-1" is a value, not an option
        assert run.code == 2, (bad, run)
        assert key in run.err and "from" in run.err and repr(bad) in run.err, run.err
    got = json.loads(invoke_marm("config", "get", key, "--json").out)
    assert got["values"][key] == good and got["sources"][key] == "global", got


def test_a_command_refuses_an_environment_value_out_of_bounds_naming_its_source(marm_home):
    assert invoke_marm("log", "NOTE: an episode-free store").code == 0
    ok = invoke_marm("compact", "--dry-run", "--json", env={"MARM_COMPACT_OLDER_THAN_DAYS": "7"})
    assert ok.code == 0, ok
    run = invoke_marm("compact", "--dry-run", env={"MARM_COMPACT_OLDER_THAN_DAYS": "a week"})
    assert run.code == 2
    assert "compact.older_than_days" in run.err and "environment MARM_COMPACT_OLDER_THAN_DAYS" in run.err, run.err


def test_hooks_and_recall_use_the_default_for_a_value_out_of_bounds(ctx, monkeypatch):
    from marm.ops.memory import find, write_memory

    write_memory(ctx, "DECISION: the release script signs tags with the team key", project="p")
    monkeypatch.setitem(ctx.env, "MARM_INJECT_MAX_CHARS", "huge")
    monkeypatch.setitem(ctx.env, "MARM_INJECT_MIN_SCORE", "-3")
    assert ctx.number("inject.max_chars", lenient=True) == 1500
    assert ctx.number("inject.min_score", lenient=True) == 0.24
    monkeypatch.setenv("MARM_EPISODE_HALF_LIFE_DAYS", "forever")
    hits = find(ctx, "release script tags", "p", 5, "lexical").hits
    assert [h.memory.content for h in hits][:1] == ["DECISION: the release script signs tags with the team key"]
