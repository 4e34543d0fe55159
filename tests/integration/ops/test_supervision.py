"""The managed valkey-server is supervised (real processes): killed, it is
reaped and started again on the same port and data, with one log line; one
that keeps failing is tried again after growing pauses, not in a busy loop."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

import pytest
import redis

from server.valkey.process import ValkeyProcess
from server.valkey.supervise import LONGEST_PAUSE, Supervisor
from tests.integration.ops.serving import Serve, state_of, valkeys_of, wait_for

RESTARTED = "started it again on the same port and data"


def test_a_killed_valkey_is_reaped_and_back_on_the_same_url_with_its_keys_and_one_log_line(tmp_path: Path) -> None:
    with Serve(tmp_path) as site:
        assert site.proc is not None
        serve_pid = site.proc.pid
        r = site.redis()
        r.set("ops:before-the-kill", "kept")
        [old] = valkeys_of(serve_pid)
        os.kill(old, signal.SIGKILL)

        def back() -> int | None:
            pids = [pid for pid in valkeys_of(serve_pid) if pid != old]
            try:
                return pids[0] if pids and r.ping() else None
            except redis.ConnectionError:
                return None

        new = wait_for(back, 10, "a new valkey-server answering PING on the same URL")
        assert state_of(old) is None, f"the killed valkey-server is still a process ({state_of(old)})"
        assert r.get("ops:before-the-kill") == "kept"
        wait_for(lambda: RESTARTED in site.said(), 5, "the restart's log line")
        lines = [line for line in site.said().splitlines() if "valkey-server on port" in line]
        assert len(lines) == 1 and "killed by SIGKILL" in lines[0] and f"pid {new}" in lines[0]
    assert site.stop() == 0


def test_the_pause_before_a_restart_doubles_with_each_death_in_a_row_up_to_a_cap() -> None:
    pauses = [Supervisor.pause(deaths) for deaths in range(10)]
    assert pauses[:5] == [0.0, 0.5, 1.0, 2.0, 4.0]
    assert max(pauses) == LONGEST_PAUSE == pauses[-1]


def test_a_valkey_that_will_not_start_is_tried_after_growing_pauses_then_comes_back(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="emqlab.valkey")
    server = ValkeyProcess(home=None)
    server.start()
    supervisor = Supervisor([server], poll=0.05)
    supervisor.start()
    try:
        binary, server.binary = server.binary, sys.executable  # python refuses valkey's flags: every start fails
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGKILL)
        wait_for(lambda: "did not start again" in caplog.text, 5, "the first failed start's line")
        tried = caplog.text.count("did not start again")
        # tries 0, 0.5 and 1.5 s after the death: three lines in about two seconds, not one per poll
        wait_for(lambda: caplog.text.count("did not start again") >= 3, 5, "the third try")
        assert caplog.text.count("did not start again") <= tried + 2
        server.binary = binary
        wait_for(lambda: RESTARTED in caplog.text, 10, "the server started again once it can start")
        assert redis.Redis(port=server.port).ping()  # back on its own port
        assert caplog.text.count(RESTARTED) == 1 and supervisor.restarts == 1
    finally:
        supervisor.stop()
        server.stop()
