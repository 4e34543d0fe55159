"""The `emqlab` command: `serve` the site (server/serve.py), `reset` sandboxes
from a shell, `module-path` (where `make module` puts the EMQ module for Valkey).

Each subcommand imports what it needs inside its own function: at the top stand only modules of the
standard library's weight, so `emqlab reset --print-url` or `module-path` does not pay for the site
(redis, pydantic's settings, the Starlette app, the widgets) to print one line
(tests/unit/test_cli_imports.py holds it).
"""

from __future__ import annotations

import argparse
import os
import sys

from server.shell import fail
from server.valkey.datadir import CLUSTER_PRIMARIES


def app_from_env():  # type: ignore[no-untyped-def]
    """uvicorn factory: each worker builds the app on the URL serve chose (EMQLAB_VALKEY_URL)."""
    from server.app import create_app

    return create_app(os.environ["EMQLAB_VALKEY_URL"])


def serve(args: argparse.Namespace) -> int:
    from server.serve import serve as run  # here, not at the top: the managed Valkey's modules, redis included

    return run(args)


def reset(args: argparse.Namespace) -> int:
    from server.valkey import datadir

    # The site's on --data-dir, else EMQLAB_VALKEY_URL, else the site's on the default data directory.
    url = os.environ.get("EMQLAB_VALKEY_URL")
    cluster: bool | None = None
    if not url or args.data_dir:
        try:
            url, cluster = datadir.running(datadir.resolve(args.data_dir))
        except datadir.NotRunning as exc:
            return fail(str(exc))
    if args.print_url:
        print(url)
        return 0
    # Only a reset that runs reaches Valkey: the client, the site's reset and the widgets it lands
    # again are imported past --print-url's return.
    import asyncio

    import redis

    from server.lifecycle import resets
    from server.sandboxes import learners, rooms
    from server.sandboxes.sandbox import SANDBOX_RE
    from server.valkey.client import open_client
    from server.widgets import WIDGETS
    from server.widgets.runner import Lab
    from server.widgets.snapshot import Catalog

    async def run() -> int:
        conn = open_client(url, cluster)  # else a cluster when EMQLAB_VALKEY_CLUSTER=1 or INFO cluster says so
        lab = Lab(conn, Catalog(dict(WIDGETS)))
        try:
            targets: list[str] | None = None
            what = "every sandbox"
            if args.room:
                room = await rooms.find(conn, args.room)
                if room is None:
                    return fail(f"no open room with the code or name {args.room!r}", 1)
                targets = [room.sandbox, *await learners.learner_ids(conn, room.code)]
                what = f"room {room.code} ({room.name})"
            elif not args.all:
                if not SANDBOX_RE.fullmatch(args.sandbox):
                    raise ValueError(f"not a sandbox id: {args.sandbox!r} (s and 10 lowercase letters or digits)")
                if args.sandbox not in await resets.every_sandbox(conn):
                    return fail(f"no live sandbox {args.sandbox}", 1)
                targets, what = [args.sandbox], f"sandbox {args.sandbox}"
            report = await resets.reset_sandboxes(lab, targets, by="emqlab reset")
            print(f"emqlab: reset {what}: {len(report.reset)} sandboxes reset")
            for sandbox, why in report.failed.items():
                print(f"emqlab: sandbox {sandbox} could not be reset: {why}", file=sys.stderr)
            return 1 if report.failed else 0
        except ValueError as exc:
            return fail(str(exc))
        except (redis.RedisError, redis.exceptions.RedisClusterException, OSError) as exc:
            return fail(f"cannot reach Valkey at {url}: {exc}", 3)
        finally:
            await conn.aclose()

    return asyncio.run(run())


def module_path(args: argparse.Namespace) -> int:
    from server.valkey import native

    print(native.MODULE_PATH)
    if not native.built():
        return fail("the module is not built yet: run `make module`", 1)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="emqlab", description="Flows Lab: EchoMQ flows, live on Valkey")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve",
                             help="run the site (starts its own valkey-server unless EMQLAB_VALKEY_URL is set)")
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.add_argument("--port", type=int, default=8000)
    p_serve.add_argument("--workers", type=int, default=1,
                         help="uvicorn worker processes (state lives in Valkey, so any worker serves any learner)")
    p_serve.add_argument("--cluster", action="store_true",
                         help=f"start a managed {CLUSTER_PRIMARIES}-primary Valkey Cluster instead of one server "
                              "(with EMQLAB_VALKEY_URL: that Valkey is a cluster)")
    p_serve.add_argument("--data-dir", metavar="DIR",
                         help="where the site keeps its Valkey's data and its cookie secret "
                              "(default: EMQLAB_DATA_DIR, else .emqlab here)")
    p_serve.add_argument("--ephemeral", action="store_true",
                         help="keep nothing: a temporary folder, no persistence, gone when the site stops")
    p_serve.add_argument("--log-level", default="warning")
    p_serve.set_defaults(func=serve)
    p_reset = sub.add_parser("reset", help="the instructor's reset, from a shell")
    group = p_reset.add_mutually_exclusive_group(required=True)
    group.add_argument("--sandbox", metavar="ID")
    group.add_argument("--room", metavar="NAME", help="a room's code (or its name)")
    group.add_argument("--all", action="store_true")
    group.add_argument("--print-url", action="store_true", help="print the URL of the Valkey it would reset")
    p_reset.add_argument("--data-dir", metavar="DIR",
                         help="reset the site running on DIR (default: EMQLAB_VALKEY_URL, else EMQLAB_DATA_DIR, "
                              "else .emqlab here)")
    p_reset.set_defaults(func=reset)
    p_module = sub.add_parser("module-path", help="print the absolute path of the built EMQ module for Valkey")
    p_module.set_defaults(func=module_path)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
