"""The site as a person sees it: opened in headless Chromium (Debian's `chromium`, driven
by Playwright; no browser is downloaded). Every page loads without console errors, every
link inside the site loads, the filter narrows the index from the keyboard, plots render,
a narrow screen scrolls nothing sideways; screenshots of the index and a skeleton page are
written (SKEL_SCREENSHOTS=DIR keeps them; the README's come from this test).

Skips, saying why, where there is no Chromium or no Playwright, unless
SKEL_REQUIRE_BROWSER=1 (CI sets it once it has installed Chromium): then that is a failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REQUIRED = os.environ.get("SKEL_REQUIRE_BROWSER") == "1"
CHROMIUM = next((p for p in (os.environ.get("SKEL_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser")) if p), None)


def _missing(why: str):
    if REQUIRED:
        pytest.fail(f"SKEL_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        _missing("no chromium on PATH (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install 'skel[test]')")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _open(browser, url: str, width: int = 1280):
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"failed to load {r.url}"))
    page.goto(url)
    page.wait_for_load_state("load")
    return page, errors


def _shots() -> Path | None:
    d = os.environ.get("SKEL_SCREENSHOTS")
    return Path(d) if d else None


def test_every_page_loads_without_errors_and_its_links_load(browser, small_site):
    out = small_site[0]
    pages = sorted(out.rglob("*.html"))
    assert len(pages) > 70
    checked = 0
    for path in pages:
        page, errors = _open(browser, path.as_uri())
        assert not errors, f"{path.relative_to(out)}: {errors}"
        # every link and image inside the site: the file behind it exists (links out are not followed offline)
        refs = page.eval_on_selector_all("a[href], img[src], link[href], script[src]",
                                         "els => els.map(e => e.href || e.src)")
        for ref in refs:
            if ref.startswith("file://"):
                target = Path(ref.split("#", 1)[0].removeprefix("file://"))
                assert target.exists(), f"{path.relative_to(out)}: {ref}"
                checked += 1
        page.close()
    assert checked > 500


def test_filter_narrows_the_index_from_the_keyboard(browser, small_site, tmp_path):
    out = small_site[0]
    page, errors = _open(browser, (out / "index.html").as_uri())
    rows = page.locator("#catalog tbody tr")
    total = rows.count()
    assert total == 72 or total > 60
    page.keyboard.press("Tab")  # the skip link
    page.keyboard.press("Tab")  # the site navigation
    for _ in range(10):
        if page.evaluate("document.activeElement.id") == "q":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "q", "the search box is not reachable by Tab"
    page.keyboard.type("split")
    visible = page.locator("#catalog tbody tr:not([hidden])")
    shown = visible.count()
    assert 0 < shown < total
    assert page.locator("#count").inner_text() == f"{shown} of {total} skeletons shown"
    ids = visible.locator("td:first-child code").all_inner_texts()
    assert "split-k-reduction" in ids and "online-softmax" not in ids
    if _shots():
        _shots().mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(_shots() / "index-filtered.png"))
    page.fill("#q", "")
    page.select_option("#language", "cuda")
    langs = page.locator("#catalog tbody tr:not([hidden]) td:nth-child(4)").all_inner_texts()
    assert langs and all("cuda" in x for x in langs) and len(langs) < total
    page.select_option("#language", "")
    page.select_option("#status", "refuted")
    assert 0 < page.locator("#catalog tbody tr:not([hidden])").count() < total
    assert not errors


def test_plots_render_and_screenshots(browser, small_site, tmp_path):
    out = small_site[0]
    shots = _shots() or tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    page, errors = _open(browser, (out / "index.html").as_uri())
    page.screenshot(path=str(shots / "index.png"))
    page, errors = _open(browser, (out / "skeletons" / "online-softmax.html").as_uri())
    imgs = page.locator("figure img")
    assert imgs.count() == 3
    for i in range(imgs.count()):
        img = imgs.nth(i)
        img.scroll_into_view_if_needed()
        size = img.evaluate("e => [e.complete, e.naturalWidth, e.naturalHeight, e.alt]")
        assert size[0] and size[1] > 200 and size[2] > 100 and size[3], size
    page.get_by_role("heading", name="Verification").scroll_into_view_if_needed()
    page.evaluate("document.getElementById('main').querySelector('section:last-of-type').scrollIntoView()")
    page.screenshot(path=str(shots / "skeleton.png"))
    page.locator("figure").first.screenshot(path=str(shots / "plot.png"))
    assert not errors
    for name in ("index.png", "skeleton.png", "plot.png"):
        assert (shots / name).stat().st_size > 10_000, name


def test_narrow_screen_scrolls_nothing_sideways(browser, small_site):
    out = small_site[0]
    for rel in ("index.html", "skeletons/online-softmax.html", "sources/kernels.html", "history.html"):
        page, errors = _open(browser, (out / rel).as_uri(), width=375)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{rel}: {overflow}px wider than a 375px screen"
        assert not errors
        page.close()
