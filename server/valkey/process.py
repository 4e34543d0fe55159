"""A valkey-server child process (or a cluster of them) that Flows Lab starts, owns and stops.

`emqlab serve` and the test fixtures run the same server configured the same
way. Without a `home` it keeps nothing (a temporary folder); with one it keeps
an append-only file there and comes back with every key (see datadir.py).
"""

from __future__ import annotations

import ctypes
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from server.valkey import client, engine, native

# Keyspace channels, every event class: what the live stream listens for
# (here, below the live package, because the managed server starts with them).
NOTIFY_FLAGS = "KA"

# Loaded once in the parent: the child of a fork must not dlopen (another
# thread of ours may hold the loader's lock at the moment of the fork).
try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL("libc.so.6", use_errno=True)
except OSError:
    _LIBC = None
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """Whether `port` can be bound now (as valkey-server binds: SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ask(port: int, words: str, timeout: float = 0.2) -> bytes:
    """One inline command to the server on `port`, its raw reply (OSError when none comes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(words.encode() + b"\r\n")
        return sock.recv(4096)


def _answers(port: int, words: str, expected: bytes) -> bool:
    try:
        return expected in _ask(port, words)
    except OSError:
        return False


def _command(port: int, words: str) -> None:
    """One command the server must accept (its words need no quoting); an error reply raises."""
    reply = _ask(port, words, timeout=5)
    if reply.startswith(b"-"):
        raise RuntimeError(f"{words} on port {port}: {reply.decode(errors='replace').strip()}")


def _die_with_parent() -> None:
    # If the site is killed outright (SIGKILL), the kernel still stops its server. The
    # "parent" is the starting thread: the supervisor's ends only at shutdown.
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ValkeyProcess:
    def __init__(self, port: int | None = None, load_module: bool = True, extra_args: tuple[str, ...] = (), *,
                 home: Path | None = None, maxmemory: str | None = None) -> None:
        self.binary = engine.binary()
        self.port = port or free_port()
        self.load_module = load_module
        self.extra_args = extra_args
        self.maxmemory = maxmemory
        self.persistent = home is not None
        # a new home is made 0700, as mkdtemp makes a temporary one; an existing folder keeps its mode
        self.dir = home or Path(tempfile.mkdtemp(prefix="emqlab-valkey-"))
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        # everysec: at most a second of writes lost to a crash, without an
        # fsync on every click's write. No RDB snapshots beside it.
        keep = ["--appendonly", "yes", "--appendfsync", "everysec"] if self.persistent else ["--appendonly", "no"]
        memory = ["--maxmemory", self.maxmemory, "--maxmemory-policy", "noeviction"] if self.maxmemory else []
        return [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.dir),
            "--save", "",
            *keep,
            *memory,
            "--daemonize", "no",
            "--notify-keyspace-events", NOTIFY_FLAGS,
            # A script past this answers others BUSY (a worded 503) and hears SCRIPT KILL
            # (the console's watchdog); the default 5 s would hold every learner that long.
            "--busy-reply-threshold", str(client.BUSY_REPLY_MS),
            "--logfile", str(self.dir / "valkey.log"),
            # The EMQ module (EMQ.COMPLETE, EMQ.FAIL) once `make module` built it.
            *(["--loadmodule", str(native.MODULE_PATH)] if self.load_module and native.built() else []),
            *self.extra_args,
        ]

    def start(self, timeout: float = 10.0) -> str:
        engine.checked(self.binary)  # not found, or older than the Lua fixes: refused in one sentence
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # Ctrl-C reaches `emqlab serve` only, which stops the server itself
            # (else its supervisor would start it again mid-shutdown).
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 -- one prctl through a handle loaded before the fork
        )
        deadline = time.monotonic() + timeout
        while not _answers(self.port, "PING", b"+PONG"):  # -LOADING while it reads its append-only file: not yet
            if (code := self.proc.poll()) is not None or time.monotonic() > deadline:
                self.stop(remove_dir=False)
                if code is None:
                    raise RuntimeError(f"valkey-server did not answer on port {self.port} within {timeout}s")
                log = self.dir / "valkey.log"
                tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
                raise RuntimeError(f"valkey-server exited early (status {code}); the end of {log}:\n{tail}")
            time.sleep(0.02)
        return self.url

    def stop(self, remove_dir: bool = True) -> None:
        """SIGTERM (the append-only file is flushed); a temporary folder goes too unless `remove_dir` is False."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None
        if remove_dir and not self.persistent:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ValkeyProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ClusterNode(ValkeyProcess):
    """A valkey-server in cluster mode; its bus port is picked free too (port + 10000 may not be)."""

    def __init__(self, port: int | None = None, bus_port: int | None = None, *, home: Path | None = None,
                 maxmemory: str | None = None) -> None:
        super().__init__(port, home=home, maxmemory=maxmemory)
        self.bus_port = bus_port or free_port()
        self.config_file = self.dir / "nodes.conf"

    def holds_slots(self) -> bool:
        """Whether this node's nodes.conf gives it slots (it was part of a formed cluster)."""
        try:
            lines = self.config_file.read_text().splitlines()
        except FileNotFoundError:
            return False
        # `<id> <addr> myself,master - 0 0 <epoch> connected 0-5460`: slots follow the 8th field
        return any(len(fields) > 8 and "myself" in fields[2] for fields in map(str.split, lines))

    def command(self) -> list[str]:
        return [
            *super().command(),
            "--cluster-enabled", "yes",
            "--cluster-config-file", str(self.config_file),
            "--cluster-port", str(self.bus_port),
            "--cluster-node-timeout", "2000",
        ]


class ValkeyCluster:
    """`primaries` nodes formed as `valkey-cli --cluster create` does (slots split evenly, one
    config epoch each, MEET); nodes whose nodes.conf hold slots form again on their own."""

    SLOTS = 16384

    def __init__(self, primaries: int = 3, *, nodes: list[ClusterNode] | None = None) -> None:
        self.nodes = nodes if nodes is not None else [ClusterNode() for _ in range(primaries)]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def formed(self) -> bool:
        """True when every node already belongs to a formed cluster, False when none does."""
        holding = [node.holds_slots() for node in self.nodes]
        if any(holding) and not all(holding):
            folders = ", ".join(str(node.dir) for node in self.nodes)
            raise RuntimeError(f"only some nodes of the cluster in {folders} hold slots: "
                               "remove those folders to start a new, empty cluster")
        return all(holding)

    def start(self, timeout: float = 30.0) -> str:
        count = len(self.nodes)
        try:
            formed = self.formed()  # read before a start writes a fresh nodes.conf
            for node in self.nodes:
                node.start()
            for index, node in enumerate(self.nodes if not formed else []):  # as `valkey-cli --cluster create`
                first, last = index * self.SLOTS // count, (index + 1) * self.SLOTS // count - 1
                _command(node.port, f"CLUSTER ADDSLOTSRANGE {first} {last}")
                _command(node.port, f"CLUSTER SET-CONFIG-EPOCH {index + 1}")  # before it knows another node
            for node in self.nodes[1:] if not formed else []:
                _command(self.nodes[0].port, f"CLUSTER MEET 127.0.0.1 {node.port} {node.bus_port}")
        except BaseException:
            self.stop()  # no node left behind by a start that failed halfway
            raise
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(_answers(node.port, "CLUSTER INFO", b"cluster_state:ok") for node in self.nodes):
                return self.url
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("the Valkey cluster did not reach cluster_state:ok")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> ValkeyCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
