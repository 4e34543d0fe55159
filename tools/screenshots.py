"""Render every page of the course at desktop and phone width into docs/screenshots/.

    python -m tools.screenshots            (or `make screenshots`)

Starts its own valkey-server and the real site (as the e2e suite does), opens
each page in Debian's Chromium at 1280×900 and 390×844, waits until every
widget on it shows the keys Valkey returned, and writes
docs/screenshots/<page>-desktop.png and <page>-phone.png. A dive is shot with
its first widget in view, opened on a step of its tour by a deep link, so the
picture shows a state worth looking at (the held parent, the counter, the
outbox) rather than a blank start.

The exercise editor is shot on its own (`exercise-editor`): the fan-in
exercise's region, its script run once as the starter stands, so checks fail,
the first failing check's before/after keys opened.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from playwright.sync_api import Locator, Page, sync_playwright

from server.valkey.process import ValkeyProcess
from tests.support import start_site, stop_site

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium")
VIEWPORTS = {"desktop": (1280, 900), "phone": (390, 844)}
# page name -> (path, deep link); a dive opens on a step of its first widget's tour
PAGES = {
    "index": ("/", ""),
    "flows": ("/flows", ""),
    "batches": ("/batches", ""),
    "parent-and-children": ("/flows/parent-and-children", "#step=3"),
    "reading-the-results": ("/flows/reading-the-results", "#step=4"),
    "cross-queue": ("/flows/cross-queue", "#step=3"),
    "bulk-flows": ("/batches/bulk-flows", "#step=4"),
    "under-fire": ("/flows/under-fire", ""),
}

# the exercise editor: shot by `shoot_exercise`, not as a page of PAGES
EXERCISE = ("exercise-editor", "/flows/parent-and-children", "Exercise: Count the children down")


def wait_for_widgets(page: Page, deep_link: str) -> None:
    """Every widget's readout came from Valkey; a deep link's replay has answered."""
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-widget]')].every((w) => {
             const r = w.querySelector('[data-role="readout"]');
             return w.classList.contains('is-live') && r && !r.textContent.startsWith('Reading the keys');
           })""",
        timeout=15_000,
    )
    if deep_link:
        replayed = re.compile(r"^(Step \d+ of|Rebuilt on Valkey|This tour has)")
        page.locator('[data-widget] [data-role="outcome"]').filter(has_text=replayed).first.wait_for(timeout=15_000)


def shoot(page: Page, name: str, path: str, deep_link: str, viewport: str) -> Path:
    page.goto(path + deep_link)
    wait_for_widgets(page, deep_link)
    widget = page.locator("[data-widget]").first
    if widget.count():
        # on a desktop the section holding the first widget, from its heading
        # down (the widget sits beside the prose); on a phone the widget itself,
        # which follows its section's prose
        section = widget.locator("xpath=ancestor::section[contains(@class, 'dive-section')]")
        target = section if viewport == "desktop" and section.count() else widget
        target.evaluate("(node) => node.scrollIntoView({block: 'start', behavior: 'instant'})")
        if viewport == "desktop":
            # the aside scrolls on its own: bring the controls, the readout
            # and the state picture into view, under the widget's title
            widget.evaluate("""(w) => {
                const aside = w.closest('.dive-aside');
                const controls = w.querySelector('.controls');
                if (aside && controls && aside.scrollHeight > aside.clientHeight) {
                  const top = controls.getBoundingClientRect().top - aside.getBoundingClientRect().top;
                  aside.scrollTop += top - 12;
                }
            }""")
        page.wait_for_timeout(300)
    out = OUT / f"{name}-{viewport}.png"
    page.screenshot(path=str(out), animations="disabled")
    return out


def shoot_exercise(page: Page, viewport: str) -> Path:
    """The exercise's region, run once as it starts (its checks fail), the first failure's keys opened."""
    name, path, title = EXERCISE
    page.goto(path)
    region = page.get_by_role("region", name=title)
    region.scroll_into_view_if_needed()  # the editor loads as the exercise nears the screen
    region.locator(".cm-editor").wait_for(timeout=15_000)
    region.get_by_role("button", name="Run the checks").click()
    failed = region.locator('[data-role="results"] details.exercise-picture').first
    failed.wait_for(timeout=30_000)
    failed.locator("summary").click()
    return region_shot(page, region, OUT / f"{name}-{viewport}.png")


def region_shot(page: Page, region: Locator, out: Path) -> Path:
    """One region whole. On a desktop it sits in the dive's aside, which scrolls on its own
    within the window's height: the window is made as tall as the region for this one shot."""
    size = page.viewport_size
    assert size is not None
    tall = int(region.evaluate("(node) => node.scrollHeight")) + 200
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], tall)})
    region.evaluate("(node) => node.scrollIntoView({block: 'start', behavior: 'instant'})")
    page.wait_for_timeout(300)
    try:
        region.screenshot(path=str(out), animations="disabled")
    finally:
        page.set_viewport_size(size)
    return out


# dive 05's race run on the early-release complete, with a seed that breaks an invariant
RACE = ("under-fire-broken", "/flows/under-fire")
BREAKING = {"race-workers": "3", "race-children": "4"}


def shoot_race(page: Page, viewport: str) -> Path:
    """The race widget after a run on the early-release script that broke an invariant: seeds are
    tried in turn (the workers' timing is real, so a seed breaks one on most runs, not every run)."""
    name, path = RACE
    page.goto(path)
    region = page.locator('[data-widget="race"]')
    region.locator('[data-role="readout"]').filter(has_not_text="Reading the keys").wait_for(timeout=30_000)
    for fault, on in (("crash", False), ("lapse", True), ("twice", False)):
        region.locator(f'[data-role="race-fault-{fault}"]').set_checked(on)
    region.locator('[data-role="race-early"]').set_checked(True)
    for seed in range(20):
        for role, value in {**BREAKING, "race-seed": str(seed)}.items():
            region.locator(f'[data-role="{role}"]').fill(value)
        region.locator('button[data-action="run"]').click()
        shown = region.locator('.race-picture[data-status="done"] [data-role="race-seed-shown"]')
        shown.filter(has_text=re.compile(f"^{seed}$")).wait_for(timeout=30_000)
        if region.locator('.race-invariants [data-held="no"]').count():
            return region_shot(page, region, OUT / f"{name}-{viewport}.png")
    raise RuntimeError("no seed of 20 broke an invariant on the early-release script")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shots = [*PAGES, EXERCISE[0], RACE[0]]
    parser.add_argument("pages", nargs="*", help=f"only these pages (of: {', '.join(shots)})")
    args = parser.parse_args(argv)
    wanted = args.pages or shots
    unknown = [p for p in wanted if p not in shots]
    if unknown:
        parser.error(f"unknown pages: {', '.join(unknown)}")
    OUT.mkdir(parents=True, exist_ok=True)
    with ValkeyProcess() as valkey:
        url, proc = start_site(valkey.url)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=CHROMIUM,
                    args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"],
                )
                for viewport, (width, height) in VIEWPORTS.items():
                    context = browser.new_context(
                        base_url=url, viewport={"width": width, "height": height},
                        device_scale_factor=1, is_mobile=viewport == "phone", has_touch=viewport == "phone",
                    )
                    page = context.new_page()
                    for name in wanted:
                        if name == EXERCISE[0]:
                            written = shoot_exercise(page, viewport)
                        elif name == RACE[0]:
                            written = shoot_race(page, viewport)
                        else:
                            path, deep_link = PAGES[name]
                            written = shoot(page, name, path, deep_link, viewport)
                        print(written.relative_to(ROOT))
                    context.close()
                browser.close()
        finally:
            stop_site(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
