"""The site behind Debian's nginx, configured by tools/nginx/flows-lab.conf
(the file docs/DEPLOY.md describes): pages and the live stream go through,
the stream unbuffered, and a client that dribbles its header is cut off by
nginx's header deadline, which uvicorn alone does not have."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server.valkey.process import ValkeyProcess, free_port
from tests.integration.ops.serving import ROOT, wait_for
from tests.support import Events, deps, running

SITE_CONF = ROOT / "tools" / "nginx" / "flows-lab.conf"
HEADER_DEADLINE = 2  # seconds; the shipped file says 10s, shortened here to keep the test short


def nginx_binary() -> str:
    # Debian puts it in /usr/sbin, which is not on every user's PATH.
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found is None:
        pytest.fail("nginx not found: `make test-integration` installs Debian's nginx (the `nginx` target)")
    return found


def nginx_conf(folder: Path, listen: int, upstream: int) -> Path:
    site = SITE_CONF.read_text()
    for old, new in (("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};"),
                     ("listen 80;", f"listen 127.0.0.1:{listen};"),
                     ("client_header_timeout 10s;", f"client_header_timeout {HEADER_DEADLINE}s;")):
        assert old in site, f"{SITE_CONF} no longer says {old!r}"
        site = site.replace(old, new)
    (folder / "flows-lab.conf").write_text(site)
    temp = "\n".join(f"    {kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi",
                                                                          "uwsgi", "scgi"))
    conf = folder / "nginx.conf"
    conf.write_text(f"""
{"user root;" if os.geteuid() == 0 else ""}
worker_processes 1;
daemon off;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} warn;
events {{ worker_connections 512; }}
http {{
    access_log off;
{temp}
    include {folder / "flows-lab.conf"};
}}
""")
    return conf


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """nginx's URL, in front of a real site on a Valkey of its own."""
    folder = tmp_path_factory.mktemp("nginx")
    port = free_port()
    env = {"EMQLAB_TRUST_FORWARDED_FOR": "1", "EMQLAB_PUBLIC_ORIGIN": f"http://127.0.0.1:{port}"}
    with ValkeyProcess() as valkey, running(valkey.url, env) as site:
        conf = nginx_conf(folder, port, site.port)
        binary = nginx_binary()
        argv = [binary, "-p", str(folder), "-c", str(conf), "-e", str(folder / "error.log")]
        checked = subprocess.run([*argv, "-t"], capture_output=True, text=True, check=False)
        assert checked.returncode == 0, checked.stderr
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: proc.poll() is None and reachable(port), 10, "nginx listening")
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def reachable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def test_pages_go_through_nginx(nginx: str) -> None:
    for path in ("/", "/flows/parent-and-children"):
        answer = httpx.get(nginx + path, timeout=10)
        assert answer.status_code == 200, (path, answer.status_code)
        assert "<html" in answer.text.lower()
    assert answer.headers["server"].startswith("nginx")


def test_the_stream_through_nginx_delivers_its_first_event_at_once(nginx: str) -> None:
    with httpx.Client(base_url=nginx, timeout=10) as client:
        assert client.get("/flows/parent-and-children").status_code == 200  # the sandbox cookie
        started = time.monotonic()
        with client.stream("GET", "/api/stream", params={"widgets": "fanin"}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            first = next(line for line in stream.iter_lines() if line.startswith("event:"))
        # a liveness bound: a buffered proxy would hold the events back until its buffer filled
        assert time.monotonic() - started < 5
    assert first.split(":", 1)[1].strip() in ("status", "snapshot")


def test_an_action_through_nginx_reaches_the_stream_of_the_page(nginx: str) -> None:
    with httpx.Client(base_url=nginx, timeout=10, headers={"Origin": nginx}) as client:
        assert client.get("/flows/parent-and-children").status_code == 200  # the sandbox cookie
        with client.stream("GET", "/api/stream", params={"widgets": "fanin"}) as stream:
            events = Events(stream)
            events.until("widget", widget="fanin")
            acted = client.post("/api/widgets/fanin/complete-child", json={})
            assert acted.status_code == 200, acted.text
            # the page's stream brings the action's drawing, through the proxy, unbuffered
            seen = events.until("widget", timeout=10, ver=acted.json()["ver"])
    assert deps(seen[-1][1]) == 2


def test_nginx_cuts_off_a_client_that_dribbles_its_header(nginx: str) -> None:
    port = int(nginx.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: flows\r\n")
        closed_at = None
        started = time.monotonic()
        while time.monotonic() - started < HEADER_DEADLINE + 8:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
                sock.settimeout(0.5)
                if sock.recv(4096) == b"":
                    closed_at = time.monotonic()
                    break
            except TimeoutError:
                continue
            except OSError:
                closed_at = time.monotonic()
                break
    assert closed_at is not None, "nginx kept a dribbling client past its header deadline"
