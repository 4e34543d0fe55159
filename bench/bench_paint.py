"""Click to settled: in Chromium, from the click on "Complete child" to the
moment the fan-in widget shows the stream's frame of that action, idle and
under load, each beside a bare page measured the same way in the same run;
then while 20 other learners race (issue 42), beside none racing.

Measured inside the page with performance.now(): `fetch` is wrapped for the
click (the answer's `ver` and arrival); a MutationObserver notes each paint.
`answer_ms`: the answer arrived; `painted_ms`: the widget shows `data-ver` at
least the answer's with the expected `[data-role="dependencies"]` (it may
come before the answer); `settled_ms`: the later of the two, the figure.
After three completions the widget is Reset (not timed). Baseline: the bare
page of bench/baseline_app.py. The load is wrk: streams held open
(streams.lua), actions paced to the rate (actions.lua); the racers are one
wrk connection each, running race after race (8 workers, 16 children, every
fault); every answer counted by status.

Lighthouse (`lighthouse`): every dive scored for performance, accessibility,
best practices and SEO by Lighthouse 12 (bench/lighthouse/package-lock.json,
`make lighthouse`; 13 wants Node 22) driving Debian's Chromium headless, each
opened fresh (a first visit: the scenario lands on the first paint), at its
mobile defaults (a throttled mid-range phone) and its desktop preset.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import probe, servers
from bench.stats import distribution, ratio
from bench.wrkrun import Wrk, socket_errors

CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"]
LIMIT_MS = 15000  # a click whose paint never comes fails the run, never hangs it
RACERS = 20
RACE_P99_MS = 100.0
RACE = {"workers": 8, "children": 16, "faults": ["crash", "lapse", "twice"], "early_release": False}

# Clicks one button of a widget and resolves with [ms to the answer, ms to the
# paint of the action's snapshot, ms to settled (the later of the two)].
# `want` null: any readout will do once `data-ver` reached the answer's.
CLICK_JS = """
async ([widget, action, readout, want, limitMs]) => {
  const root = document.querySelector(`[data-widget="${widget}"]`);
  const shown = () => { const node = root.querySelector(readout); return node ? node.textContent : null; };
  const ver = () => Number(root.dataset.ver || 0);
  const original = window.fetch;
  return await new Promise((resolve, reject) => {
    let t0 = 0, answerAt = -1, answerVer = null, paintAt = -1;
    const paints = [];
    const done = (error) => {
      observer.disconnect(); clearTimeout(limit); window.fetch = original;
      if (error) reject(error); else resolve([answerAt - t0, paintAt - t0, Math.max(answerAt, paintAt) - t0]);
    };
    const check = () => {
      if (answerVer === null) return;
      const hit = paints.find((p) => p.ver >= answerVer && (want === null || p.text === want));
      if (hit) { paintAt = hit.at; done(null); }
    };
    const limit = setTimeout(() => done(new Error(`${widget}: no paint of ver >= ${answerVer} with ` +
      `${readout} = ${want} (shows ver ${ver()}, ${shown()})`)), limitMs);
    const observer = new MutationObserver(() => {
      const now = performance.now();
      const last = paints[paints.length - 1];
      if (!last || last.ver !== ver() || last.text !== shown()) paints.push({ ver: ver(), text: shown(), at: now });
      check();
    });
    observer.observe(root, { subtree: true, childList: true, characterData: true, attributes: true });
    window.fetch = async (...args) => {
      const response = await original(...args);
      if ((args[1] || {}).method === "POST" && String(args[0]).includes(`/${action}`))
        response.clone().json().then((d) => { answerAt = performance.now(); answerVer = Number(d.ver); check(); });
      return response;
    };
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


def click(page: Any, target: Target, action: str, want: str | None) -> list[float]:
    """[ms to the answer, ms to the paint, ms to settled] of one click."""
    return [float(x) for x in page.evaluate(CLICK_JS, [target.widget, action, target.readout, want, LIMIT_MS])]


def fanin_clicks(page: Any, target: Target, clicks: int) -> list[list[float]]:
    """"Complete child" `clicks` times, a Reset (not timed) after every third."""
    page.wait_for_function(
        "() => document.querySelector('[data-widget=\"fanin\"] [data-role=\"dependencies\"]')?.textContent === '3'")
    time.sleep(0.5)  # the page's EventSource opens right after the widgets register
    timings: list[list[float]] = []
    left = 0  # the first click a Reset: the stream is open once its snapshot painted
    while len(timings) < clicks:
        if left == 0:
            click(page, target, "reset", "3")
            left = 3
        else:
            left -= 1
            timings.append(click(page, target, "complete-child", str(left)))
    return timings


def measure(browser: Any, target: Target, clicks: int) -> dict[str, Any]:
    """One fresh page (a fresh sandbox for the site), `clicks` timed clicks."""
    context = browser.new_context()
    context.set_default_timeout(20_000)
    try:
        page = context.new_page()
        page.goto(target.url)
        page.locator(f'[data-widget="{target.widget}"] {target.readout}').wait_for()
        if target.widget == "fanin":
            timings = fanin_clicks(page, target, clicks)
        else:
            page.wait_for_function("() => document.querySelector('[data-widget=\"bare\"]').dataset.ver !== undefined")
            timings = [click(page, target, "act", None) for _ in range(clicks)]
    finally:
        context.close()
    return {name: distribution([t[i] for t in timings]) for i, name in enumerate(("answer_ms", "painted_ms",
                                                                                   "settled_ms"))}


def both(browser: Any, site: Target, bare: Target, clicks: int) -> dict[str, Any]:
    return {"site": measure(browser, site, clicks), "bare": measure(browser, bare, clicks)}


@contextlib.contextmanager
def background(site_url: str, sandboxes: int, rate: float) -> Iterator[dict[str, Any]]:
    """`sandboxes` others, each with its page's stream open, walking the fan-in's tour at `rate` in all."""
    cookies = [servers.new_cookie(site_url) for _ in range(sandboxes)]
    stream = servers.page_stream(site_url)
    files = [servers.lines_file([f"{stream} {c}" for c in cookies]), servers.lines_file(cookies)]
    connections = max(1, min(sandboxes // 2, round(rate / 2)))  # a 500 ms pause: the answer's time slips it little
    found: dict[str, Any] = {"sandboxes": sandboxes, "target_rate": rate}
    try:
        with Wrk(site_url, "streams.lua", connections=sandboxes, threads=1, args=[files[0], "1"],
                 timeout="1s") as streams:
            time.sleep(1.0)  # the streams' first frames (each lands the page's widgets) before the clicks
            with Wrk(site_url + "/", "actions.lua", connections=connections, args=[
                    files[1], "2", probe.WIDGET, ",".join(probe.WALK), str(round(connections / rate * 1000))]) as acts:
                yield found
        found.update(actions=acts.result["requests"], achieved_rate=acts.result["rps"],
                     non_2xx=acts.result["non_2xx"], errors=socket_errors(acts.result) + socket_errors(
                         streams.result, timeouts=False), stream_bytes=streams.result["bytes"])
    finally:
        for name in files:
            Path(name).unlink(missing_ok=True)


@contextlib.contextmanager
def racing(site_url: str, racers: int = RACERS) -> Iterator[dict[str, Any]]:
    """`racers` learners, each running one race after another on a wrk connection of its own."""
    found: dict[str, Any] = {"racers": racers}
    with contextlib.ExitStack() as stack:
        loads = [stack.enter_context(Wrk(site_url + "/api/widgets/race/run", "request.lua", connections=1, threads=1,
                                         args=[servers.new_cookie(site_url), "0", json.dumps({**RACE, "seed": n})],
                                         timeout="10s"))
                 for n in range(racers)]
        time.sleep(1.0)  # every racer's first run under way
        yield found
    found.update(runs=sum(w.result["requests"] for w in loads), non_2xx=sum(w.result["non_2xx"] for w in loads),
                 errors=sum(socket_errors(w.result) for w in loads))


def measure_all(browser: Any, site_url: str, baseline_url: str, clicks: int, load_rate: float,
                load_sandboxes: int, racers: int = RACERS) -> dict[str, Any]:
    site = Target(site_url + servers.DIVE, "fanin", '[data-role="dependencies"]')
    bare = Target(baseline_url + "/paint?u=paint" + secrets.token_hex(4), "bare", '[data-role="value"]')
    both(browser, site, bare, 6)  # warm-up: caches, JIT, connections
    idle = both(browser, site, bare, clicks)
    with background(site_url, load_sandboxes, load_rate) as load:
        loaded = both(browser, site, bare, clicks)
    calm = measure(browser, site, clicks)  # the same learner, none racing, just before the race
    with racing(site_url, racers) as race:
        raced = measure(browser, site, clicks)
    return {
        "clicks": clicks, "idle": idle, "loaded": loaded, "load": load,
        "race": {"none": calm, "racing": raced, **race},
        "ratios": {phase: {what: {p: ratio(run["site"][what][p], run["bare"][what][p], 2) for p in ("p50", "p99")}
                           for what in ("answer_ms", "painted_ms", "settled_ms")}
                   for phase, run in (("idle", idle), ("loaded", loaded))},
    }


def run(site_url: str, baseline_url: str, clicks: int = 200, load_rate: float = 100.0, load_sandboxes: int = 100,
        browser: Any = None, racers: int = RACERS) -> dict[str, Any]:
    """Idle, then under load; pass a Playwright ``browser`` to reuse one (the e2e smoke test does)."""
    if browser is not None:
        return measure_all(browser, site_url, baseline_url, clicks, load_rate, load_sandboxes, racers)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            return measure_all(launched, site_url, baseline_url, clicks, load_rate, load_sandboxes, racers)
        finally:
            launched.close()


# -- Lighthouse ------------------------------------------------------------

DIVES = ("/flows/parent-and-children", "/flows/reading-the-results", "/flows/cross-queue",
         "/batches/bulk-flows", "/flows/under-fire")
FORMS = ("desktop", "mobile")
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
TARGETS = {"performance": 95, "accessibility": 100, "best-practices": 100, "seo": 100}
CLI = servers.ROOT / "bench" / "lighthouse" / "node_modules" / "lighthouse" / "cli" / "index.js"


def audit(url: str, form: str) -> dict[str, Any]:
    """One Lighthouse run: the four scores (0-100) and the audits that cost points."""
    with tempfile.TemporaryDirectory(prefix="lighthouse-") as tmp:
        out = Path(tmp) / "report.json"
        preset = ["--preset=desktop"] if form == "desktop" else []
        command = ["node", str(CLI), url, "--quiet", "--output=json", f"--output-path={out}",
                   f"--only-categories={','.join(CATEGORIES)}", *preset,
                   "--chrome-flags=--headless=new --no-sandbox --disable-gpu"]
        # CHROME_PATH: Debian's chromium, never a downloaded one; the profile dir is Lighthouse's own
        env = {**os.environ, "CHROME_PATH": os.environ.get("CHROME_PATH", CHROMIUM), "TMPDIR": tmp}
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, env=env)
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(f"lighthouse {form} {url}: {(done.stderr or done.stdout).strip()[-300:]}")
        report = json.loads(out.read_text())
    scores = {c: round(100 * (report["categories"][c]["score"] or 0)) for c in CATEGORIES}
    lost = sorted(f"{a['id']} ({a.get('displayValue') or a['score']})" for a in report["audits"].values()
                  if a.get("score") is not None and a["score"] < 0.9 and a.get("scoreDisplayMode") in
                  ("binary", "numeric", "metricSavings"))
    cls = report["audits"].get("cumulative-layout-shift", {}).get("numericValue", 0.0)
    return {**scores, "cls": round(float(cls), 3), "lost": lost}


def lighthouse(site_url: str, dives: tuple[str, ...] = DIVES, forms: tuple[str, ...] = FORMS) -> dict[str, Any]:
    if not CLI.exists():
        raise RuntimeError("Lighthouse is not installed: `make lighthouse`")
    runs = [{"page": dive, "form": form, **audit(site_url + dive, form)} for dive in dives for form in forms]
    short = [r for r in runs if any(r[c] < TARGETS[c] for c in CATEGORIES)]
    version = json.loads((CLI.parent.parent / "package.json").read_text())["version"]
    return {"version": str(version), "runs": runs, "under_target": len(short)}
