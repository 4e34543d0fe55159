"""The data directory: what one site keeps between two runs of `emqlab serve` (docs/DEPLOY.md).
The lock is an flock (the kernel drops it however its holder dies); ports.json because a
cluster forms again only on the ports its nodes.conf files name.

A new cookie-signing secret (file deleted or replaced, new `EMQLAB_SECRET`) voids every cookie at
once, so Valkey keeps a keyed fingerprint of the secret its data was written under (the secret
cannot be read back from it) and each start compares it: said in the log."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import logging
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # not imported at run time: `emqlab reset --print-url` reads this module without redis
    from server.emq.wire import Conn

ENV = "EMQLAB_DATA_DIR"
EPHEMERAL_ENV = "EMQLAB_EPHEMERAL"
DEFAULT = ".emqlab"
SECRET = "secret"
SINGLE, CLUSTER = "valkey", "cluster"
CLUSTER_PRIMARIES = 3  # a managed cluster's primaries: one folder each, cluster/node-<index>

FINGERPRINT = "lab:secret-fingerprint"
CHANGED = ("the cookie-signing secret is not the one this Valkey's data was written under (its file was deleted "
           "or replaced, or EMQLAB_SECRET changed): every cookie signed before no longer counts, so every "
           "visitor gets a new sandbox, every class member joins again and the instructor signs in again")

log = logging.getLogger("emqlab.secret")


class Busy(RuntimeError):
    """Another live process holds the folder."""


class NotRunning(RuntimeError):
    """No site runs on the folder: no Valkey to find through it."""


def resolve(given: str | None = None) -> Path:
    """The folder asked for (`--data-dir`), else EMQLAB_DATA_DIR, else .emqlab here; absolute."""
    return Path(given or os.environ.get(ENV) or DEFAULT).absolute()


def _write_atomically(path: Path, text: str) -> None:
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    aside.write_text(text, encoding="utf-8")
    os.replace(aside, path)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


class DataDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: int | None = None

    def claim(self) -> None:
        """Create the folder and hold its lock for this process's life; Busy when another holds it."""
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise Busy(f"{self.path} is in use by process {pid} (another `emqlab serve`): "
                       "stop that one, or give this one a folder of its own with --data-dir") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock = fd

    def release(self) -> None:
        if self._lock is not None:
            (self.path / "running.json").unlink(missing_ok=True)
            os.close(self._lock)  # the lock file stays: unlinking it would race the next claim
            self._lock = None

    def home(self, kind: str, index: int = 0) -> Path:
        return self.path / SINGLE if kind == SINGLE else self.path / CLUSTER / f"node-{index}"

    def ports(self, kind: str) -> list[list[int]]:
        """The ports the last start of `kind` used: [[port]] or [[port, bus port], …]; [] if none."""
        found = _read_json(self.path / "ports.json").get(kind, [])
        well_formed = isinstance(found, list) and all(
            isinstance(entry, list) and entry and all(isinstance(port, int) for port in entry) for entry in found)
        return found if well_formed else []

    def keep_ports(self, kind: str, ports: list[list[int]]) -> None:
        recorded = _read_json(self.path / "ports.json")
        recorded[kind] = ports
        _write_atomically(self.path / "ports.json", json.dumps(recorded) + "\n")

    def announce(self, url: str, cluster: bool, site: str) -> None:
        """Say where this site's Valkey is, for `emqlab reset`."""
        body = {"url": url, "cluster": cluster, "site": site, "pid": os.getpid()}
        _write_atomically(self.path / "running.json", json.dumps(body) + "\n")


def holder(path: Path) -> str | None:
    """The pid (as written) of the process holding `path`, or None when nobody does."""
    try:
        fd = os.open(path / "lock", os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # the lock goes with the descriptor
    except BlockingIOError:
        return os.read(fd, 32).decode(errors="replace").strip() or "unknown"
    finally:
        os.close(fd)
    return None


def running(path: Path) -> tuple[str, bool]:
    """The URL of the Valkey the site running on `path` uses, and whether it is a cluster."""
    found = _read_json(path / "running.json")
    if holder(path) is None or not isinstance(found.get("url"), str):
        raise NotRunning(f"no site is running on {path}: start one with `emqlab serve --data-dir {path}`, "
                         "or name the Valkey with EMQLAB_VALKEY_URL")
    return found["url"], bool(found.get("cluster"))


# -- the cookie-signing secret -----------------------------------------------

def old_state_dir() -> Path:
    """Where sites before the data directory kept their secret."""
    named = os.environ.get("EMQLAB_STATE_DIR")
    if named:
        return Path(named)
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "state") / "emqlab"


def _read_secret(path: Path) -> str | None:
    try:
        value = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return value or None


def _place_secret(path: Path, value: str) -> str:
    """Put `value` at `path` unless another worker did first (a hard link fails then); the one in place."""
    aside = path.with_name(f".{SECRET}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(value + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(aside, path)
    finally:
        aside.unlink(missing_ok=True)
    found = _read_secret(path)
    if found is None:
        raise OSError(f"{path} is empty")
    return found


def load_secret(folder: Path, adopt_from: Path | None = None) -> str:
    """The secret kept in `folder`, made once; `adopt_from`'s (an old state folder) moved in first."""
    path = folder / SECRET
    found = _read_secret(path)
    if found is not None:
        return found
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    old = adopt_from / SECRET if adopt_from is not None else None
    value = _read_secret(old) if old is not None else None
    used = (folder / "ports.json").exists()  # a site ran here, so it had a secret: this one was deleted
    placed = _place_secret(path, value or secrets.token_urlsafe(32))
    if used and placed != value:
        log.warning("emqlab: the cookie-signing secret %s was missing from a data directory a site has used; "
                    "a new one was made, so every cookie signed with the old one no longer counts", path)
    if old is not None and value is not None and placed == value:
        old.unlink(missing_ok=True)
    return placed


def site_secret(given: str | None = None) -> str:
    """The secret of the site this process serves (folder as `resolve`), made when missing
    (never adopting an old state folder's: only `emqlab serve` does)."""
    folder = resolve(given)
    try:
        return load_secret(folder)
    except OSError as exc:
        raise SystemExit(
            f"cannot keep the cookie-signing secret in {folder / SECRET} ({exc.strerror or exc}): "
            f"set EMQLAB_SECRET, or {ENV} to a folder the site may write"
        ) from exc


async def note_secret(conn: Conn, secret: str) -> bool:
    """Record this secret's fingerprint (SET … GET: one worker of many sees the old one);
    True, and one warning logged, when Valkey held another secret's."""
    mine = hmac.new(secret.encode(), b"emqlab-secret-seen", hashlib.sha256).hexdigest()[:32]
    before = await conn.set(FINGERPRINT, mine, get=True)
    if before is not None and (before.decode(errors="replace") if isinstance(before, bytes) else before) != mine:
        log.warning("emqlab: %s", CHANGED)
        return True
    return False
