"""The hygiene review queue where users look: `marm view`'s Review tab (in a real
headless Chromium), its data block, and a verdict given from the served page.

The store: a project with a near-duplicate, a reversal and look-alike controls (the
same subject, another fact), drained once per module so the sweep fills the queue."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import git_init, run_marm
from tests.view.viewkit import Populated, shot, start_server

pytestmark = pytest.mark.slow  # a drain with the real encoder, and a browser

MAIL = "Emails are sent through Postmark from a background worker"
MAIL_AGAIN = "Emails are sent through Postmark by a background worker"
REDIS = "We use Redis for the session cache, with a 30 minute expiry"
NO_REDIS = "We no longer use Redis for the session cache; sessions live in Postgres"
CONTROLS = ["We use Redis for rate limiting, with a 60 second window",
            "SMS messages are sent through Twilio from a background worker"]


@pytest.fixture(scope="module")
def queued(tmp_path_factory) -> Populated:
    root = tmp_path_factory.mktemp("view-review")
    (root / "user-home").mkdir()
    env = {"MARM_HOME": str(root / "marm-home"), "HOME": str(root / "user-home")}
    p = Populated(root, env, git_init(root / "shop"), git_init(root / "other"))
    for text in [MAIL, REDIS, *CONTROLS, MAIL_AGAIN, NO_REDIS]:
        p.ids[text] = p.build("log", text)["id"]
    p.build("drain")  # in this process: laying out the store; the page and verdicts below are real processes
    return p


def _data(path: Path) -> dict:
    block = re.search(r'<script type="application/json" id="marm-data">(.*?)</script>',
                      path.read_text(encoding="utf-8"), re.S)
    assert block
    return json.loads(block.group(1))


def _page(p: Populated) -> Path:
    return Path(p.ok("view")["path"])


def test_the_page_data_carries_the_queue_and_leaves_the_controls_alone(queued):
    ids = queued.ids
    items = _data(_page(queued))["review"]["hygiene"]
    assert [(i["kind"], i["old_id"], i["new_id"]) for i in items] == [
        ("duplicate", ids[MAIL_AGAIN], ids[MAIL]), ("contradiction", ids[REDIS], ids[NO_REDIS])]
    named = {i["old_id"] for i in items} | {i["new_id"] for i in items}
    assert not named & {ids[c] for c in CONTROLS}
    assert items[1]["what"] == f"may be reversed by #{ids[NO_REDIS]}" and items[1]["old"]["content"] == REDIS


def test_the_review_tab_shows_the_queue_and_a_served_verdict_changes_the_store(queued, page):
    ids = queued.ids
    page.goto(_page(queued).as_uri() + "#review")
    page.wait_for_selector("html[data-ready]")
    assert page.text_content("#tabs button[data-tab=review]") == "Review (2)"
    rows = page.eval_on_selector_all("#review-hygiene tr[data-item]", "els => els.map(e => e.textContent)")
    assert len(rows) == 2
    assert f"#{ids[MAIL_AGAIN]} may duplicate #{ids[MAIL]}" in rows[0] and MAIL in rows[0]
    assert f"#{ids[REDIS]} may be reversed by #{ids[NO_REDIS]}" in rows[1] and NO_REDIS in rows[1]
    assert not any(c in row for c in CONTROLS for row in rows)
    assert page.query_selector("#review-hygiene button") is None  # a static page cannot act
    shot(page, "view-review-queue")

    server = start_server(queued, "--idle", "120")
    try:
        page.goto(server.url + "#review")
        page.wait_for_selector("html[data-ready]")
        reversal = page.eval_on_selector_all("#review-hygiene tr[data-item]",
                                             "els => els.map(e => e.getAttribute('data-item'))")[1]
        page.click(f"#review-hygiene tr[data-item='{reversal}'] button[data-verdict=accept]")
        page.wait_for_selector(f"#review-hygiene tr[data-item='{reversal}']", state="detached")
        assert "superseded by" in page.text_content("#notice")
        left = page.eval_on_selector_all("#review-hygiene tr[data-item]", "els => els.map(e => e.textContent)")
        assert len(left) == 1 and MAIL_AGAIN in left[0]  # the other item still waits
        assert page.text_content("#tabs button[data-tab=review]") == "Review (1)"
        assert page.errors == [] and page.dialogs == []
    finally:
        server.stop()
    assert queued.ok("show", str(ids[REDIS]))["memory"]["status"] == "superseded"
    assert queued.ok("show", str(ids[MAIL_AGAIN]))["memory"]["status"] == "active"
    history = queued.ok("history", str(ids[REDIS]))["events"]
    assert ("memory.supersede", "view") in [(e["action"], e["source"]) for e in history]
    assert run_marm("status", cwd=queued.alpha, env=queued.env).json()["review"] == {"duplicate": 1}
