"""The cookie-signing secret: from EMQLAB_SECRET, else a file of the site's own.

A secret kept only in Valkey dies with a Valkey restart or a FLUSHALL, and the
next start would mint a new one, signing every visitor out of their sandbox.
The file lives in the site's state folder (`EMQLAB_STATE_DIR`, else
`$XDG_STATE_HOME/emqlab`, else `~/.local/state/emqlab`), readable by its owner
only (0600), and is created once: every worker of the site on this machine
reads the same file, and the first to start writes it atomically (written
aside, then hard-linked into place, which fails if another worker won).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from server.settings import Settings

FILE_NAME = "secret"


def state_dir(settings: Settings) -> Path:
    return Path(settings.data_dir)


def _read(path: Path) -> str | None:
    try:
        value = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return value or None


def _create(path: Path) -> str:
    """Write a new secret to `path` unless another process did first; return the one in place."""
    value = secrets.token_urlsafe(32)
    aside = path.with_name(f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(value + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        # FileExistsError: another worker's secret is in place, and that one is the site's.
        with contextlib.suppress(FileExistsError):
            os.link(aside, path)
    finally:
        aside.unlink(missing_ok=True)
    found = _read(path)
    if found is None:
        raise OSError(f"{path} is empty")
    return found


def load_secret(settings: Settings) -> str:
    """The secret every worker of this site signs cookies with."""
    if settings.secret:
        return settings.secret
    folder = state_dir(settings)
    path = folder / FILE_NAME
    try:
        found = _read(path)
        if found is not None:
            return found
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return _create(path)
    except OSError as exc:
        raise SystemExit(
            f"cannot keep the cookie-signing secret in {path} ({exc.strerror or exc}): "
            "set EMQLAB_SECRET, or EMQLAB_STATE_DIR to a folder the site may write"
        ) from exc


__all__ = ["load_secret", "state_dir"]
