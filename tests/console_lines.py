"""Console lines the tests type, built from the scripts' own headers.

`complete`'s ARGV layout is the script's (its header says where the mode or
the parent id goes), so the line a test types follows the file the server
runs rather than a copy of its layout.
"""

from __future__ import annotations

from server.emq import registry


def complete_child(queue: str, child: str, token: int, parent: str, result: str) -> str:
    """`complete` by name for a same-queue flow child, as a learner types it."""
    q = "emq:{" + queue + "}:"
    keys = [q + "active", f"{q}job:{child}", f"{q}job:{parent}:dependencies",
            f"{q}job:{parent}:processed", f"{q}job:{parent}"]
    argv = registry.doc("complete").argv
    mode_first = any(line.startswith("ARGV[4] mode") for line in argv)
    args = [child, str(token), q, *(["sq"] if mode_first else []), parent, f'"{result}"']
    return " ".join(["complete", "5", *keys, *args])


def claim(queue: str) -> str:
    q = "emq:{" + queue + "}:"
    return f"claim 2 {q}pending {q}active {q} 30000"
