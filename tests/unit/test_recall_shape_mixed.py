"""Command lines are literal; a question that merely holds a literal is answered by
meaning and words with the literal required."""

from __future__ import annotations

import pytest

from marm import drain, recall
from marm.ops.memory import memory_filter, write_memory
from marm.recall.shape import is_command, literal_of, literals_in


def test_a_command_line_with_flags_is_literal():
    for command in ("git rebase -i --autosquash", "docker compose up -d --build", "pytest -x -q tests/unit",
                    'git commit -m "fix the flaky test"'):
        assert literal_of(command) == command, command
    # Sentences that mention a flag are not commands: they are answered by words and meaning.
    assert not is_command("use --dry-run to test the deploy")
    assert literal_of("how do I run pytest -x?") is None


def test_a_question_holding_a_literal_is_not_sent_to_the_exact_lane_alone():
    question = "why does src/routes/[id]/+page.ts load twice?"
    assert literal_of(question) is None
    assert literals_in(question) == ["src/routes/[id]/+page.ts"]
    assert literals_in('what did we put in {"retry": 3} for the webhook?') == ['{"retry": 3}']
    assert literals_in("where do we read `MAX_RETRIES` from?") == ["MAX_RETRIES"]
    # Code alone stays literal, and so do the exact lane's own shapes.
    for code in ("if (a < b && c)", "x == 1", "MAX_RETRIES", "src/store/write_queue.py", "--dry-run", '"connection refused"'):
        assert literal_of(code) is not None, code


@pytest.mark.slow
def test_a_mixed_question_finds_the_memory_holding_its_literal(ctx):
    flt = memory_filter(ctx, project="p", all_projects=False)
    target = write_memory(ctx, "fix: src/routes/[id]/+page.ts ran its load function on the server and in the "
                               "browser; export const ssr = false stopped the double fetch", project="p").id
    near = write_memory(ctx, "the blog page loads twice because the layout load function refetches the posts",
                        project="p").id
    for i in range(15):
        write_memory(ctx, f"note {i}: the routes folder holds one page per screen of the admin app", project="p")
    drain.run(ctx, kinds=["embed"], sweeps=False)
    out = recall.run(ctx.store(), "why does src/routes/[id]/+page.ts load twice?", flt, 5, "auto")
    got = [h.memory.id for h in out.hits]
    assert out.mode == "hybrid" and got[0] == target
    # The page's own fix, not the look-alike, holds the path: the look-alike, if it comes
    # at all, comes below it.
    assert near not in got[:1] and (near not in got or got.index(near) > got.index(target))
    # The same recall with the literal dropped from the question finds the look-alike too.
    loose = [h.memory.id for h in recall.run(ctx.store(), "why does the page load twice?", flt, 5, "auto").hits]
    assert near in loose


@pytest.mark.slow
def test_a_command_line_query_finds_the_memory_holding_the_command(ctx):
    flt = memory_filter(ctx, project="p", all_projects=False)
    target = write_memory(ctx, "to fold the fixup commits in: git rebase -i --autosquash main", project="p").id
    near = write_memory(ctx, "git rebase -i lets you reorder, squash and autosquash commits interactively; "
                             "we rebase feature branches on main before merging", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    out = recall.run(ctx.store(), "git rebase -i --autosquash", flt, 5, "auto")
    assert out.mode == "exact" and [h.memory.id for h in out.hits] == [target]
    assert near not in [h.memory.id for h in out.hits]


def test_quotes_in_prose_are_a_title_not_a_literal():
    assert literals_in('what did Ana think of "Becoming Nicole"?') == []
    assert literals_in('why did "src/app.py" break after the upgrade?') == ["src/app.py"]


@pytest.mark.slow
def test_a_mixed_question_is_still_answered_by_a_memory_that_does_not_name_its_literal(ctx):
    """The literal is boosted, not required: the fix that explains the route does not name
    the file the question names, and still comes back, below the memory that does."""
    flt = memory_filter(ctx, project="p", all_projects=False)
    holder = write_memory(ctx, "urls.py includes the admin site, the health check and the static files",
                          project="p").id
    answer = write_memory(ctx, "the login view is registered by hand because the API router would prefix "
                               "it twice, giving /api/api/login", project="p").id
    for i in range(12):
        write_memory(ctx, f"note {i}: the billing screen shows invoices grouped by month", project="p")
    drain.run(ctx, kinds=["embed"], sweeps=False)
    out = recall.run(ctx.store(), "why is the login route registered by hand in urls.py instead of the router?",
                     flt, 5, "auto")
    got = [h.memory.id for h in out.hits]
    assert out.mode == "hybrid" and got[0] == holder
    assert answer in got
