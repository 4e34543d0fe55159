"""`make reliability`: issue 28's ten items tried on real processes, written to docs/RELIABILITY.md.

    python -m bench.reliability [--quick] [--out PATH] [--json PATH] [--only 2,5]

Each item runs as an operator or an attacker would run it, against `emqlab
serve` (`python -m server.cli serve --data-dir <tmp>`, its own valkey-server
in the data directory) and, for the fairness figure, the site under uvicorn
(bench/servers.py); item 9 puts Debian's nginx in front. Every attempt is a
row of its item's table: what was tried, the statuses counted, seconds to
recover, bytes, what happened, and whether what the issue asks for held.
Nothing in the page is typed by hand, and a row that did not hold is listed
again at the top: that is a site failure to report, not an error of this
generator. `--quick` runs the same attempts smaller (the smoke test,
tests/integration/test_reliability_report_smoke.py), writing elsewhere.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

from bench import (
    reliability_boundary,
    reliability_cost,
    reliability_ops,
    reliability_resets,
    reliability_slow,
    reliability_small,
    reliability_tokens,
)
from bench.reliability_drive import ROOT, Mode, Row
from bench.reliability_page import Result, render
from bench.reliability_procs import others

OUT = ROOT / "docs" / "RELIABILITY.md"


@dataclass(frozen=True)
class Item:
    number: int
    title: str
    tried: str  # what the scenario does, in a sentence or two
    tests: str  # the tests that hold the behaviour
    run: Callable[[Mode], list[Row]]


ITEMS = [
    Item(1, "A fresh machine", "`make -n <target>` for each suite and for `make bench` / `make reliability`: what "
         "the plan checks for and installs, beside the programs that target's code looks up (read as "
         "tests/unit/test_make_installs.py reads them).", "tests/unit/test_make_installs.py",
         reliability_ops.fresh_machine),
    Item(2, "A restart keeps the class", "An instructor signs in, opens a class, a learner joins and acts; "
         "`emqlab serve` is stopped with Ctrl-C and started on the same data directory; the same browsers come "
         "back.", "tests/integration/ops/test_learners_keep_their_work.py, ops/test_data_dir.py",
         reliability_ops.restart),
    Item(3, "A killed Valkey comes back", "`kill -9` of the valkey-server `emqlab serve` manages while a learner "
         "has a page streaming; Claim every 0.1 s until one answers 200.",
         "tests/integration/ops/test_supervision.py, ops/test_learners_keep_their_work.py",
         reliability_ops.kill_valkey),
    Item(4, "A learner cannot write into another sandbox", "A class in demo mode shows the instructor's sandbox; "
         "a learner reads it, leaves, and sends the crafted outbox entry (a JSON `\\u0073` escape naming the "
         "demo's queue) every way the console offers, then runs the Pump; the entries are then planted below "
         "the console. Every key of the demo's sandbox is DUMPed before and after.",
         "tests/integration/boundary/test_console_on_the_boundary.py, test_widget_outbox_trust.py",
         reliability_boundary.crafted_entry),
    Item(5, "One console line cannot break resets", "`hold_parent` from the console turns the fan-in's `pending` "
         "into a string; then each reset there is, the line again before each, and the reaper.",
         "tests/integration/test_resets_always_run.py, test_classes_roster.py", reliability_resets.resets),
    Item(6, "Token guessing is limited", "300 wrong instructor tokens from one address by the form and by "
         "Bearer, 16 at a time, while another address signs in and an instructor signed in behind the "
         "guesser's address works on; a 12-character token at start.",
         "tests/integration/test_reliability_tokens.py, test_reliability_limits.py",
         reliability_tokens.guessing),
    Item(7, "One learner's cost is bounded", "Console writes until the byte budget refuses; the budget spent by "
         "a course script and given back by Reset, again and again; 600 big fields in one row; 200 state reads "
         "and 50 console writes a second from one learner while another acts.",
         "tests/integration/boundary/test_byte_budget.py, test_bounded_cost.py; docs/PERFORMANCE.md (fairness)",
         reliability_cost.flooding),
    Item(8, "No key outside the grammar", "`EMQ.COMPLETE` from the console with a base outside the learner's "
         "`emq:{…}:`, many times; the same as the sandbox's own Valkey user; a key a course script makes under "
         "a new job id, then every reset.", "tests/integration/boundary/test_console_on_the_boundary.py",
         reliability_boundary.outside_grammar),
    Item(9, "Slow clients", "Half-open connections dribbling a header line against `emqlab serve` with 256 "
         "descriptors, past uvicorn's limit_concurrency and past the descriptors; then through nginx with "
         "tools/nginx/flows-lab.conf.", "tests/integration/ops/test_slow_clients.py, ops/test_nginx.py",
         reliability_slow.slow_clients),
    Item(10, "The small ones", "`emqlab reset` with two sites running; `claim ²` and `claim … nan`; names with "
         "joiners and with stacked marks; a class behind one NAT address.",
         "tests/integration/ops/test_data_dir.py, boundary/test_console_on_the_boundary.py, "
         "test_classes_roster.py, test_reliability_limits.py", reliability_small.small_ones),
]


class TookTooLong(Exception):
    """An item past its deadline: its processes are stopped by the `with` blocks it unwinds."""


def on_alarm(signum: int, frame: FrameType | None) -> None:
    raise TookTooLong


def run_item(item: Item, mode: Mode) -> Result:
    result = Result(item.number, item.title, item.tried, item.tests)
    started = time.monotonic()
    deadline = 120 if mode.quick else 600
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(deadline)
    try:
        result.rows = item.run(mode)
    except TookTooLong:
        result.error = f"the scenario did not finish within {deadline} s"
    except Exception as exc:  # noqa: BLE001 - a scenario's own failure is reported; the other items still run
        result.error = f"{type(exc).__name__}: {exc}"[:400]
    finally:
        signal.alarm(0)
    result.seconds = round(time.monotonic() - started, 1)
    result.load = round(os.getloadavg()[0], 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="issue 28's items tried on real processes")
    parser.add_argument("--quick", action="store_true", help="the same attempts, smaller (the smoke test)")
    parser.add_argument("--out", type=Path, help="the page to write (default: docs/RELIABILITY.md; "
                                                 "with --quick, a file in the temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--only", default="", help="item numbers, e.g. 2,5 (default: all)")
    args = parser.parse_args(argv)
    mode = Mode(quick=args.quick)
    out = args.out or (Path(tempfile.gettempdir()) / "emqlab-reliability-quick.md" if args.quick else OUT)
    chosen = {int(n) for n in args.only.split(",") if n.strip()}
    started, load, busy = time.monotonic(), os.getloadavg(), others()
    results = []
    for item in ITEMS:
        if chosen and item.number not in chosen:
            continue
        print(f"reliability: {item.number}. {item.title} …", flush=True)
        results.append(run_item(item, mode))
        failed = [row.tried[:60] for row in results[-1].rows if row.held is False]
        print(f"reliability:    {len(results[-1].rows)} rows, {results[-1].seconds} s"
              + (f", error: {results[-1].error}" if results[-1].error else "")
              + (f", did not hold: {failed}" if failed else ""), flush=True)
    when = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.machine(),
            "cores": os.cpu_count() or 0, "python": platform.python_version(), "mode": "quick" if mode.quick
            else "full", "seconds": round(time.monotonic() - started, 1), "load_before": [round(x, 2) for x in load],
            "load_after": [round(x, 2) for x in os.getloadavg()], "others": busy}
    out.write_text(render(results, when), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"run": when, "items": [asdict(r) for r in results]}, indent=1,
                                        ensure_ascii=False), encoding="utf-8")
    print(f"reliability: wrote {out} in {when['seconds']} s")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
