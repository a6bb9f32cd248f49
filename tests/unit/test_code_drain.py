"""The drain's code sweep, the lease, the durable record of index runs, and links."""

from __future__ import annotations

import time

from marm.code import drain, links
from marm.code.index import index_repo
from marm.store import code_repos, events, flags, leases
from tests.code_repo import write_repo


def test_sweep_indexes_dirty_repositories_and_records_the_run(ctx, tmp_path):
    root = write_repo(tmp_path / "repo")
    other = write_repo(tmp_path / "clean")
    store = ctx.store()
    code_repos.mark_dirty(store, str(root), str(root))
    code_repos.mark_indexed(store, str(other), str(other), "2000-01-01T00:00:00.000000Z")
    summary = drain.sweep(ctx, time.monotonic() + 60)
    assert summary == {"indexed": 1, "left": 0}
    assert code_repos.get(store, str(root)).dirty_since is None
    assert code_repos.get(store, str(root)).last_indexed_at is not None
    runs = events.recent(store, action="code.index")
    assert [e.entity_id for e in runs] == [str(root)] and runs[0].detail["parsed"] == 12
    found = links.symbols_named(ctx.home, ["helper", "Greeter.greet", "no_such_symbol"])
    assert sorted(s.qname for s in found["helper"]) == ["pkg.other.helper", "pkg.util.helper"]
    assert [(s.path, s.line) for s in found["Greeter.greet"]] == [("web/src/lib.ts", 6)]
    assert "no_such_symbol" not in found
    assert drain.sweep(ctx, time.monotonic() + 60) == {"indexed": 0, "left": 0}


def test_sweep_honours_the_switch_and_the_lease(ctx, tmp_path):
    root = write_repo(tmp_path / "repo")
    store = ctx.store()
    code_repos.mark_dirty(store, str(root), str(root))
    flags.put(store, "auto_code_index", "off")
    assert drain.sweep(ctx, time.monotonic() + 60) == {"skipped": "switched off"}
    flags.put(store, "auto_code_index", "on")
    with leases.hold(store, ctx.home, "code-index", holder="test"):
        busy = drain.sweep(ctx, time.monotonic() + 60)
    assert busy["skipped"].startswith("another code index") and busy["left"] == 1
    assert code_repos.get(store, str(root)).dirty_since is not None
    assert drain.sweep(ctx, time.monotonic() + 60)["indexed"] == 1


def test_index_repo_is_refused_while_another_holds_the_lease(ctx, tmp_path):
    import pytest

    from marm.errors import Busy

    root = write_repo(tmp_path / "repo")
    with leases.hold(ctx.store(), ctx.home, "code-index", holder="someone"), pytest.raises(Busy):
        index_repo(ctx, root)
    assert index_repo(ctx, root).parsed == 12


def test_links_are_empty_without_a_code_graph(ctx):
    assert links.symbols_named(ctx.home, ["helper"]) == {}
