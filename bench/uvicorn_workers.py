"""`python -m bench.uvicorn_workers FACTORY --port P --workers N`: an app
factory under uvicorn with N workers, started the way `emqlab serve --workers
N` starts the site (`server.cli.run_uvicorn`, which keeps TCP_NODELAY on the
workers' connections), with the benchmark's flags."""

from __future__ import annotations

import argparse

from server.cli import run_uvicorn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("factory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    run_uvicorn(args.factory, args.host, args.port, args.workers, "warning", access_log=False)


if __name__ == "__main__":
    main()
