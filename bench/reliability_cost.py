"""Issue 28, item 7: what one learner may cost the others. Console writes
until the byte budget refuses (what Valkey then holds for the sandbox), the
same budget spent again after each Reset, a snapshot's size after big
values, and another learner's actions while one learner floods state reads
and console writes (bench/bench_fairness.py, the same measure `make bench`
reports)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from bench import bench_fairness
from bench.reliability_drive import Mode, Row, act, console, counted, dumps, memory_of, said, sandbox_of, visitor
from bench.reliability_procs import Serve, scratch
from server.valkey.process import ValkeyProcess

VALUE = "x" * 1000  # about 1 KB a field, under the console's 1 KB an argument


def until_refused(learner: httpx.Client, line: Any, most: int) -> tuple[int, httpx.Response | None]:
    """Send `line(n)` until an answer is not 200: (lines accepted, the refusal)."""
    for n in range(most):
        answer = console(learner, line(n))
        if answer.status_code != 200:
            return n, answer
    return most, None


def flooding(mode: Mode) -> list[Row]:
    budget = mode.pick(128 * 1024, 1 << 20)
    work = scratch("cost")
    # no rate limits here: the byte budget is what is tried, not how fast one visitor may type
    env = {"EMQLAB_RATE_LIMIT": "0", "EMQLAB_READ_LIMIT": "0", "EMQLAB_SANDBOX_BYTES": str(budget)}
    rows = []
    with Serve(work, env=env) as site:
        r = site.redis()
        learner = visitor(site.url)
        learner.get("/api/widgets/fanin/state")
        sandbox = sandbox_of(learner)
        started = time.monotonic()
        accepted, refusal = until_refused(
            learner, lambda n: f"HSET emq:{{fanin}}:job:JOBflood{n % 8} field{n} {VALUE}", budget // 900)
        seconds = round(time.monotonic() - started, 1)
        before = dumps(r, sandbox, records=False)
        again = console(learner, f"HSET emq:{{fanin}}:job:JOBflood0 one-more {VALUE}")
        held = memory_of(r, sandbox)
        rows.append(Row(f"`HSET emq:{{fanin}}:job:JOBflood<n> field<n> <1,000 bytes>` until refused (a budget of "
                        f"{budget:,} bytes), then one line more",
                        f"{accepted} × 200, then {refusal.status_code if refusal else 'none'}, "
                        f"{again.status_code}", seconds, held,
                        f"refused: {said(again, 110)}; its queues' keys unchanged by that line: "
                        f"{dumps(r, sandbox, records=False) == before}; "
                        f"bytes: the sandbox's MEMORY USAGE sum",
                        refusal is not None and refusal.status_code == 409 and held < budget * 1.5))
        act(learner, "reset")
        rows.append(spent_again(mode, site, budget))
        rows.append(snapshot_size(mode, visitor(site.url)))
    rows.append(fairness(mode))
    return rows


def spent_again(mode: Mode, site: Serve, budget: int) -> Row:
    """The budget spent by a course script naming new job ids, a Reset, and again: does Valkey's share grow?"""
    r = site.redis()
    learner = visitor(site.url)
    learner.get("/api/widgets/fanin/state")
    sandbox = sandbox_of(learner)
    rounds, held, counts = mode.pick(2, 3), [], []
    for turn in range(rounds):
        accepted, _ = until_refused(learner, lambda n, turn=turn: f"hold_parent 2 emq:{{fanin}}:job:JOBr{turn}x{n} "
                                    f"emq:{{fanin}}:job:JOBr{turn}x{n}:dependencies JOBr{turn}x{n} {VALUE} 3",
                                    budget // 900)
        counts.append(accepted)
        act(learner, "reset")
        held.append(memory_of(r, sandbox))
    grew = held[-1] > held[0] * 1.5
    return Row(f"`hold_parent 2 emq:{{fanin}}:job:JOB<new> …:dependencies JOB<new> <1,000 bytes> 3` until "
               f"refused, then Reset; {rounds} times", "lines accepted per round: " + ", ".join(map(str, counts)),
               None, held[-1], f"the sandbox's MEMORY USAGE after each Reset: {', '.join(f'{b:,}' for b in held)}"
               " bytes" + (" — the rows a script wrote survive Reset while the budget is given back" if grew
                           else ""), not grew)


def snapshot_size(mode: Mode, learner: httpx.Client) -> Row:
    learner.get("/api/widgets/fanin/state")
    fields = mode.pick(120, 600)  # 108 KB or 540 KB of values: either way past the 64 KB a snapshot may weigh
    codes = []
    for start in range(0, fields, 4):
        pairs = " ".join(f"f{j} {'y' * 900}" for j in range(start, start + 4))
        codes.append(console(learner, f"HSET emq:{{fanin}}:job:JOBbig {pairs}").status_code)
    state = learner.get("/api/widgets/fanin/state")
    found = {k["name"]: k for q in state.json()["snapshot"]["queues"] for k in q["keys"]} \
        if state.status_code == 200 else {}
    big = found.get("emq:{fanin}:job:JOBbig", {})
    return Row(f"{fields} fields of 900 bytes into one row (`HSET emq:{{fanin}}:job:JOBbig …`), then the "
               "fan-in's state", counted([*codes, state.status_code]), None, len(state.content),
               f"the row holds {fields * 900:,} bytes of values; the snapshot sent is {len(state.content):,} "
               f"bytes; the row shown with size {big.get('size')}, cut: {big.get('cut')}",
               state.status_code == 200 and len(state.content) < 64 * 1024)


def fairness(mode: Mode) -> Row:
    window = mode.pick(1.5, 10.0)
    with ValkeyProcess() as valkey:
        found = bench_fairness.run(valkey.url, window=window)
    quiet, loud, flood = found["unflooded"]["answer_ms"], found["flooded"]["answer_ms"], found["flood"]
    reads, writes = flood.get("reads", {}), flood.get("writes", {})
    return Row(f"another learner acts every 0.2 s ({window * 2:.0f} s unflooded, {window:.0f} s flooded) while one "
               "learner sends 200 state reads and 50 console writes a second (default rate limits, uvicorn)",
               f"flood reads: {counted_map(reads.get('statuses', {}))}; writes: "
               f"{counted_map(writes.get('statuses', {}))}; the other's actions: "
               f"{counted_map(found['flooded']['statuses'])}", found["seconds"], None,
               f"the other's action p50 / p99: {quiet['p50']} / {quiet['p99']} ms unflooded, {loud['p50']} / "
               f"{loud['p99']} ms flooded (p50 ×{found['ratio_p50']}); flood achieved {reads.get('rate')} reads "
               f"and {writes.get('rate')} writes a second", 0 < found["ratio_p50"] <= 2.0)


def counted_map(statuses: dict[str, int]) -> str:
    return ", ".join(f"{n} × {code}" for code, n in sorted(statuses.items())) or "none"
