"""Hygiene (issue 19): planted near-duplicates and reversals in a populated store are
found by the drain's sweep, with the real embedding model; look-alike controls are
left alone; what a person wrote is only proposed, never changed without a verdict."""

from __future__ import annotations

import os
import time

import pytest

from marm import drain
from marm.context import Ctx
from marm.hygiene import compact as hygiene_compact
from marm.ops import hygiene as hygiene_ops
from marm.ops.memory import write_memory
from marm.store import hygiene, memories

PROJECT = "shop"

#: The populated background: one project's ordinary memories on many subjects.
BACKGROUND = [
    "DECISION: the checkout page validates the postcode on the server, not in the browser",
    "FIX: the invoice PDF cut off long addresses; the template now wraps the address block",
    "The nightly export writes CSV files to the reports bucket at 02:00 UTC",
    "CONVENTION: every database migration gets a matching rollback script in db/rollback/",
    "Search results are paginated 25 per page; the API returns a cursor, not page numbers",
    "FIX: the login form double-submitted on Enter; the button is disabled while the request runs",
    "We use Redis for the session cache, with a 30 minute expiry",
    "The admin dashboard shows orders of the last 30 days by default",
    "DECISION: product images are resized to 800px wide on upload and stored as WebP",
    "LESSON: flaky browser tests came from fixed sleeps; wait for the element instead",
    "Payments go through Stripe; the webhook handler verifies the signature before parsing",
    "The mobile app talks to the same REST API as the web front end",
    "Emails are sent through Postmark from a background worker",
    "DECISION: feature flags live in the settings table and are cached for one minute",
    "The staging server is rebuilt from the main branch every night",
    "FIX: currency amounts were rounded twice; totals are now computed in cents",
]


def _ctx(source: str, work, session: str | None = None) -> Ctx:
    env = {**os.environ, "MARM_PROJECT": PROJECT, **({"MARM_SESSION": session} if session else {})}
    return Ctx(source=source, platform="claude" if source.startswith("hook:") else None, cwd=work, env=env)


def _sweep(ctx: Ctx) -> dict:
    summary = drain.run(ctx, max_seconds=300)
    return summary.sweeps["hygiene"]


@pytest.fixture
def shop(tmp_path):
    """A populated store: the background, written by hand."""
    work = tmp_path / "w"
    work.mkdir()
    person = _ctx("cli", work)
    ids = {text: write_memory(person, text).id for text in BACKGROUND}
    yield work, person, ids
    person.close()


def _status(ctx: Ctx, memory_id: int) -> str:
    memory = memories.get(ctx.store(), memory_id)
    assert memory is not None
    return memory.status


def test_hook_duplicates_are_merged_and_hand_written_ones_proposed(shop):
    work, person, ids = shop
    hook = _ctx("hook:stop", work, session="s1")
    later_hook = _ctx("hook:stop", work, session="s2")
    first = write_memory(hook, "FIX: the upload test was flaky because two workers shared one tmp directory").id
    again = write_memory(later_hook, "FIX: the upload test was flaky because two workers shared a tmp directory").id
    # A control that resembles it: the same words but one, and that one is what it is about.
    control = write_memory(later_hook, "FIX: the export test was flaky because two workers shared one tmp directory").id
    typed = write_memory(person, "The checkout page validates the postcode on the server and not in the browser").id
    summary = _sweep(person)
    assert summary["duplicates merged"] == 1 and summary["duplicates proposed"] == 1
    # the hook captures: merged into the earliest, provenance and history kept
    assert _status(person, first) == "active" and _status(person, again) == "superseded"
    kept = memories.get(person.store(), first)
    assert kept is not None and [m["id"] for m in kept.metadata["merged"]] == [again]
    assert kept.metadata["merged"][0]["session"] == "s2"
    # the control and the hand-written text: untouched
    assert _status(person, control) == "active"
    original = ids[BACKGROUND[0]]
    assert _status(person, typed) == "active" and _status(person, original) == "active"
    queue = hygiene_ops.review(person)
    assert [(i.kind, i.old_id, i.new_id) for i in queue.items] == [("duplicate", typed, original)]
    # a dismissal is durable and value-keyed: the same texts again are not proposed again
    hygiene_ops.review(person, action="dismiss", item=queue.items[0].id)
    assert hygiene_ops.review(person).items == []
    for c in (hook, later_hook):
        c.close()


def test_accepting_a_duplicate_merges_it_and_restore_undoes_it(shop):
    work, person, ids = shop
    typed = write_memory(person, "Emails are sent through Postmark by a background worker").id
    _sweep(person)
    (item,) = hygiene_ops.review(person).items
    done = hygiene_ops.review(person, action="accept", item=item.id)
    assert done.changed and _status(person, typed) == "superseded"
    from marm.ops.review import restore
    restore(person, typed)
    assert _status(person, typed) == "active"


def test_reversals_are_found_and_a_control_on_the_same_subject_is_left_alone(shop):
    work, person, ids = shop
    redis = ids["We use Redis for the session cache, with a 30 minute expiry"]
    # a reversal, typed by a person: proposed, the older memory untouched until a verdict
    reversal = write_memory(person, "We no longer use Redis for the session cache; sessions are kept in Postgres").id
    # a control on the same subject that reverses nothing
    control = write_memory(person, "The Redis session cache is monitored with a dashboard alert on memory use").id
    # and one that reverses the same thing, but for another purpose
    elsewhere = write_memory(person, "We no longer use Redis for the search autocomplete; it was too slow").id
    # two captures of one session: the older is superseded at once
    hook = _ctx("hook:stop", work, session="s9")
    worker = write_memory(hook, "DECISION: thumbnails are generated by the ImageWorker job after upload").id
    switched = write_memory(hook, "We dropped the ImageWorker job; thumbnails are generated on first request").id
    summary = _sweep(person)
    assert summary["reversals proposed"] == 1 and summary["reversals superseded"] == 1
    assert _status(person, worker) == "superseded"
    assert memories.get(person.store(), worker).superseded_by == switched
    assert _status(person, redis) == "active" and _status(person, control) == "active"
    assert _status(person, elsewhere) == "active"
    items = hygiene_ops.review(person).items
    assert [(i.kind, i.old_id, i.new_id) for i in items] == [("contradiction", redis, reversal)]
    # recall marks the proposed one (it no longer presents it as plainly current)
    from marm.ops.memory import recall
    found = recall(person, "session cache Redis", limit=5)
    flags = {r.id: r.flags for r in found.results}
    assert reversal in flags and redis in flags
    assert any("reversed by" in f for f in flags[redis]) and flags[reversal] == []
    hook.close()


def test_sweep_is_incremental(shop):
    work, person, ids = shop
    first = _sweep(person)
    assert first["checked"] == len(BACKGROUND)
    write_memory(person, "The staging server is rebuilt from main every night at 03:00")
    assert _sweep(person)["checked"] == 1
    assert hygiene.mark(person.store(), "checked_upto") is not None


BILLING = '''
def compute_total(items):
    return sum(i.price for i in items)


def apply_discount(total, code):
    return total * 0.9 if code else total


def tax_for(total, country):
    return total * 0.2


def format_invoice(total):
    return f"{total:.2f}"
'''

REWRITTEN = '''
class Ledger:
    def charge(self, items):
        return sum(i.price for i in items)

    def refund(self, amount):
        return -amount
'''


def test_memories_naming_code_that_changed_are_flagged_stale(tmp_path):
    import subprocess

    from marm.code.index import index_repo
    from marm.ops.memory import recall
    from tests.helpers import git_init

    repo = git_init(tmp_path / "repo")
    (repo / "billing.py").write_text(BILLING)
    (repo / "notes.py").write_text("def banner():\n    return 'hi'\n\n\ndef footer():\n    return 'bye'\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    ctx = Ctx(source="cli", cwd=repo, env=dict(os.environ))
    index_repo(ctx, repo)
    named = write_memory(ctx, "DECISION: billing.py computes the total in compute_total before tax_for adds tax").id
    by_symbol = write_memory(ctx, "The discount rule lives in apply_discount; codes give 10 percent off").id
    control = write_memory(ctx, "notes.py prints the banner before the invoice footer").id
    unrelated = write_memory(ctx, "Invoices are emailed to the customer after payment").id
    first = _sweep(ctx)
    assert first["code baselines"] == 3 and first.get("flagged stale", 0) == 0
    # billing.py is rewritten (its functions gone); notes.py only gets a comment
    (repo / "billing.py").write_text(REWRITTEN)
    (repo / "notes.py").write_text("# notes\ndef banner():\n    return 'hi'\n\n\ndef footer():\n    return 'bye'\n")
    index_repo(ctx, repo)
    second = _sweep(ctx)
    assert second["flagged stale"] == 2
    items = hygiene_ops.review(ctx, kind="stale").items
    assert sorted(i.old_id for i in items) == sorted([named, by_symbol])
    change = items[0].detail["files"][0]
    assert change["path"] == "billing.py" and "billing.compute_total" in change["removed"]
    assert "billing.py" in items[0].line() and "removed" in items[0].line()
    found = {r.id: r.flags for r in recall(ctx, "invoice total discount tax banner footer", limit=10).results}
    assert named in found and control in found and unrelated in found
    assert found[named] and found[named][0].startswith("may be stale: billing.py")
    assert found[control] == [] and found[unrelated] == []
    # accept marks it doubted; dismiss keeps it for this code state
    hygiene_ops.review(ctx, action="accept", item=items[0].id)
    hygiene_ops.review(ctx, action="dismiss", item=items[1].id)
    assert {_status(ctx, named), _status(ctx, by_symbol)} == {"doubted", "active"}
    assert _sweep(ctx).get("flagged stale", 0) == 0
    ctx.close()


def _rows(ctx: Ctx, ids: list[int]) -> list[tuple]:
    marks = ",".join("?" * len(ids))
    return ctx.store().conn.execute(f"SELECT * FROM memories WHERE id IN ({marks}) ORDER BY id", ids).fetchall()


def test_compaction_folds_old_episodes_and_restores_them_byte_for_byte(shop):
    from marm.ops.memory import recall

    work, person, ids = shop
    hook = _ctx("hook:stop", work, session="s-old")
    old = "2026-01-1%dT10:00:00.000000Z"  # Monday 12 to Thursday 15: one ISO week
    episodes = [write_memory(hook, f"Asked: why does the invoice PDF step {n} fail on long addresses?\n"
                             f"Concluded: The template did not wrap the address block in step {n}. "
                             f"We now wrap it and test with a 200 character address. The renderer measured "
                             f"the block once, before fonts loaded, so the width it used was the fallback "
                             f"font's; the fix waits for the fonts, then measures. I also ran the whole "
                             f"suite twice and checked the three sample invoices by eye: all pass.\n"
                             f"Changed: templates/invoice.html, tests/test_invoice_{n}.py",
                             kind="episode", recorded_at=old % n).id for n in range(2, 6)]
    highlight = write_memory(hook, "DECISION: invoice addresses wrap at 60 characters", kind="decision",
                             recorded_at=old % 2).id
    recent = write_memory(hook, "Asked: is the export fast?\nConcluded: Yes, it takes two seconds.", kind="episode").id
    before = _rows(person, [*episodes, highlight, recent, *ids.values()])
    plan = hygiene_ops.compact(person, older_than=30, dry_run=True)
    assert [f.sources for f in plan.folds] == [episodes] and plan.folds[0].summary_id is None
    assert _rows(person, [*episodes, highlight, recent, *ids.values()]) == before  # a dry run changes nothing
    done = hygiene_ops.compact(person, older_than=30)
    (fold,) = done.folds
    assert fold.summary_chars < fold.source_chars  # the store's half is measured by tests/bench/bench_hygiene.py
    summary = memories.get(person.store(), fold.summary_id)
    assert summary.kind == "summary" and "templates/invoice.html" in summary.content
    # the cause (what the classifier rates highest) is kept, and said once for four episodes that repeat it
    assert summary.content.count("the fix waits for the fonts, then measures") == 1
    assert all(_status(person, e) == "superseded" for e in episodes)
    assert _status(person, highlight) == "active" and _status(person, recent) == "active"
    assert all(_status(person, i) == "active" for i in ids.values())  # nothing a person wrote is touched
    found = [r.id for r in recall(person, "invoice PDF long addresses wrap", limit=10).results]
    assert fold.summary_id in found and highlight in found and not set(episodes) & set(found)
    back = hygiene_ops.compact(person, restore=fold.summary_id)
    assert back.restored == episodes and memories.get(person.store(), fold.summary_id) is None
    assert _rows(person, [*episodes, highlight, recent, *ids.values()]) == before
    from marm.ops.review import history
    assert [e.action for e in history(person, episodes[0]).events][-2:] == ["memory.compact", "memory.restore"]
    hook.close()


def test_a_summary_leaves_out_what_says_nothing_alone_and_lists_only_the_repositorys_files(shop):
    work, person, ids = shop
    hook = _ctx("hook:stop", work, session="s-talk")
    old = "2026-01-13T1%d:00:00.000000Z"  # one day
    texts = [
        "Asked: why does the nightly export skip the refunds table?\n"
        "Concluded: The export query joined refunds on the wrong key, so every refund row was dropped. "
        "Key changes:\n- The join uses refund.order_id now.\n"
        "Changed: exports/nightly.sql, /home/ana/.claude/plans/export-plan.md",
        "Asked: yes\nConcluded: The refunds backfill ran for the last 90 days; 412 rows were added. "
        "Here is what changed:\n"
        "Changed: exports/backfill.py, exports/a.py, exports/b.py, exports/c.py, exports/d.py, exports/e.py, "
        "exports/f.py, exports/g.py, exports/h.py, exports/i.py, exports/j.py, exports/k.py and 3 more",
        "Asked: why does the nightly export skip the refunds table?\n(interrupted before an answer)",
    ]
    episodes = [write_memory(hook, t, kind="episode", recorded_at=old % n).id for n, t in zip((2, 3, 4), texts)]
    (fold,) = hygiene_ops.compact(person, older_than=30, dry_run=True).folds
    assert fold.sources == episodes
    text = fold.summary
    assert "the wrong key" in text and "412 rows were added" in text  # the conclusions' facts stay
    # said once: the day, and the question asked again (its retry was interrupted)
    assert text.count("2026-01-13") == 1 and text.count("why does the nightly export skip") == 1
    assert "- yes" not in text and ": yes" not in text  # a bare "yes" is no question worth a line
    assert "Key changes:" not in text and "Here is what changed:" not in text and "interrupted" not in text
    changed = next(line for line in text.splitlines() if line.startswith("Changed: "))
    assert "exports/nightly.sql" in changed and "exports/backfill.py" in changed
    assert "/home/ana" not in changed and "k.py and 3 more," not in changed  # outside the repo; not a file
    assert changed.endswith(f" and {13 - hygiene_compact.FILES} more")  # 13 files of the repository
    assert all(_status(person, i) == "active" for i in [*episodes, *ids.values()])  # a dry run
    hook.close()


def _summary_of(work, person, session: str, texts: list[str]) -> str:
    """The dry-run summary of one fold: ``texts`` captured as old episodes of ``session``."""
    hook = _ctx("hook:stop", work, session=session)
    for n, t in enumerate(texts, 2):
        write_memory(hook, t, kind="episode", recorded_at=f"2026-01-13T1{n}:00:00.000000Z")
    hook.close()
    (fold,) = hygiene_ops.compact(person, older_than=30, dry_run=True).folds
    return fold.summary


def test_a_summary_keeps_the_work_not_the_talk_about_the_chat_or_the_checks_just_run(shop):
    """Narration (the agent speaking of the conversation: what it will do, what it
    offers, what it waits for) is true of the chat, not of the project, and a check's
    outcome ("Clippy passes with warnings denied.") of the tree at that moment: a summary
    leaves both out, unless the narration names something concrete or the check says
    more; a sentence that states the work in the first person stays."""
    work, person, ids = shop
    texts = [
        "Asked: why do the thumbnail jobs pile up overnight?\n"
        "Concluded: The resize worker pulled one image per poll, so the queue drained at a trickle. "
        "I moved the batch size into `RESIZE_BATCH` and set it to 50. "
        "Shellcheck passes on every script. "
        "I'll keep an eye on tonight's backlog before touching the scheduler. "
        "Let me know whenever you want the dashboards wired up too.",
        "Asked: does the gallery page still flicker on slow phones?\n"
        "Concluded: The gallery swapped placeholders for images after every lazy load, which repainted the grid. "
        "Placeholders now reserve the final aspect ratio. "
        "Stylelint ran clean; the snapshot suite still fails on Safari because its fonts load late. "
        "Ready for the accessibility pass whenever you are, just say go.",
    ]
    text = _summary_of(work, person, "s-chat", texts)
    assert "queue drained at a trickle" in text and "`RESIZE_BATCH`" in text and "aspect ratio" in text
    assert "keep an eye on tonight" not in text and "dashboards wired" not in text
    assert "accessibility pass" not in text and "Shellcheck" not in text
    assert "Safari because its fonts load late" in text  # a check that says why it failed stays
    assert hygiene_compact.talk("Let me know whenever you want the dashboards wired up too.")
    assert not hygiene_compact.talk("I'll rename `thumbs_v1` to `thumbs` once the backfill finishes.")


def test_a_summary_names_a_linked_file_once(shop):
    """Agents link the files they name (``[src/config.ts](src/config.ts)``): a summary
    keeps the name once; a link whose text is not the file it points to stays whole."""
    work, person, ids = shop
    texts = [
        "Asked: where is the upload size limit enforced?\n"
        "Concluded: The limit lives in [src/limits.ts](src/limits.ts#L12), read once at start-up.",
        "Asked: how do I raise the upload size limit?\n"
        "Concluded: Set MAX_UPLOAD_MB in [the deploy guide](docs/deploy.md) and restart the uploader.",
    ]
    text = _summary_of(work, person, "s-links", texts)
    assert "The limit lives in src/limits.ts, read once at start-up." in text and "](src/limits.ts" not in text
    assert "[the deploy guide](docs/deploy.md)" in text


def test_episodes_age_in_ranking_and_other_memories_do_not(shop):
    from datetime import datetime, timezone

    from marm.ops.memory import recall
    from marm.recall.aging import episode_age_weight
    from marm.store import flags

    work, person, ids = shop
    hook = _ctx("hook:stop", work, session="s-age")
    text = "Asked: how are webhook retries spaced?\nConcluded: Webhook retries back off exponentially, up to an hour."
    old_episode = write_memory(hook, text, kind="episode", recorded_at="2025-06-01T00:00:00.000000Z").id
    # (different words: two near-identical captures would be merged by the sweep)
    new_episode = write_memory(hook, "Asked: what spacing do webhook retries use?\nConcluded: The retries "
                               "back off exponentially and RETRY_CAP stops them at one hour.", kind="episode").id
    old_fix = write_memory(hook, "FIX: webhook retries back off exponentially, up to an hour", kind="fix",
                           recorded_at="2025-06-01T00:00:00.000000Z").id
    old_note = write_memory(person, "Webhook retries back off exponentially, up to an hour, says the docs page",
                            recorded_at="2025-06-01T00:00:00.000000Z").id
    store = person.store()
    now = datetime(2026, 6, 1, tzinfo=timezone.utc)
    get = lambda i: memories.get(store, i)  # noqa: E731
    assert episode_age_weight(get(old_episode), now, 180) == 0.5  # a year old: half weight, no less
    assert 0.5 < episode_age_weight(get(old_episode), datetime(2025, 9, 1, tzinfo=timezone.utc), 180) < 0.75
    assert episode_age_weight(get(new_episode), now, 180) == 1.0
    assert episode_age_weight(get(old_fix), now, 180) == 1.0 == episode_age_weight(get(old_note), now, 180)
    drain.run(person, max_seconds=300)
    found = recall(person, "webhook retry backoff", limit=6).results
    ranked, aged = [r.id for r in found], {r.id: r.score for r in found}
    assert ranked.index(new_episode) < ranked.index(old_episode)
    assert ranked.index(old_fix) < ranked.index(old_episode) and old_note in ranked
    flags.put(store, "recall.episode_half_life_days", "0")  # 0 switches ageing off
    scores = {r.id: r.score for r in recall(person, "webhook retry backoff", limit=6).results}
    assert abs(scores[old_episode] - 2 * aged[old_episode]) < 0.01
    assert scores[old_fix] == aged[old_fix] and scores[new_episode] == aged[new_episode]
    hook.close()


def test_a_question_or_a_prompt_reverses_nothing():
    from marm.hygiene.similar import reverses

    older = "So the early return guard in db/seeds.rb is safe as-is."
    asked = ("Asked: Since db/seeds.rb is a script, should we use next instead of return in the guard?\n"
             "Concluded: The return guard is fine: Kernel#load permits a top-level return.")
    assert reverses(asked, older) is None
    assert reverses("Should we use next instead of the return guard?", older) is None
    said = "Concluded: We use next instead of the return guard in db/seeds.rb now."
    assert reverses(said, older) is not None  # the same cue, stated, still counts


def test_word_forms_count_as_one_word_and_other_facts_stay_apart():
    """The content words are recall's stems: a reworded plural or tense is the same
    word (a duplicate, a reversal of what the older memory states), another word is not."""
    from marm.hygiene.similar import near_duplicate, reverses, word_overlap

    assert word_overlap("the upload test retries failed requests", "upload tests retry the failed request") == 1.0
    assert near_duplicate("The upload tests retry failed requests twice",
                          "the upload test retries the failed requests twice", 0.5)
    assert not near_duplicate("The upload tests retry failed requests twice",
                              "The upload tests never retry failed requests", 0.5)
    older = "DECISION: we use Redis caches for the sessions."
    assert reverses("We no longer use the Redis cache for sessions; Postgres holds them", older) is not None
    assert reverses("We no longer use the Redis cache for rate limits", older) is None  # another purpose
