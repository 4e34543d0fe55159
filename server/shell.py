"""What the `emqlab` commands say on a shell: a line on stdout, a refusal on stderr with its exit status.

Standard library only, so any subcommand can use it without importing the site (server/cli.py).
"""

from __future__ import annotations

import sys


def say(text: str) -> None:
    print(f"emqlab: {text}", flush=True)


def fail(text: str, code: int = 2) -> int:
    """Said on stderr; `code` is the command's exit status."""
    print(f"emqlab: {text}", file=sys.stderr, flush=True)
    return code
