"""The report's parts about learners at scale, one learner's fairness and the
grader (issues 28, 29 and 30): their rows of the figures table, the level by
level section, and their notes. Written from the run's results only."""

from __future__ import annotations

from typing import Any

from bench.bench_grader import render
from bench.bench_learners import CPU_RATIO
from bench.markdown import profile_table, table

LEARNERS_HEADING = "## Learners this machine holds"


def verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def knee_text(side: dict[str, Any] | None) -> str:
    """The last level that held: "≥ top" when every level held, "< first" when none did."""
    if not side or not side.get("levels"):
        return "not measured"
    if side["held_every_level"]:
        return f"≥ {side['top']:,}"
    if side["knee"] == 0:
        return f"< {side['levels'][0]['learners']:,}"
    return f"{side['knee']:,}"


def p50_p99(found: dict[str, Any]) -> str:
    return f"{found['p50']} / {found['p99']}"


def failed(found: Any) -> str | None:
    return str(found["error"]) if isinstance(found, dict) and "error" in found else None


def learner_rows(r: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    for key, label in (("learners", "Learners this machine holds"), ("fairness", "Fairness"),
                       ("grader", "Grader")):
        if (error := failed(r.get(key))) is not None:
            rows.append([label, f"not measured: {error}", "—", "—", "—", "**not measured**"])
    lr = None if failed(r.get("learners")) else r.get("learners")
    if lr:
        site, bare = lr.get("site"), lr.get("bare")
        target = lr["target_learners"]
        above = bool(site) and (site["knee"] > target or (site["held_every_level"] and site["top"] > target))
        ratio = f"{site['knee'] / bare['knee']:.2f}×" if site and bare and site["knee"] and bare["knee"] else "—"
        rows.append([f"Learners this machine holds (probe click→frame p99 ≤ {lr['p99_limit_ms']:.0f} ms, "
                     "no failed answer)", knee_text(site), f"{knee_text(bare)} (bare EVALSHA + SSE)", ratio,
                     f"> {target:,}", verdict(above)])
        flat, bare_flat = (site or {}).get("cpu_flat"), (bare or {}).get("cpu_flat")
        if flat:
            rows.append([f"Valkey CPU per action net of idle, {flat['low']:,} → {flat['high']:,} learners (µs)",
                         f"{flat['low_us']} → {flat['high_us']}",
                         f"{bare_flat['low_us']} → {bare_flat['high_us']} (bare, {bare_flat['low']:,} → "
                         f"{bare_flat['high']:,})" if bare_flat else "—",
                         f"{flat['ratio']:.2f}×", f"≤ {CPU_RATIO}× (independent of learners online)",
                         verdict(flat["ratio"] <= CPU_RATIO)])
    fair = None if failed(r.get("fairness")) else r.get("fairness")
    if fair:
        loud, quiet = fair["flooded"]["answer_ms"], fair["unflooded"]["answer_ms"]
        rows += [["Fairness: another learner's action p50 while one floods reads and console writes (ms)",
                  f"{loud['p50']}", f"{quiet['p50']} (the same learner, no flood)", f"{fair['ratio_p50']:.2f}×",
                  f"≤ {fair['target_ratio']:.0f}×", verdict(fair["ratio_p50"] <= fair["target_ratio"])],
                 ["Fairness: another learner's action p99 while one floods (ms)", f"{loud['p99']}",
                  f"{quiet['p99']} (the same learner, no flood)", f"{fair['ratio_p99']:.2f}×", "—", "(reported)"]]
    grader = None if failed(r.get("grader")) else r.get("grader")
    if grader:
        for name, row in grader["exercises"].items():
            graded, direct = row["graded_ms"], row["direct_ms"]
            rows.append([f"Grader: a run of \"{name}\" ({row['checks']} checks), p50 / p99 (ms)", p50_p99(graded),
                         f"{p50_p99(direct)} (same scenarios, the course's script direct)",
                         f"{graded['p50'] / direct['p50']:.2f}×" if direct["p50"] else "—", "—", "(reported)"])
        rows.append([f"Grader: runs per second the pool holds ({grader['graders']} graders)",
                     f"{grader['runs_per_second']:,.0f}", "—", "—", "—", "(reported)"])
    return rows


def levels_table(lr: dict[str, Any]) -> str:
    by_level: dict[int, dict[str, Any]] = {}
    for kind in ("site", "bare"):
        for level in (lr.get(kind) or {}).get("levels", []):
            by_level.setdefault(level["learners"], {})[kind] = level
    rows = []
    for learners, sides in sorted(by_level.items()):
        site, bare = sides.get("site"), sides.get("bare")

        def probe(level: dict[str, Any] | None) -> str:
            return p50_p99(level["probe"]["click_to_frame_ms"]) if level else "—"

        def held(level: dict[str, Any] | None) -> str:
            return "—" if level is None else ("held" if level["held"] else "**no**")

        rows.append([f"{learners:,}", probe(site), probe(bare),
                     f"{site['actions_per_second']}" if site else "—",
                     f"{site['valkey_net_us_per_action']} / {bare['valkey_net_us_per_action'] if bare else '—'}"
                     if site else (f"— / {bare['valkey_net_us_per_action']}" if bare else "—"),
                     f"{site['server_cpu_us_per_action']}" if site else "—",
                     f"{site['valkey_cpu_share']:.0%} / {site['server_cpu_share']:.0%}" if site else "—",
                     f"{held(site)} / {held(bare)}"])
    return table(["learners online", "site: probe click→frame p50 / p99 ms", "bare: p50 / p99 ms",
                  "site actions/s", "Valkey CPU µs per action (net of idle), site / bare",
                  "site process CPU µs per action",
                  "site: Valkey / site process, share of a core", "held: site / bare"], rows)


def learners_section(r: dict[str, Any]) -> list[str]:
    lr = r.get("learners")
    if not lr or failed(lr):
        return []
    site, bare = lr.get("site") or {}, lr.get("bare") or {}
    return [LEARNERS_HEADING, "",
            f"Simulated learners, each with its page's stream open and one action every {lr['period_seconds']:g} s "
            f"in its own sandbox ({lr['mix']}), raised level by level; at each level a probe learner acts every "
            f"{lr['probe_every_seconds']:g} s for {lr['window_seconds']:g} s and times each click to its frame. "
            f"A level holds while the probe's p99 stays within {lr['p99_limit_ms']:.0f} ms and no answer fails. "
            f"The site holds **{knee_text(site)}** learners; the bare one-EVALSHA endpoint with a bare SSE stream, "
            f"**{knee_text(bare)}** (same run, same Valkey, same load generator, {lr.get('workers', 1)} uvicorn "
            f"worker{'s' if lr.get('workers', 1) != 1 else ''} on each side).", "",
            levels_table(lr), ""]


def pct(share: float | None) -> str:
    return "—" if share is None else f"{share:.1%}"


def failures(level: dict[str, Any]) -> str:
    crowd, probe = level["crowd"]["window"], level["probe"]
    odd = {k: v for k, v in {**crowd.get("statuses", {}), **probe.get("statuses", {})}.items()
           if not k.startswith("2")}
    parts = [f"{n} {what}" for what, n in (
        ("learners that could not arrive", level["arrival_failures"]),
        ("non-2xx answers", crowd["non_2xx"] + probe["non_2xx"]),
        ("connection errors", crowd["action_errors"] + probe["errors"]),
        ("streams failed", crowd["stream_failures"]), ("probe frames that never came", probe["frames_missing"]))
        if n]
    if odd:
        parts.append("statuses " + ", ".join(f"{k}: {v}" for k, v in sorted(odd.items())))
    return ", ".join(parts) or "none"


def learners_notes(r: dict[str, Any]) -> list[str]:
    lr = r.get("learners")
    if not lr:
        return []
    out = ["### Learners this machine holds", "",
           "`bench/bench_learners.py` (its docstring says how; the learners are `bench/crowd.py`, a process of "
           "their own). The site's learner opens the dive (its cookie), then the page's stream, and acts on a "
           "connection of its own per action (a browser's idle connection is closed after uvicorn's 5 s); the "
           "bare learner opens `/stream/<learner>` of `bench/baseline_app.py` and POSTs `/act/<learner>`: one "
           "EVALSHA that INCRs the learner's key and PUBLISHes the value on one channel, which the process's one "
           "SUBSCRIBE hands to the learner's streams. Valkey's CPU is INFO cpu's `used_cpu_sys + used_cpu_user` "
           "over each window, less what Valkey spent per second with nobody acting (measured before the first "
           f"level: site side {pct((lr.get('site') or {}).get('valkey_idle_cpu_share'))}, bare side "
           f"{pct((lr.get('bare') or {}).get('valkey_idle_cpu_share'))} of a core), divided by every action of "
           "the window (the crowd's and the probe's); the site's is its uvicorn processes' (workers and "
           "supervisor), from /proc (whole, with their idle work). The site runs with its stream lifetime at an "
           "hour (learners that arrived together would otherwise all reconnect together, mid-level).", ""]
    rows = []
    for kind in ("site", "bare"):
        for level in (lr.get(kind) or {}).get("levels", []):
            crowd = level["crowd"]["window"]
            lag = level["probe"].get("own_lag_ms") or {}
            mine = sum(level.get(k, 0.0) for k in ("server_cpu_share", "valkey_cpu_share", "crowd_cpu_share",
                                                     "probe_cpu_share"))
            rows.append([kind, f"{level['learners']:,}", str(level["online"]), f"{level['arrival_seconds']}",
                         p50_p99(crowd["answer_ms"]), p50_p99(level["probe"]["answer_ms"]), str(crowd["frames"]),
                         f"{level.get('server_cpu_share', 0):.2f} / {level.get('valkey_cpu_share', 0):.2f} / "
                         f"{level.get('crowd_cpu_share', 0):.2f} / "
                         f"{max(0.0, level.get('machine_cores_busy', 0) - mine):.2f}",
                         f"{lag.get('p99', '—')} / {lag.get('max', '—')}", failures(level)])
    out += [table(["side", "learners", "streams open", "arrival s", "crowd answer p50 / p99 ms",
                   "probe answer p50 / p99 ms", "frames received",
                   "cores busy: server / Valkey / crowd / everything else", "probe's own loop lag p99 / max ms",
                   "failures in the window"], rows), "",
            "Cores busy: CPU seconds per second of the window, by process (/proc, INFO cpu); *everything else* is "
            "the whole machine's busy time (/proc/stat) less those and the probe's own: other work on these CPUs. "
            "The probe's own loop lag is how late its own 10 ms sleeps woke: the machine's noise as the probe met "
            "it, not the server's.", ""]
    errors = [f"{kind}: {(lr.get(kind) or {}).get('server_errors', 0)}" for kind in ("site", "bare")]
    out += [f"Unhandled errors logged by the servers during the climb: {', '.join(errors)}.", ""]
    prof = (lr.get("site") or {}).get("profile")
    if prof:
        out += [f"Where the site's time went at {prof['learners']:,} learners (py-spy, "
                f"{prof.get('samples', 0):,} samples over a window after the measured one):", "",
                profile_table(prof), ""]
    return out


def fairness_notes(r: dict[str, Any]) -> list[str]:
    fair = r.get("fairness")
    if not fair:
        return []
    flood = fair.get("flood") or {}
    rows = []
    for label, found in (("no flood (before and after)", fair["unflooded"]), ("one learner flooding", fair["flooded"])):
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(found["statuses"].items()))
        rows.append([label, str(found["actions"]), p50_p99(found["answer_ms"]),
                     p50_p99(found["click_to_frame_ms"]), codes])
    floods = []
    for what in ("reads", "writes"):
        got = flood.get(what) or {}
        codes = ", ".join(f"{k}: {v}" for k, v in sorted((got.get("statuses") or {}).items()))
        floods.append(f"{what}: {got.get('rate', 0)} a second of {got.get('target_rate', 0)} asked ({codes})")
    return ["### Fairness", "",
            "`bench/bench_fairness.py` (its docstring says how): the site with its default rate limits; one "
            f"learner acts every {fair['every_seconds']:g} s (the fan-in's tour), unflooded for "
            f"{fair['window_seconds'] / 2:g} s, while another learner floods for {fair['window_seconds']:g} s, "
            f"and unflooded for {fair['window_seconds'] / 2:g} s again.", "",
            table(["the other learner", "actions", "answer p50 / p99 ms", "click→frame p50 / p99 ms", "answers"],
                  rows), "",
            "The flood, from one sandbox with its page's stream open: " + "; ".join(floods) + ".", ""]


def grader_notes(r: dict[str, Any]) -> list[str]:
    g = r.get("grader")
    if not g:
        return []
    return ["### The exercise grader", "",
            "`bench/bench_grader.py` (its docstring says how): each exercise's own course script graded on an idle "
            "pool (a run's ACL user, every check's scenario, the watchdog, the sweep) beside the same scenarios "
            "run directly with the course's script; then runs per second the default pool holds.", "",
            render(g), ""]


def dropped_notes() -> list[str]:
    return ["### What this report no longer shows", "",
            "- **Lean vs stock redis-py**: the lean client is gone; the site runs stock redis-py (a plain "
            "`ConnectionPool`, hiredis packing commands). There is nothing left to compare.",
            "- **Click to first paint**: a page paints one way only, the stream's snapshot; the answer carries no "
            "snapshot. *Settled* is now the later of the answer and the paint of the action's snapshot "
            "(`data-ver` at least the answer's, and the readout); the answer and the paint are shown apart.",
            "- **The 1 Reset : 3 \"Complete child\" mix**: a learner walking the fan-in's tour does 2 Resets in "
            "14 actions, not 1 in 4; the throughput mix and every load generator walk the tour now.", ""]
