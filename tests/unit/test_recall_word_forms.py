"""Word forms: compounds written apart, hyphenated or joined meet; what a question sets aside."""

from __future__ import annotations

import pytest

from marm import drain, recall
from marm.ops.memory import memory_filter, write_memory
from marm.recall import hybrid, lexical


def _seed(ctx):
    trip = write_memory(ctx, "Mel: we finally did the road trip up the coast with the kids", project="p").id
    vet = write_memory(ctx, "Ana: the puppy had her first check-up at the vet on Monday", project="p").id
    noise = [write_memory(ctx, f"note {i}: the kids packed snacks and the vet sent a bill", project="p").id
             for i in range(10)]
    return trip, vet, noise


def test_a_joined_or_split_compound_finds_the_other_spelling(ctx):
    trip, vet, noise = _seed(ctx)
    flt = memory_filter(ctx, project="p", all_projects=False)
    store = ctx.store()
    for query, target in (("How did the roadtrips go?", trip), ("How was the road-trip?", trip),
                          ("When were the puppy's checkups?", vet), ("any news on the checkup", vet)):
        got = [h.memory.id for h in recall.run(store, query, flt, 5, "lexical").hits]
        assert got and got[0] == target, query
        scores, _ = hybrid.word_scores(store, query, flt, 20)
        assert max(scores, key=scores.__getitem__) == target, query
    # The populated store answers other words as before.
    assert [h.memory.id for h in recall.run(store, "snacks bill", flt, 20, "lexical").hits][:1][0] in noise


def test_what_a_question_sets_aside_is_not_what_it_looks_for():
    assert lexical.without_exceptions("What does Mel do besides pottery?") == "What does Mel do ?"
    assert lexical.without_exceptions("Which pets besides the dog does Ana have?") == "Which pets does Ana have?"
    assert lexical.without_exceptions("Apart from the cache, what changed in the release?") == (
        ", what changed in the release?")
    assert lexical.without_exceptions("besides") == "besides"  # nothing else left: unchanged


@pytest.mark.slow
def test_a_besides_question_ranks_the_other_hobby_first(ctx):
    flt = memory_filter(ctx, project="p", all_projects=False)
    pottery = [write_memory(ctx, text, project="p", session="s").id for text in (
        "Mel: pottery class again today, I finally made a bowl that holds water",
        "Mel: my pottery teacher says my bowls are getting thinner",
        "Mel: I signed up for the advanced pottery course this spring")]
    other = write_memory(ctx, "Mel: on weekends I paint landscapes and take the kids camping", project="p",
                         session="s").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    got = [h.memory.id for h in recall.run(ctx.store(), "What does Mel do besides pottery?", flt, 5, "hybrid").hits]
    assert got[0] == other and set(got) & set(pottery)
