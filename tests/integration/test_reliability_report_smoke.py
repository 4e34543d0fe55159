"""`make reliability` in its quick mode, on real processes (`emqlab serve`
with its own valkey-server): every one of issue 38's eight items gives rows
and none stops on an error of its own. Whether the site held is what the
rows say (docs/RELIABILITY.md lists the ones that did not); this test keeps
the generator itself running, so the page can be regenerated at any time.
It writes to a scratch folder, never to docs/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# `make bench-smoke` runs it, not `make test`: it keeps a benchmark running, it tests no feature.
pytestmark = pytest.mark.bench_smoke

ROOT = Path(__file__).resolve().parents[2]
ITEMS = list(range(1, 9))
COLUMNS = {"tried", "statuses", "happened", "held"}


def test_the_reliability_generator_in_quick_mode_gives_every_item_rows_and_no_unhandled_error(
        tmp_path: Path) -> None:
    page, found = tmp_path / "RELIABILITY.md", tmp_path / "reliability.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "bench.reliability", "--quick", "--out", str(page),
                           "--json", str(found)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    items = json.loads(found.read_text())["items"]
    assert [item["number"] for item in items] == ITEMS
    for item in items:
        assert item["error"] is None, (item["number"], item["error"])
        assert item["rows"], f"item {item['number']} recorded no row"
        for row in item["rows"]:
            assert set(row) == COLUMNS and row["tried"] and row["statuses"], row
            assert row["held"] in (True, False, None), row
    text = page.read_text()
    assert all(f"\n## {n}. " in text for n in ITEMS)
    assert "quick mode" in text and "## What did not hold" in text
    assert not (ROOT / "docs" / "RELIABILITY.md").samefile(page)
