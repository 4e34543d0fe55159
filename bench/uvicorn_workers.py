"""`python -m bench.uvicorn_workers FACTORY --port P [--workers N]`: an app
factory under uvicorn with 1 or N workers, started the way `emqlab serve`
starts the site (`server.cli.run_uvicorn`: proxy headers off, TCP_NODELAY
kept on the workers' connections), with the access log off. Every bench
server, and the test suite's live site, starts this way (`command`)."""

from __future__ import annotations

import argparse
import sys

from server.cli import run_uvicorn


def command(factory: str, port: int, workers: int = 1) -> list[str]:
    """The argv that serves ``factory`` on 127.0.0.1:``port`` this way (benches and tests/support.LiveSite)."""
    return [sys.executable, "-m", "bench.uvicorn_workers", factory, "--port", str(port), "--workers", str(workers)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("factory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    run_uvicorn(args.factory, args.host, args.port, args.workers, "warning", access_log=False)


if __name__ == "__main__":
    main()
