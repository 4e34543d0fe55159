"""Issue 28, item 9: slow clients. Half-open connections (a header line now
and then, never the blank line) against `emqlab serve` run with few file
descriptors, past uvicorn's `limit_concurrency` and past the descriptors
themselves; then the same through Debian's nginx configured by
tools/nginx/flows-lab.conf, whose `client_header_timeout` cuts them."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx

from bench.rawhttp import raise_fd_limit
from bench.reliability_drive import ROOT, Mode, Row, act, client, counted, status_of, visitor, wait_for
from bench.reliability_procs import Serve, scratch
from server.listen import connection_limits
from server.valkey.process import free_port

DESCRIPTORS = 256  # the site's descriptor limit here, so a few hundred sockets reach every bound
SITE_CONF = ROOT / "tools" / "nginx" / "flows-lab.conf"


def few_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


def half_open(port: int, wait: bool) -> socket.socket:
    sock = socket.socket()
    if wait:
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"GET / HTTP/1.1\r\nHost: flows\r\n")
    else:  # past the backlog the kernel drops the SYN: do not wait for it
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


def dribble(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.send(b"X-Slow: 1\r\n")


def closed(sock: socket.socket) -> bool:
    """Whether the other end closed (or answered and closed) the connection."""
    try:
        sock.recv(4096)  # an end of file, or an answer (nginx's 408) before the close
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def slow_site(mode: Mode) -> list[Row]:
    raise_fd_limit(4 * DESCRIPTORS)
    limit, backlog = connection_limits(DESCRIPTORS)
    every, rounds = mode.pick(0.5, 5.0), mode.pick(2, 4)
    site = Serve(scratch("slow"), "--ephemeral", preexec=few_descriptors)
    sockets: list[socket.socket] = []
    with site:
        logged = len(site.said())  # what it said before the slow clients came
        flooded = time.monotonic()
        try:
            sockets += [half_open(site.port, wait=True) for _ in range(limit)]
            over, seconds = wait_for(lambda: status_of(lambda: httpx.get(site.url + "/", timeout=3)) == 503, 10)
            sockets += [half_open(site.port, wait=False) for _ in range(DESCRIPTORS)]
            during = []
            for _ in range(rounds):  # a header line every few seconds, past the descriptors too
                dribble(sockets)
                during.append(status_of(lambda: httpx.get(site.url + "/", timeout=1)))
                time.sleep(every)
            still = sum(not closed(sock) for sock in sockets[:limit])
        finally:
            for sock in sockets:
                sock.close()
        gone = time.monotonic()
        flooded = round(gone - flooded, 1)
        back, _ = wait_for(lambda: status_of(lambda: httpx.get(site.url + "/", timeout=3)) == 200, 30)
        recovered = round(time.monotonic() - gone, 2)
        log = site.said()[logged:]
    lines = [line for line in log.splitlines() if line.strip() and not line.startswith("emqlab:")]
    return [
        Row(f"{limit} half-open connections (limit_concurrency for {DESCRIPTORS} descriptors; backlog {backlog}), "
            "then a normal GET", "503" if over else "no 503", seconds if over else None, None,
            "a request past the limit answered at once", bool(over)),
        Row(f"{DESCRIPTORS} more connections (past the descriptors), a header line on each every {every:g} s for "
            f"{rounds * every:g} s, a normal GET each round (0: no answer within 1 s: no descriptor left to "
            "accept it)", counted(during), None, None,
            f"half-open connections the site still held at the end: {still} of {limit} (uvicorn has no header "
            "timeout)", all(code in (0, 503) for code in during)),
        Row("every slow client gone: a normal GET until 200", "200" if back else "none", recovered if back else None,
            None, "", bool(back)),
        Row("the site's log meanwhile", "—", None, len(log.encode()),
            f"{len(lines)} lines in {flooded} s, {log.count('Traceback')} tracebacks (the errors a flood repeats: "
            "one line a second each at most): " + " / ".join(x[:100] for x in lines[:3]),
            "Traceback" not in log and len(lines) <= 2 * flooded + 5),
    ]


def nginx_binary() -> str | None:
    # Debian puts it in /usr/sbin, which is not on every user's PATH
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")


def nginx_conf(folder: Path, listen: int, upstream: int, deadline: int) -> Path:
    site = SITE_CONF.read_text()
    for old, new in (("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};"),
                     ("listen 80;", f"listen 127.0.0.1:{listen};"),
                     ("client_header_timeout 10s;", f"client_header_timeout {deadline}s;")):
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
events {{ worker_connections 1024; }}
http {{
    access_log off;
{temp}
    include {folder / "flows-lab.conf"};
}}
""")
    return conf


def behind_nginx(mode: Mode) -> list[Row]:
    binary = nginx_binary()
    if binary is None:
        return [Row("the same through nginx", "—", None, None, "nginx is not installed (`make nginx`)", False)]
    deadline, count, every = mode.pick(1, 10), mode.pick(100, 400), mode.pick(0.25, 2.0)
    folder = scratch("nginx")
    port = free_port()
    env = {"EMQLAB_TRUST_FORWARDED_FOR": "1", "EMQLAB_PUBLIC_ORIGIN": f"http://127.0.0.1:{port}"}
    with Serve(folder, env=env) as site:
        argv = [binary, "-p", str(folder), "-c", str(nginx_conf(folder, port, site.port, deadline)),
                "-e", str(folder / "error.log")]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_for(lambda: status_of(lambda: httpx.get(url + "/", timeout=1)) == 200, 15)
            sockets = [half_open(port, wait=True) for _ in range(count)]
            started, during = time.monotonic(), []
            cut_at: dict[int, float] = {}  # socket's index -> seconds after the first header line
            learner = visitor(url)
            while len(cut_at) < count and time.monotonic() - started < deadline + 15:
                dribble([s for n, s in enumerate(sockets) if n not in cut_at])
                during.append(status_of(lambda: client(url).get("/")))
                during.append(status_of(lambda: act(learner, "complete-child")))
                time.sleep(every)
                cut_at.update({n: time.monotonic() - started for n, s in enumerate(sockets)
                               if n not in cut_at and closed(s)})
            for sock in sockets:
                sock.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        logged = site.said()
    cut = sorted(cut_at.values())
    return [
        Row(f"{count} connections to nginx (client_header_timeout {deadline}s), a header line on each every "
            f"{every} s", f"{len(cut)} of {count} closed by nginx", round(cut[-1], 1) if cut else None, None,
            f"closed between {cut[0]:.1f} and {cut[-1]:.1f} s" if cut else "none closed", len(cut) == count),
        Row("meanwhile, through nginx: a page and the learner's action each round", counted(during), None, None,
            "", bool(during) and all(code == 200 for code in during)),
        Row("nginx's error log and the site's log", "—", None, (folder / "error.log").stat().st_size
            if (folder / "error.log").exists() else 0, f"site log: {len(logged.splitlines())} lines, "
            f"{logged.count('Traceback')} tracebacks", "Traceback" not in logged),
    ]


def slow_clients(mode: Mode) -> list[Row]:
    return [*slow_site(mode), *behind_nginx(mode)]
