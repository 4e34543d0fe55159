"""Click to settled: in Chromium, from the click on "Complete child" to the
moment the fan-in widget's DOM stops changing, idle and while 100 other
sandboxes act at 100 actions/s in all, each beside a bare page measured the
same way in the same run.

Issue 12's figure: the stream's frames for the change (effects, and the
snapshot the action itself read) reach the page that clicked before the
answer and wait for it (lab.js `hold`); the answer paints the readout and
the effects log appends in the same task. The widget is *settled* once its
DOM has not changed for 150 ms. Measured inside the page with
performance.now() and a MutationObserver on the widget (children, text and
attributes of every node under it): `settled_ms` is the time of the LAST
mutation before the first 150 ms without one (not that time plus 150 ms);
`first_paint_ms` is the mutation that first shows the expected number in
`[data-role="dependencies"]`. After three completions the widget is Reset
(not measured).

Baseline: `bench/baseline_app.py`'s `/paint`, a bare page whose button does
one fetch to the one-EVALSHA endpoint and writes the answer into its
readout, clicked and observed by the same script, idle and under the same
load. The load (bench/background.py) counts its non-2xx answers.

    python -m bench.bench_paint [--clicks 200] [--rate 100]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from bench import servers
from bench.background import Background
from bench.stats import distribution

CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"]
QUIET_MS = 150  # issue 12: settled once the widget's DOM has not changed for this long

# Clicks one button of a widget and resolves with [ms to the first paint of the
# expected readout, ms to the last mutation before QUIET_MS of quiet]. `want`
# null: the first change of the readout's text is the paint. A mutation seen
# after a quiet period longer than QUIET_MS (a late timer under load) comes
# after the widget settled, so it does not move the figure.
CLICK_JS = """
async ([widget, action, readout, want, quietMs]) => {
  const root = document.querySelector(`[data-widget="${widget}"]`);
  const shown = () => { const node = root.querySelector(readout); return node ? node.textContent : null; };
  const before = shown();
  const painted = (text) => (want === null ? text !== before : text === want);
  return await new Promise((resolve, reject) => {
    let t0 = 0, paint = -1, last = 0, quiet = 0;
    const finish = () => {
      observer.disconnect(); clearTimeout(quiet); clearTimeout(limit);
      resolve([paint - t0, last - t0]);
    };
    const limit = setTimeout(() => {
      observer.disconnect(); clearTimeout(quiet);
      reject(new Error(`${widget}: ${readout} never showed ${want} and settled`));
    }, 15000);
    const observer = new MutationObserver(() => {
      const now = performance.now();
      if (paint >= 0 && now - last >= quietMs) { finish(); return; }
      last = now;
      if (paint < 0 && painted(shown())) paint = now;
      if (paint >= 0) { clearTimeout(quiet); quiet = setTimeout(finish, quietMs); }
    });
    observer.observe(root, { subtree: true, childList: true, characterData: true, attributes: true });
    t0 = performance.now();
    root.querySelector(`button[data-action="${action}"]`).click();
  });
}
"""


@dataclass(frozen=True)
class Target:
    """A page and the widget on it that a click is timed on."""

    url: str
    widget: str
    readout: str


def chromium_version() -> str:
    try:
        out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
        return out.strip() or "unknown"
    except OSError:
        return "not found"


def click(page: Any, target: Target, action: str, want: str | None) -> tuple[float, float]:
    paint, settled = page.evaluate(CLICK_JS, [target.widget, action, target.readout, want, QUIET_MS])
    return float(paint), float(settled)


def figures(paints: list[float], settles: list[float]) -> dict[str, Any]:
    return {"first_paint_ms": distribution(paints), "settled_ms": distribution(settles)}


def fanin_clicks(page: Any, target: Target, clicks: int) -> dict[str, Any]:
    """"Complete child" `clicks` times, a Reset (not timed) after every third."""
    page.wait_for_function(
        "() => document.querySelector('[data-widget=\"fanin\"] [data-role=\"dependencies\"]')?.textContent === '3'")
    time.sleep(0.5)  # the page's EventSource opens right after the widgets register
    click(page, target, "reset", "3")  # not timed: waits out the stream's first snapshot, settled
    paints: list[float] = []
    settles: list[float] = []
    left = 3
    while len(paints) < clicks:
        if left == 0:
            click(page, target, "reset", "3")
            left = 3
            continue
        left -= 1
        paint, settled = click(page, target, "complete-child", str(left))
        paints.append(paint)
        settles.append(settled)
    return figures(paints, settles)


def bare_clicks(page: Any, target: Target, clicks: int) -> dict[str, Any]:
    results = [click(page, target, "evalsha", None) for _ in range(clicks)]
    return figures([p for p, _ in results], [s for _, s in results])


def measure(browser: Any, target: Target, clicks: int) -> dict[str, Any]:
    """One fresh page (a fresh sandbox for the site), `clicks` timed clicks."""
    context = browser.new_context()
    context.set_default_timeout(20_000)
    try:
        page = context.new_page()
        page.goto(target.url)
        page.locator(f'[data-widget="{target.widget}"] {target.readout}').wait_for()
        walk = fanin_clicks if target.widget == "fanin" else bare_clicks
        return walk(page, target, clicks)
    finally:
        context.close()


def both(browser: Any, site: Target, bare: Target, clicks: int) -> dict[str, Any]:
    return {"site": measure(browser, site, clicks), "bare": measure(browser, bare, clicks)}


def ratio(figure: float, base: float) -> float:
    return round(figure / base, 2) if base else 0.0


def measure_all(browser: Any, site_url: str, baseline_url: str, clicks: int, load_rate: float,
                load_sandboxes: int) -> dict[str, Any]:
    site = Target(site_url + servers.DIVE, "fanin", '[data-role="dependencies"]')
    bare = Target(baseline_url + "/paint", "bare", '[data-role="value"]')
    both(browser, site, bare, 6)  # warm-up: caches, JIT, connections
    idle = both(browser, site, bare, clicks)
    cookies = servers.cookies(site_url, load_sandboxes)
    with Background(site_url, cookies, rate=load_rate, streams=True) as load:
        loaded = both(browser, site, bare, clicks)
    return {
        "clicks": clicks,
        "quiet_ms": QUIET_MS,
        "idle": idle,
        "loaded": loaded,
        "load": load.result,
        "ratios": {phase: {what: {p: ratio(run["site"][what][p], run["bare"][what][p]) for p in ("p50", "p99")}
                           for what in ("first_paint_ms", "settled_ms")}
                   for phase, run in (("idle", idle), ("loaded", loaded))},
    }


def run(site_url: str, baseline_url: str, clicks: int = 200, load_rate: float = 100.0, load_sandboxes: int = 100,
        browser: Any = None) -> dict[str, Any]:
    """Idle, then under load; pass a Playwright ``browser`` to reuse one (the e2e smoke test does)."""
    if browser is not None:
        return measure_all(browser, site_url, baseline_url, clicks, load_rate, load_sandboxes)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            return measure_all(launched, site_url, baseline_url, clicks, load_rate, load_sandboxes)
        finally:
            launched.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="click to settled, beside a bare one-EVALSHA page")
    parser.add_argument("--clicks", type=int, default=200)
    parser.add_argument("--rate", type=float, default=100.0, help="background actions per second, in all")
    parser.add_argument("--sandboxes", type=int, default=100, help="background sandboxes")
    args = parser.parse_args(argv)
    from server.valkey.process import ValkeyProcess

    with ValkeyProcess() as valkey, servers.serve_site(valkey.url) as site, \
            servers.serve_baseline(valkey.url) as base:
        result = run(site.url, base.url, args.clicks, args.rate, args.sandboxes)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
