"""Relative dates resolved at write time, and temporal questions recognised by meaning."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from marm import drain, recall
from marm.ops.memory import memory_filter, write_memory
from marm.recall import dates
from marm.store import recall_reads
from marm.store.memories import Filter

WEDNESDAY = datetime(2024, 10, 9, 15, 30, tzinfo=timezone.utc)


def _days(text: str) -> list[tuple[str, str]]:
    return [(a.date().isoformat(), b.date().isoformat()) for a, b in dates.mentioned(text, WEDNESDAY)]


def test_relative_phrases_resolve_against_the_day_written():
    assert _days("I was in Boston yesterday for a show") == [("2024-10-08", "2024-10-09")]
    assert _days("we shipped it last Friday") == [("2024-10-04", "2024-10-05")]
    assert _days("two days ago the build broke") == [("2024-10-07", "2024-10-08")]
    assert _days("we went camping last weekend") == [("2024-10-05", "2024-10-07")]
    assert _days("the audit is next month") == [("2024-11-01", "2024-12-01")]
    assert _days("we met on 3 October") == [("2024-10-03", "2024-10-04")]
    assert _days("the launch was on 3 October 2023") == [("2023-10-03", "2023-10-04")]
    # Not dates: the modal verb, a habit, a plain number.
    assert _days("you may go whenever; I love fridays; retry 3 times") == []


def test_temporal_questions_are_recognised_anywhere_in_them():
    for question in ("In which month did Ana adopt her dog?", "How long ago did we drop redis?",
                     "The cache was rewritten since when?", "What did Calvin do on 3 October 2024?",
                     "When did we switch to postgres?"):
        assert dates.asks_when(question), question
    assert not dates.asks_when("Why did we drop redis?")


def test_a_memory_stores_the_days_it_names(ctx):
    said = write_memory(ctx, "Calvin: yesterday we played a packed show in Boston", project="p",
                        valid_from="2024-10-04").id
    plain = write_memory(ctx, "Calvin: the new songs are coming together", project="p",
                         valid_from="2024-10-04").id
    got = recall_reads.rows(ctx.store(), Filter(project="p"), [said, plain], [], dates=True).named
    assert list(got) == [said]
    assert got[said][0][0].startswith("2024-10-03")


@pytest.mark.slow
def test_a_question_naming_a_day_finds_the_memory_that_said_it_relatively(ctx):
    flt = memory_filter(ctx, project="p", all_projects=False)
    write_memory(ctx, "Calvin: rehearsal ran long tonight, the new songs are coming together",
                 project="p", session="s1", valid_from="2024-10-03T20:00:00")
    target = write_memory(ctx, "Calvin: last Thursday we played a gig in Boston, the crowd sang along",
                          project="p", session="s2", valid_from="2024-10-10T18:00:00").id
    other = write_memory(ctx, "Calvin: on Saturday we played a gig in Chicago, a small crowd",
                         project="p", session="s2", valid_from="2024-10-10T18:05:00").id
    for i in range(20):
        write_memory(ctx, f"Calvin: note {i} about the tour van and the merch table", project="p",
                     session="s3", valid_from="2024-09-20")
    drain.run(ctx, kinds=["embed"], sweeps=False)
    got = [h.memory.id for h in recall.run(ctx.store(), "Where did Calvin play a gig on 3 October 2024?",
                                           flt, 5, "hybrid").hits]
    assert got[0] == target and other in got
