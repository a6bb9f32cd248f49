"""`marm view` in a real headless Chromium, on a populated store: what the page shows,
what it hides, that hostile text stays text, and a retract from the served page.

Each view is saved as a screenshot in tests/artifacts/ (git-ignored)."""

from __future__ import annotations

import pytest

from tests.view.viewkit import ALPHA, BETA, DOUBTED, GLOBAL, HOSTILE, RETRACTED, page_for, shot, start_server

pytestmark = pytest.mark.slow  # a browser, and a concept drain once per module


def _open(page, path, tab: str = "memories"):
    page.goto(path.as_uri() + f"#{tab}")
    page.wait_for_selector("html[data-ready]")


def _listed(page) -> list[str]:
    return page.eval_on_selector_all("#list li[data-id] .content", "els => els.map(e => e.textContent)")


def test_list_scope_search_and_status_filter(populated, page):
    _open(page, page_for(populated))
    shown = _listed(page)
    assert set(ALPHA) <= set(shown) and GLOBAL in shown and DOUBTED in shown
    assert BETA not in shown                      # another project's memory
    assert RETRACTED not in shown                 # hidden while its filter is off ...
    page.check("#st-retracted")
    assert RETRACTED in _listed(page)             # ... and listed once it is on
    page.uncheck("#st-retracted")

    page.fill("#q", "webhook idempotency")        # words, in any order
    assert _listed(page) == [ALPHA[0]]
    page.fill("#q", '"WAL lock"')                 # exact text
    assert _listed(page) == [ALPHA[3]]
    page.fill("#q", '"wal lock"')                 # exact is case-sensitive: nothing
    assert _listed(page) == [] and "0 of" in page.text_content("#count")
    page.fill("#q", "")
    assert set(ALPHA) <= set(_listed(page))

    page.click(f"#list li[data-id='{populated.ids[DOUBTED]}']")
    detail = page.text_content("#detail")
    assert "nobody checked" in detail and "memory.doubt" in detail and "memory.create" in detail
    shot(page, "view-memories")


def test_hostile_memories_render_as_text_and_run_nothing(populated, page):
    _open(page, page_for(populated))
    shown = _listed(page)
    assert set(HOSTILE) <= set(shown) and ALPHA[0] in shown
    for text in HOSTILE:
        page.click(f"#list li[data-id='{populated.ids[text]}']")
        assert page.text_content("#detail-content") == text
    assert page.evaluate("window.__pwned === undefined")
    assert page.query_selector_all("#list img, #detail img, #list script, #detail script") == []
    for tab in ("review", "concepts", "code", "status"):
        page.click(f"#tabs button[data-tab={tab}]")
    assert page.dialogs == [] and page.errors == []
    assert [u for u in page.requests if not u.startswith("file://")] == []  # no request at all
    assert page.evaluate("window.__pwned === undefined")


def test_concept_graph_renders_and_a_click_lists_memories(populated, page):
    _open(page, page_for(populated), "concepts")
    nodes = page.eval_on_selector_all("#graph .node", "els => els.map(e => e.getAttribute('data-key'))")
    assert "write_queue.py" in nodes and len(nodes) >= 5
    assert page.query_selector_all("#graph line.edge")
    assert page.query_selector("#legend [data-predicate]")  # typed edges get a legend
    page.click("#graph .node[data-key='write_queue.py'] circle")
    assert page.text_content("#entity h2").startswith("write_queue.py")
    memories = page.text_content("#entity-memories")
    assert ALPHA[3][:40] in memories and ALPHA[0][:40] not in memories
    page.mouse.move(300, 400)
    page.mouse.wheel(0, -300)                     # zoom in
    assert "scale(" in page.get_attribute("#graph-root", "transform")
    shot(page, "view-concepts")
    page.click("#tabs button[data-tab=review]")
    review = page.text_content("#view-review")
    assert DOUBTED in review and "Parked background tasks" in review
    shot(page, "view-review")
    page.click("#tabs button[data-tab=code]")
    assert "no indexed repository" in page.text_content("#view-code")
    shot(page, "view-code")
    page.click("#tabs button[data-tab=status]")
    assert "in this scope" in page.text_content("#view-status")
    shot(page, "view-status")


def test_a_retract_from_the_served_page_changes_the_store(populated, page):
    target = populated.ids[ALPHA[2]]
    server = start_server(populated, "--idle", "120")
    try:
        page.goto(server.url)
        page.wait_for_selector("html[data-ready]")
        assert ALPHA[2] in _listed(page) and BETA not in _listed(page)
        page.click(f"#list li[data-id='{target}']")
        page.fill("#act-reason", "checked in the browser")
        page.click("#detail button[data-action=retract]")
        page.wait_for_selector(f"#list li[data-id='{target}']", state="detached")
        assert ALPHA[0] in _listed(page)          # the rest is still there
        assert "retracted" in page.text_content("#notice")
        shot(page, "view-served")
        assert populated.ok("show", str(target))["memory"]["status"] == "retracted"
        history = populated.ok("history", str(target))["events"]
        assert ("memory.retract", "view", "checked in the browser") in [
            (e["action"], e["source"], e["reason"]) for e in history]
        # The same browser, without the token, is refused.
        refused = page.goto(f"http://127.0.0.1:{server.port}/")
        assert refused.status == 403
        assert page.dialogs == [] and page.errors == []
    finally:
        server.stop()
        populated.ok("restore", str(target))
