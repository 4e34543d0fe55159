"""The console's benchmark runs for about a second, so it does not rot (no time is asserted)."""

from __future__ import annotations

import shutil

import pytest

from bench import bench_console, servers
from server.valkey.process import ValkeyProcess

# `make bench-smoke` runs it, not `make test`: it keeps a benchmark running, it tests no feature.
pytestmark = pytest.mark.bench_smoke


def test_the_console_benchmark_reads_and_refuses_with_numbers_and_no_errors() -> None:
    if shutil.which("wrk") is None:
        pytest.fail("wrk is not installed: `make test` installs it (Debian package wrk)")
    with ValkeyProcess() as valkey, servers.serve_site(valkey.url) as site, \
            servers.serve_baseline(valkey.url) as base:
        result = bench_console.run(site.url, base.url, seconds=1, connections=8)
    read, refused = result["console_read"], result["console_refusal"]
    assert read["rps"] > 0 and set(read["status_codes"]) == {"200"} and read["errors"]["connect"] == 0
    assert refused["rps"] > 0 and set(refused["status_codes"]) == {"403"}
    assert result["plans_per_second"] > 0 and result["baseline"]["rps"] > 0
