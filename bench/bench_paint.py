"""Figure 2 — click to paint: in Chromium, from the click on "Complete child"
to the new `:dependencies` number in the DOM, p50/p95/p99 over N clicks,
idle and while other sandboxes act together (bench/load.py: 100 sandboxes,
each with its live stream open, at a fixed aggregate rate).

Measured inside the page with performance.now(): a MutationObserver on the
fan-in widget resolves when `[data-role="dependencies"]` shows the expected
number, whichever of the action's answer or the stream's snapshot paints it
first; `frame_ms` adds the wait for the next animation frame (the paint of
that change). After three completions the widget is Reset (not measured).
The baseline is the idle run: the loaded figure is reported beside it.

    python -m bench.bench_paint [--clicks 200] [--rate 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

from bench import servers
from bench.background import Background

CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"]

# Clicks one button and resolves with [ms to the DOM change, ms to the next frame].
CLICK_JS = """
async ([action, want]) => {
  const root = document.querySelector('[data-widget="fanin"]');
  const counter = () => root.querySelector('[data-role="dependencies"]');
  return await new Promise((resolve, reject) => {
    let t0 = 0;
    const timer = setTimeout(() => { observer.disconnect(); reject(new Error("no change to " + want)); }, 15000);
    const observer = new MutationObserver(() => {
      const node = counter();
      if (node && node.textContent === want) {
        const dom = performance.now() - t0;
        observer.disconnect();
        clearTimeout(timer);
        requestAnimationFrame(() => resolve([dom, performance.now() - t0]));
      }
    });
    observer.observe(root, { subtree: true, childList: true, characterData: true });
    t0 = performance.now();
    root.querySelector(`button[data-action="${action}"]`).click();
  });
}
"""


def chromium_version() -> str:
    import subprocess

    try:
        out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=30).stdout
        return out.strip() or "unknown"
    except OSError:
        return "not found"


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0, "clicks": 0}
    return {
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "p99": round(percentile(values, 99), 1),
        "mean": round(statistics.fmean(values), 1),
        "clicks": len(values),
    }


def measure(browser: Any, site_url: str, clicks: int) -> dict[str, Any]:
    context = browser.new_context(base_url=site_url)
    context.set_default_timeout(20_000)
    try:
        page = context.new_page()
        page.goto(servers.DIVE)
        counter = page.locator('[data-widget="fanin"] [data-role="dependencies"]')
        counter.wait_for()
        page.wait_for_function(
            "() => document.querySelector('[data-widget=\"fanin\"] [data-role=\"dependencies\"]').textContent === '3'")
        time.sleep(0.5)  # the page's EventSource opens right after the widgets register
        dom: list[float] = []
        frame: list[float] = []
        shown = 3
        while len(dom) < clicks:
            if shown == 0:
                page.evaluate(CLICK_JS, ["reset", "3"])
                shown = 3
                continue
            shown -= 1
            to_dom, to_frame = page.evaluate(CLICK_JS, ["complete-child", str(shown)])
            dom.append(to_dom)
            frame.append(to_frame)
        return {"dom_ms": summary(dom), "frame_ms": summary(frame)}
    finally:
        context.close()


def run(site_url: str, clicks: int = 200, load_rate: float = 100.0, load_sandboxes: int = 100,
        browser: Any = None) -> dict[str, Any]:
    """Idle, then under load; pass a Playwright ``browser`` to reuse one (the e2e smoke test does)."""
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            launched = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                return run(site_url, clicks, load_rate, load_sandboxes, launched)
            finally:
                launched.close()
    measure(browser, site_url, 6)  # warm-up: caches, JIT, connections
    idle = measure(browser, site_url, clicks)
    cookies = servers.cookies(site_url, load_sandboxes)
    with Background(site_url, cookies, rate=load_rate, streams=True) as load:
        loaded = measure(browser, site_url, clicks)
    base, busy = idle["dom_ms"], loaded["dom_ms"]
    return {
        "clicks": clicks,
        "idle": idle,
        "loaded": loaded,
        "load": load.result,
        "ratio_p50": round(busy["p50"] / base["p50"], 2) if base["p50"] else 0.0,
        "ratio_p99": round(busy["p99"] / base["p99"], 2) if base["p99"] else 0.0,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="figure 2: click to paint")
    parser.add_argument("--clicks", type=int, default=200)
    parser.add_argument("--rate", type=float, default=100.0, help="background actions per second")
    args = parser.parse_args(argv)
    from server.valkey.process import ValkeyProcess

    with ValkeyProcess() as valkey, servers.serve_site(valkey.url) as site:
        result = run(site.url, args.clicks, args.rate)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
