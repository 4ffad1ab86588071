"""The memory browser in a real headless Chromium: what a person sees and clicks.

Skipped, with one line in the summary, where no Chromium is installed (see tests/browser.py).
The run saves the screenshots docs/UI.md shows (docs/ui/*.png).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.browser import CHROMIUM_ARGS, INSTALL_HINT, chromium_path
from tests.ui_server import PROJECT, XSS, Running, ids, server, store

CHROMIUM = chromium_path()
if CHROMIUM is None:
    pytest.skip(INSTALL_HINT, allow_module_level=True)

from playwright.sync_api import Browser, Dialog, Page, sync_playwright  # noqa: E402

SHOTS = Path(__file__).resolve().parents[1] / "docs" / "ui"


__all__ = ["ids", "server", "store"]  # fixtures from tests/ui_server.py


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Playwright gives each launch a fresh, empty profile directory of its own."""
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def page(browser: Browser, server: Running) -> Iterator[Page]:
    """One signed-in tab: the printed URL once, then the cookie carries the session."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    tab = context.new_page()
    tab.goto(server.url)
    yield tab
    context.close()


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def memory_url(server: Running, memory_id: str) -> str:
    return f"{server.base}/memory/{memory_id}?ns={PROJECT}"


def test_request_without_token_is_refused(browser: Browser, server: Running) -> None:
    context = browser.new_context()
    try:
        tab = context.new_page()
        response = tab.goto(server.base + "/memories")
        assert response is not None and response.status == 403
        assert "refused" in tab.inner_text("body")
        assert "SQLite" not in tab.content()
    finally:
        context.close()


def test_load_shows_the_overview_and_drops_the_token(page: Page, server: Running) -> None:
    page.goto(server.url)
    assert "token=" not in page.url
    assert page.inner_text("h1") == f"Overview of {PROJECT}"
    assert page.locator("svg[role=img]").count() == 1
    assert "auto-saved by hooks" in page.inner_text(".cards")
    shot(page, "overview")


def test_list_and_search_show_the_composite_parts(page: Page, server: Running,
                                                  ids: dict[str, str]) -> None:
    page.goto(f"{server.base}/memories?ns={PROJECT}")
    assert page.locator("table tr").count() == 18  # header + 17 memories
    shot(page, "memories")
    page.fill("input[name=q]", "SQLite WAL store")
    page.click("text=apply")
    assert page.inner_text("h1") == f"Search in {PROJECT}"
    first = page.locator("table tr").nth(1)
    assert ids["decision"][:10] in first.inner_text()
    assert first.locator("svg rect").count() == 4
    shot(page, "search")


def test_hostile_memory_renders_as_text(page: Page, server: Running,
                                        ids: dict[str, str]) -> None:
    dialogs: list[str] = []

    def record(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    page.goto(memory_url(server, ids["xss"]))
    assert page.inner_text("#content") == XSS
    assert page.title() != "pwned"
    assert page.locator("a[href^='javascript:']").count() == 0
    assert page.locator("main img, main script").count() == 0
    page.goto(f"{server.base}/memories?ns={PROJECT}&tag=pasted")
    assert page.title() != "pwned" and not dialogs


def test_memory_page_and_edit_in_place(page: Page, server: Running,
                                       ids: dict[str, str]) -> None:
    page.goto(memory_url(server, ids["decision"]))
    assert "What GC would do" in page.inner_text("main")
    shot(page, "memory")
    page.fill("textarea[name=content]", "We chose SQLite with WAL mode and a busy timeout "
              "of fifteen seconds for the store.")
    page.fill("input[name=importance]", "0.85")
    page.click("text=save edit")
    assert "Saved." in page.inner_text("[role=status]")
    assert "fifteen seconds" in page.inner_text("#content")
    assert "importance 0.8 → 0.85" in page.inner_text("ol.timeline")
    page.goto(f"{server.base}/memories?ns={PROJECT}&q=busy+timeout+fifteen")
    assert ids["decision"][:10] in page.locator("table tr").nth(1).inner_text()


def test_memory_pages_score_bar_has_a_legend(page: Page, server: Running,
                                            ids: dict[str, str]) -> None:
    """Each colour of the bar is named, with its weight, in the bar's order."""
    page.goto(memory_url(server, ids["decision"]))
    row = page.locator("tr", has=page.locator("th", has_text="score now"))
    keys = row.locator("p.legend span[style]")
    assert keys.count() == 4 and row.locator("p.legend").is_visible()
    assert [keys.nth(i).inner_text() for i in range(4)] == [
        "■ semantic × 0.4", "■ importance × 0.3", "■ recency × 0.2", "■ access × 0.1"]
    rects = row.locator("svg rect")
    for i in range(4):
        fill = rects.nth(i).get_attribute("fill") or ""
        rgb = tuple(int(fill[k:k + 2], 16) for k in (1, 3, 5))
        shown = keys.nth(i).evaluate("key => getComputedStyle(key).color")
        assert shown == f"rgb({rgb[0]}, {rgb[1]}, {rgb[2]})", (i, fill, shown)
        name = keys.nth(i).inner_text().split()[1]
        assert rects.nth(i).evaluate("rect => rect.textContent").startswith(name)
    assert "their sum is the composite" in row.inner_text()


def test_kind_is_shown_apart_from_the_tier_and_filters_the_list(
    page: Page, server: Running, ids: dict[str, str]
) -> None:
    page.goto(memory_url(server, ids["decision"]))
    fields = page.locator("table").first
    kind = fields.locator("tr", has=page.locator("th", has_text="kind")).inner_text()
    assert kind.split() == ["kind", "decision", "what", "it", "is;", "the", "collector",
                            "never", "changes", "it"]
    tier = fields.locator("tr", has=page.locator("th", has_text="tier")).inner_text()
    assert "where the collector keeps it now" in tier
    assert "Next GC: " in page.inner_text("body")
    assert page.locator("select[name=kind] option[selected]").inner_text() == "decision"

    page.goto(f"{server.base}/memories?ns={PROJECT}")
    page.select_option("select[name=kind]", "decision")
    page.click("text=apply")
    assert "kind=decision" in page.url
    rows = page.locator("table tr")
    assert rows.nth(0).locator("th").nth(1).inner_text() == "kind"
    kinds = {rows.nth(i).locator("td.kind").inner_text() for i in range(1, rows.count())}
    assert kinds == {"decision"}
    assert ids["decision"][:10] in page.inner_text("table")
    assert ids["bug"][:10] not in page.inner_text("table")


def test_forget_asks_first_then_deletes(page: Page, server: Running,
                                        ids: dict[str, str]) -> None:
    page.goto(memory_url(server, ids["bug"]))
    page.click("text=forget…")
    assert page.inner_text("h1").startswith("Forget ")
    page.goto(memory_url(server, ids["bug"]))  # cancelled: still there
    assert "stop hook saved" in page.inner_text("#content")
    page.click("text=forget…")
    page.click("text=forget it")
    assert page.inner_text("h1").endswith("(deleted)")
    assert "forgotten on request" in page.inner_text("ol.timeline")


def test_gc_preview_then_apply(page: Page, server: Running, ids: dict[str, str]) -> None:
    page.goto(f"{server.base}/gc?ns={PROJECT}")
    assert ids["old_note"][:10] in page.inner_text("main")
    shot(page, "gc")
    page.click("text=apply this plan")
    assert page.inner_text("[role=status]").startswith("Applied:")
    page.goto(memory_url(server, ids["old_note"]))
    assert "demote" in page.inner_text("ol.timeline")


def _recall_result(db: Path, query: str) -> dict[str, object]:
    """recall's structuredContent for `query` over the store, as the MCP server returns it."""
    from pma_mcp.config import Settings
    from pma_mcp.server.outputs import RecallResult
    from pma_mcp.service import MemoryService

    async def run() -> dict[str, object]:
        async with await MemoryService.open(Settings(db_path=db, namespace=PROJECT)) as svc:
            found = await svc.search(query, touch=False)
        return RecallResult.of(found).model_dump(mode="json")

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


HOST = """<!doctype html><html><body style="margin:0">
<iframe id="app" sandbox="allow-scripts" style="width:900px;height:560px;border:0"></iframe>
<script>
window.seen = [];
window.addEventListener("message", (e) => {
  window.seen.push(e.data);
  if (e.data.method === "ui/initialize") {
    e.source.postMessage({jsonrpc: "2.0", id: e.data.id, result: {}}, "*");
  }
});
</script></body></html>"""


def test_mcp_app_view_renders_a_recall_result_as_text(
    browser: Browser, store: tuple[Path, dict[str, str]]
) -> None:
    """The ui:// document in a sandboxed iframe, fed a real recall result as a host would."""
    from pma_mcp.core.scoring import Weights
    from pma_mcp.server.mcp_app import document

    result = _recall_result(store[0], "pasted chat click SQLite")
    context = browser.new_context(viewport={"width": 920, "height": 580})
    try:
        tab = context.new_page()
        tab.set_content(HOST)
        tab.eval_on_selector("#app", "(f, html) => { f.srcdoc = html; }", document(Weights()))
        tab.wait_for_function(
            "window.seen.some(m => m.method === 'ui/notifications/initialized')")
        tab.evaluate("""(data) => document.getElementById('app').contentWindow.postMessage(
            {jsonrpc: '2.0', method: 'ui/notifications/tool-result',
             params: {content: [], structuredContent: data}}, '*')""", result)
        frame = tab.frame_locator("#app")
        items = frame.locator(".item")
        items.first.wait_for()
        texts = [items.nth(i).locator(".content").inner_text() for i in range(items.count())]
        assert XSS in texts
        assert frame.locator("script").count() == 1  # its own; the memory's stayed text
        assert frame.locator("a, img").count() == 0
        assert items.first.locator(".bar span").count() == 4
        shot(tab, "mcp-app")
    finally:
        context.close()
