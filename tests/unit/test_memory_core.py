"""The write path and recall lanes, in process, on populated stores."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marm import recall as lanes
from marm.errors import BadInput, NotFound
from marm.ops import memory as memory_ops
from marm.ops import notebook as notebook_ops
from marm.store import events, logs, outbox
from marm.store.memories import Filter
from tests.helpers import git_init


def ids(result) -> list[int]:
    return [r.id for r in result.results]


def test_log_form_writes_log_row_memory_tasks_and_events_together(ctx):
    result = memory_ops.log(ctx, "2026-11-30-auth-Switched sessions to signed JWT cookies")
    store = ctx.store()
    entry = logs.get(store, result.log_id)
    assert (entry.entry_date, entry.topic, entry.summary) == (
        "2026-11-30", "auth", "Switched sessions to signed JWT cookies")
    assert entry.memory_id == result.id
    assert outbox.counts(store) == {"embed": {"pending": 1, "parked": 0},
                                    "concepts": {"pending": 1, "parked": 0}}
    actions = [e.action for e in events.recent(store)]
    assert "memory.create" in actions and "log.create" in actions


def test_free_text_is_a_plain_memory_with_a_guessed_kind(ctx):
    decision = memory_ops.log(ctx, "We decided to drop redis and use SQLite WAL")
    fix = memory_ops.log(ctx, "Fixed the flaky upload test: the root cause was a shared tmp dir")
    note = memory_ops.log(ctx, "The staging box has 16 GB of RAM")
    assert (decision.kind, fix.kind, note.kind) == ("decision", "fix", "note")
    assert decision.log_id is None


def test_content_is_stored_raw_never_html_escaped(ctx):
    text = 'if (a < b && c) { return "<b>&amp;</b>"; }'
    stored = memory_ops.log(ctx, text)
    assert memory_ops.show(ctx, stored.id).memory.content == text


def test_secrets_redacted_and_private_spans_dropped_before_storing(ctx):
    result = memory_ops.log(
        ctx, "deploy key AKIAABCDEFGHIJKLMNOP, password=hunter2hunter2 <private>my home address</private> ok")
    assert result.redacted == {"aws_access_key": 1, "password": 1}
    assert result.private_spans_dropped == 1
    stored = ctx.store().conn.execute("SELECT content FROM memories").fetchone()[0]
    assert "AKIA" not in stored and "hunter2" not in stored and "home address" not in stored
    assert "[REDACTED:aws_access_key]" in stored and stored.endswith("ok")


def test_same_text_twice_is_stored_once(ctx):
    first = memory_ops.log(ctx, "Use ruff for linting")
    second = memory_ops.log(ctx, "  Use ruff   for linting ")
    assert first.created and not second.created and first.id == second.id


@pytest.mark.parametrize("bad, message", [
    ("a\x00b", "NUL byte"),
    ("x" * 100_001, "limit is 100,000 characters"),
    ("   ", "empty"),
    ("<private>only secret</private>", "nothing is left"),
])
def test_bad_text_is_refused_and_nothing_is_written(ctx, bad, message):
    memory_ops.log(ctx, "a memory that exists already")
    with pytest.raises(BadInput, match=message):
        memory_ops.log(ctx, bad)
    assert ctx.store().conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1


EXACT_CASES = [
    "if (a < b && c)",
    "MAX_RETRIES",
    "src/store/write_queue.py",
    "--dry-run",
    "store.open_connection",
    "open_store(",
    '"connection refused"',
]


@pytest.mark.parametrize("query", EXACT_CASES)
def test_exact_lane_returns_the_literal_match_first_and_no_near_miss(ctx, query):
    literal = query.strip('"')
    target = memory_ops.log(ctx, f"note: {literal} is what we grep for").id
    near = {
        "if (a < b && c)": "if (a <= b && c) is different",
        "MAX_RETRIES": "max retries is set in MAX_RETRY",
        "src/store/write_queue.py": "src/store/write-queue.py was renamed",
        "--dry-run": "a dry run of the --dry flag",
        "store.open_connection": "store open_connection without the dot",
        "open_store(": "open_store is called without parens",
        '"connection refused"': "the connection was refused",
    }[query]
    near_id = memory_ops.log(ctx, near).id
    result = memory_ops.recall(ctx, query)
    assert result.mode == "exact"
    assert ids(result)[0] == target
    assert near_id not in ids(result)
    assert all(literal in r.content for r in result.results)


def test_exact_lane_answers_empty_rather_than_a_near_miss(ctx):
    memory_ops.log(ctx, "if (a <= b && c) is close but not the same")
    assert ids(memory_ops.recall(ctx, "if (a < b && c)")) == []
    assert ids(memory_ops.recall(ctx, "a <= b")) != []  # the store is populated and searchable


def test_exact_lane_is_case_sensitive_on_stored_characters(ctx):
    upper = memory_ops.log(ctx, "set MAX_RETRIES=5 in prod").id
    lower = memory_ops.log(ctx, "set max_retries=5 in the python client").id
    result = memory_ops.recall(ctx, "MAX_RETRIES")
    assert ids(result) == [upper] and lower not in ids(result)


def test_short_literal_uses_substring_scan(ctx):
    target = memory_ops.log(ctx, "the flag -x toggles tracing").id
    memory_ops.log(ctx, "nothing to see here")
    result = memory_ops.recall(ctx, "-x")
    assert ids(result) == [target]
    assert result.results[0].retrieval_mode == "exact_substring"


def test_lexical_lane_ranks_by_words(ctx):
    target = memory_ops.log(ctx, "Idempotency keys on the payment webhook stop double charges").id
    memory_ops.log(ctx, "The webhook for GitHub pushes triggers CI")
    result = memory_ops.recall(ctx, "payment idempotency", mode="lexical")
    assert result.mode == "lexical" and ids(result)[0] == target


TRICKY = 'a memory with "quotes", NEAR(x y), col:on, *stars* and AND OR NOT'
#: Any text, or any piece of the stored memory (full of FTS5 syntax): the exact lane must find those.
QUERIES = st.one_of(
    st.text(min_size=1, max_size=40),
    st.integers(0, len(TRICKY) - 1).flatmap(lambda i: st.integers(i + 1, len(TRICKY)).map(lambda j: TRICKY[i:j])),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=QUERIES)
def test_any_user_string_is_a_safe_query(ctx, query):
    if not query.strip() or "\x00" in query:
        with pytest.raises(BadInput):
            lanes.run(ctx.store(), query, Filter(), 5, "auto")
        return
    store = ctx.store()
    if store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0:
        memory_ops.log(ctx, TRICKY)
    stored = store.conn.execute("SELECT id FROM memories").fetchone()[0]
    for mode in ("auto", "exact", "lexical"):
        outcome = lanes.run(store, query, Filter(), 5, mode)
        assert {h.memory.id for h in outcome.hits} <= {stored}, (mode, query)
        assert all(h.memory.content == TRICKY for h in outcome.hits)  # raw, never escaped
        if mode == "exact" and query in TRICKY:
            assert [h.memory.id for h in outcome.hits] == [stored], query  # literal text is found
        if mode == "exact" and query not in TRICKY:
            assert outcome.hits == [] or query.lower() in TRICKY.lower(), query  # no near miss


def test_project_scope_isolates_projects_and_shares_global(ctx, tmp_path):
    repo_a, repo_b = git_init(tmp_path / "alpha"), git_init(tmp_path / "beta")
    ctx.cwd = repo_a
    in_a = memory_ops.log(ctx, "the deploy script lives in ops/deploy.sh").id
    ctx.cwd = repo_b
    in_b = memory_ops.log(ctx, "the deploy script is a GitHub action").id
    ctx.cwd = tmp_path / "work"
    shared = memory_ops.log(ctx, "every deploy script must be idempotent").id
    ctx.cwd = repo_a
    seen_from_a = ids(memory_ops.recall(ctx, "deploy script", mode="lexical", limit=10))
    assert in_a in seen_from_a and shared in seen_from_a and in_b not in seen_from_a
    every = ids(memory_ops.recall(ctx, "deploy script", mode="lexical", limit=10, all_projects=True))
    assert {in_a, in_b, shared} <= set(every)
    exact_from_a = ids(memory_ops.recall(ctx, '"deploy script"', limit=10))
    assert in_a in exact_from_a and in_b not in exact_from_a


def test_worktrees_of_one_repository_are_one_project(ctx, tmp_path):
    import subprocess

    main = git_init(tmp_path / "repo")
    subprocess.run(["git", "-C", str(main), "-c", "user.email=t@t", "-c", "user.name=t", "commit",
                    "-q", "--allow-empty", "-m", "init"], check=True)
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt"],
                   check=True)
    ctx.cwd = tmp_path / "wt"
    written = memory_ops.log(ctx, "written from the worktree")
    assert written.project == str(main.resolve())
    ctx.cwd = main / "."
    assert written.id in ids(memory_ops.recall(ctx, "worktree", mode="lexical"))


def test_explicit_project_flag_beats_the_repository(ctx, tmp_path):
    ctx.cwd = git_init(tmp_path / "repo")
    named = memory_ops.log(ctx, "belongs to the named project", project="billing").id
    assert memory_ops.show(ctx, named).memory.project == "billing"
    assert named not in ids(memory_ops.recall(ctx, "named project", mode="lexical"))
    assert named in ids(memory_ops.recall(ctx, "named project", mode="lexical", project="billing"))


def test_deleted_memory_is_gone_while_its_sibling_stays_and_audit_records_it(ctx):
    doomed = memory_ops.log(ctx, "the cache TTL is 300 seconds for sessions").id
    sibling = memory_ops.log(ctx, "the cache TTL is 60 seconds for avatars").id
    memory_ops.delete(ctx, "memory", str(doomed), reason="wrong number")
    lexical = ids(memory_ops.recall(ctx, "cache TTL seconds", mode="lexical"))
    exact = ids(memory_ops.recall(ctx, '"cache TTL is"'))
    assert sibling in lexical and doomed not in lexical
    assert sibling in exact and doomed not in exact
    [event] = [e for e in events.for_entity(ctx.store(), "memory", doomed) if e.action == "memory.delete"]
    assert event.reason == "wrong number" and event.before_hash
    with pytest.raises(NotFound):
        memory_ops.show(ctx, doomed)


def test_delete_log_removes_its_memory(ctx):
    entry = memory_ops.log(ctx, "2026-01-02-db-Moved to WAL mode")
    kept = memory_ops.log(ctx, "2026-01-03-db-Added busy timeout to WAL setup")
    memory_ops.delete(ctx, "log", str(entry.log_id))
    found = ids(memory_ops.recall(ctx, "WAL", mode="lexical"))
    assert kept.id in found and entry.id not in found


def test_delete_session_needs_yes_and_removes_only_that_session(ctx):
    gone = memory_ops.log(ctx, "scratch idea about queues", session="scratch").id
    kept = memory_ops.log(ctx, "real idea about queues", session="main").id
    with pytest.raises(BadInput, match="--yes"):
        memory_ops.delete(ctx, "session", "scratch")
    memory_ops.delete(ctx, "session", "scratch", yes=True)
    found = ids(memory_ops.recall(ctx, "idea queues", mode="lexical"))
    assert kept in found and gone not in found


def test_session_filter_narrows(ctx):
    a = memory_ops.log(ctx, "retry budget is three", session="s1").id
    b = memory_ops.log(ctx, "retry budget is five", session="s2").id
    assert ids(memory_ops.recall(ctx, "retry budget", mode="lexical", session="s1")) == [a]
    assert set(ids(memory_ops.recall(ctx, "retry budget", mode="lexical"))) == {a, b}


def test_active_session_tags_writes(ctx):
    notebook_ops.session_use(ctx, "feature-x")
    assert memory_ops.log(ctx, "tagged by the active session").session == "feature-x"
    listed = notebook_ops.sessions_op(ctx)
    assert listed.active == "feature-x" and [s.name for s in listed.sessions if s.active] == ["feature-x"]


def test_summary_groups_by_kind_newest_first(ctx):
    memory_ops.log(ctx, "DECISION: use SQLite")
    newer = memory_ops.log(ctx, "DECISION: use WAL mode").id
    memory_ops.log(ctx, "FIX: busy timeout raised to 15 s")
    digest = memory_ops.summary(ctx)
    assert [g.kind for g in digest.groups] == ["decision", "fix"]
    assert digest.groups[0].items[0].id == newer and digest.total == 3
    assert memory_ops.summary(ctx) == digest  # deterministic


def test_log_show_lists_log_rows_newest_first(ctx):
    memory_ops.log(ctx, "2026-01-01-db-first")
    memory_ops.log(ctx, "2026-02-01-db-second")
    memory_ops.log(ctx, "free text is not a log row")
    shown = memory_ops.log_show(ctx)
    assert [e.summary for e in shown.entries] == ["second", "first"]


def test_notebook_add_use_show_list_delete(ctx):
    notebook_ops.notebook_op(ctx, "add", "style", "Prefer small pure functions.")
    notebook_ops.notebook_op(ctx, "add", "tests", "Every negative assertion needs a positive twin.")
    used = notebook_ops.notebook_op(ctx, "use", "style", session="s1")
    assert used.entries[0].active_in == ["s1"]
    assert notebook_ops.notebook_op(ctx, "show", "style").entries[0].content == "Prefer small pure functions."
    notebook_ops.notebook_op(ctx, "delete", "style")
    assert [e.name for e in notebook_ops.notebook_op(ctx, "list").entries] == ["tests"]
    with pytest.raises(NotFound):
        notebook_ops.notebook_op(ctx, "show", "style")
