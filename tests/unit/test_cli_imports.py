"""`emqlab reset --print-url` prints one line without importing the site: no redis client, no
pydantic settings, no Starlette app, widgets or templates (server/cli.py imports per subcommand).
Run as the command runs, in a fresh interpreter, with `-X importtime` listing every module loaded."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import ROOT

URL = "redis://127.0.0.1:6399/0"
# what only a reset that runs, or the site itself, needs
HEAVY = ("redis", "hiredis", "pydantic", "pydantic_settings", "starlette", "jinja2", "uvicorn",
         "server.app", "server.web", "server.widgets", "server.serve", "server.settings", "server.valkey.client")


def imported_by(*argv: str) -> tuple[str, set[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EMQLAB_VALKEY_URL": URL}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "server.cli", *argv], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=60, check=True)
    names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done.stdout, names - {"package"}  # the header row's last column


def test_reset_print_url_prints_the_url_and_imports_neither_the_client_nor_the_web_app() -> None:
    printed, names = imported_by("reset", "--print-url")
    assert printed == URL + "\n"
    loaded = sorted(n for n in names if n.split(".")[0] in HEAVY or n.startswith(HEAVY))
    assert loaded == [], loaded
    assert "server.valkey.datadir" in names  # the modules listed are this command's (the probe works)
