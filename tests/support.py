"""Helpers shared by the integration and e2e suites: the real site under uvicorn."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

import redis

from server.valkey_process import ValkeyProcess, free_port

INSTRUCTOR_TOKEN = "e2e-instructor-token"


@dataclass
class Site:
    url: str
    valkey: ValkeyProcess
    proc: subprocess.Popen[bytes]

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.valkey.url, decode_responses=True)


def start_site(valkey_url: str, extra_env: dict[str, str] | None = None) -> tuple[str, subprocess.Popen[bytes]]:
    """Run the real app under uvicorn on a free port; return its URL once it answers."""
    port = free_port()
    env = {
        **os.environ,
        "EMQLAB_VALKEY_URL": valkey_url,
        "EMQLAB_INSTRUCTOR_TOKEN": INSTRUCTOR_TOKEN,
        "EMQLAB_RATE_LIMIT": "100000",
        **(extra_env or {}),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "server.cli:app_from_env", "--factory",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the site exited early with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/", timeout=1) as response:
                if response.status == 200:
                    return url, proc
        except OSError:
            time.sleep(0.1)
    proc.terminate()
    raise RuntimeError("the site did not answer within 20 s")


def stop_site(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
