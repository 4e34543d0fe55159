"""The managed valkey-server is supervised (real processes): killed, it is
reaped and started again on the same port and data, with one log line, back
within 5 s however many times in a row it is killed; one that will not start
is tried again after growing pauses, not in a busy loop."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

import pytest
import redis

from server.valkey.process import ValkeyProcess
from server.valkey.supervise import FIRST_KILLED, FIRST_PAUSE, LONGEST_KILLED, LONGEST_PAUSE, Supervisor, pause
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


def test_the_pause_after_a_kill_stays_short_and_after_a_failed_start_doubles_up_to_a_cap() -> None:
    killed = [pause(deaths, FIRST_KILLED, LONGEST_KILLED) for deaths in range(50)]
    assert killed[:4] == [0.0, 0.25, 0.5, 1.0]
    assert max(killed) == LONGEST_KILLED == killed[-1] == 1.0
    failed = [pause(failures, FIRST_PAUSE, LONGEST_PAUSE) for failures in range(1, 50)]
    assert failed[:5] == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert max(failed) == LONGEST_PAUSE == failed[-1]


def test_a_valkey_killed_eight_times_in_a_row_is_back_within_5_s_each_time(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="emqlab.valkey")
    server = ValkeyProcess(home=None)
    server.start()
    supervisor = Supervisor([server], poll=0.05)
    supervisor.start()
    try:
        r = redis.Redis(port=server.port, socket_timeout=1)
        for kill in range(8):
            assert server.proc is not None
            old = server.proc.pid
            os.kill(old, signal.SIGKILL)

            def back(old: int = old, kill: int = kill) -> bool:
                proc = server.proc
                try:  # its restart logged, and the new process answering
                    return supervisor.restarts == kill + 1 and proc is not None and proc.pid != old and bool(r.ping())
                except redis.ConnectionError:
                    return False

            # a liveness deadline (the design's 5 s), not a speed claim
            wait_for(back, 5, f"valkey-server answering again after kill {kill + 1}")
        assert caplog.text.count(RESTARTED) == 8
        assert "did not start again" not in caplog.text
    finally:
        supervisor.stop()
        server.stop()


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
