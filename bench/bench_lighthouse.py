"""Lighthouse on every dive, desktop and mobile: performance, accessibility,
best practices and SEO, as the `lighthouse` CLI scores them.

Lighthouse 12 (bench/lighthouse/package-lock.json, installed by `make
lighthouse`; 13 wants Node 22) drives Debian's Chromium headless. Each dive is
opened fresh (a first visit: no cookie, the scenario lands on the first paint),
at Lighthouse's mobile defaults (a throttled mid-range phone) and with its
desktop preset. The scores are reported, never asserted.

    python -m bench.bench_lighthouse http://127.0.0.1:8000   # one run by hand, its table printed
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import servers

DIVES = ("/flows/parent-and-children", "/flows/reading-the-results", "/flows/cross-queue",
         "/batches/bulk-flows", "/flows/under-fire")
FORMS = ("desktop", "mobile")
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
TARGETS = {"performance": 95, "accessibility": 100, "best-practices": 100, "seo": 100}
CLI = servers.ROOT / "bench" / "lighthouse" / "node_modules" / "lighthouse" / "cli" / "index.js"
CHROMIUM = "/usr/bin/chromium"


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


def run(site_url: str, dives: tuple[str, ...] = DIVES, forms: tuple[str, ...] = FORMS) -> dict[str, Any]:
    if not CLI.exists():
        raise RuntimeError("Lighthouse is not installed: `make lighthouse`")
    runs = [{"page": dive, "form": form, **audit(site_url + dive, form)} for dive in dives for form in forms]
    short = [r for r in runs if any(r[c] < TARGETS[c] for c in CATEGORIES)]
    return {"version": lighthouse_version(), "runs": runs, "under_target": len(short)}


def lighthouse_version() -> str:
    package = CLI.parent.parent / "package.json"
    return str(json.loads(package.read_text())["version"]) if package.exists() else "not installed"


if __name__ == "__main__":
    found = run(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000")
    for r in found["runs"]:
        print(r["page"], r["form"], *(f"{c}={r[c]}" for c in CATEGORIES), f"cls={r['cls']}", "; ".join(r["lost"]))
