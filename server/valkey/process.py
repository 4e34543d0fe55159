"""A valkey-server child process that Flows Lab starts, owns and stops.

`emqlab serve` uses it when no `EMQLAB_VALKEY_URL` is set, and the test
fixtures use it for every integration and end-to-end test, so both run on the
same real server configured the same way, the EMQ module loaded (every
primary of a cluster too) when it is built.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from server.live.heartbeat import NOTIFY_FLAGS  # what the live stream needs on, written once
from server.valkey import native


def free_port() -> int:
    """Ask the kernel for a loopback port nobody is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG: if the Python process is killed outright (SIGKILL),
    # the kernel still stops the valkey-server it started.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)
    except OSError:
        pass


class ValkeyProcess:
    """One managed valkey-server: free loopback port, temp dir, no persistence."""

    def __init__(self, port: int | None = None, binary: str = "valkey-server", load_module: bool = True,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.binary = shutil.which(binary) or binary
        self.port = port or free_port()
        # Tests start a server without the module, or with more settings, too.
        self.load_module = load_module
        self.extra_args = extra_args
        self.dir = Path(tempfile.mkdtemp(prefix="emqlab-valkey-"))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        return [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.dir),
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--notify-keyspace-events", NOTIFY_FLAGS,
            "--logfile", str(self.dir / "valkey.log"),
            # The EMQ module (EMQ.COMPLETE, EMQ.FAIL) once `make module` built it.
            *(["--loadmodule", str(native.module_path())] if self.load_module and native.built() else []),
            *self.extra_args,
        ]

    def start(self, timeout: float = 10.0) -> str:
        if not shutil.which(self.binary):
            raise RuntimeError(
                f"{self.binary} not found: run `make serve` or `make test`, which install it"
            )
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 -- runs before any thread of ours exists in the child
        )
        self.wait_ready(timeout)
        return self.url

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                log = (self.dir / "valkey.log")
                tail = log.read_text()[-800:] if log.exists() else ""
                raise RuntimeError(f"valkey-server exited early ({self.proc.returncode}): {tail}")
            if self.ping():
                return
            time.sleep(0.02)
        raise RuntimeError(f"valkey-server did not answer on port {self.port} within {timeout}s")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self, remove_dir: bool = True) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None
        if remove_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ValkeyProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


class ClusterNode(ValkeyProcess):
    """A valkey-server with cluster mode on; its bus port is picked free too
    (the default, port + 10000, may be taken or out of range)."""

    def __init__(self) -> None:
        super().__init__()
        self.bus_port = free_port()

    def command(self) -> list[str]:
        return [
            *super().command(),
            "--cluster-enabled", "yes",
            "--cluster-config-file", str(self.dir / "nodes.conf"),
            "--cluster-port", str(self.bus_port),
            "--cluster-node-timeout", "2000",
        ]


class ValkeyCluster:
    """A managed Valkey Cluster of `primaries` nodes, joined by valkey-cli.

    Real processes, real slot ownership: a script whose keys span two slots is
    refused by the server with CROSSSLOT, exactly as in production.
    """

    def __init__(self, primaries: int = 3, cli: str = "valkey-cli") -> None:
        self.cli = shutil.which(cli) or cli
        self.nodes = [ClusterNode() for _ in range(primaries)]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self, timeout: float = 30.0) -> str:
        if not shutil.which(self.cli):
            raise RuntimeError(f"{self.cli} not found: run `make serve` or `make test`, which install valkey-tools")
        try:
            for node in self.nodes:
                node.start()
            addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
            subprocess.run(
                [self.cli, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
                check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
        except BaseException:
            self.stop()  # no node left behind by a start that failed halfway
            raise
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.cluster_ok(node) for node in self.nodes):
                return self.url
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("the Valkey cluster did not reach cluster_state:ok")

    def cluster_ok(self, node: ValkeyProcess) -> bool:
        done = subprocess.run(
            [self.cli, "-p", str(node.port), "CLUSTER", "INFO"], capture_output=True, text=True, check=False
        )
        return "cluster_state:ok" in done.stdout

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> ValkeyCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
