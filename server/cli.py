"""The `emqlab` command: `serve` the site, `reset` sandboxes from a shell,
`module-path` (where `make module` puts the EMQ module for Valkey)."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from server.valkey.process import ValkeyCluster, ValkeyProcess

# `emqlab reset` finds the Valkey of a running `emqlab serve` through this file
# when EMQLAB_VALKEY_URL is not set.
URL_FILE = Path(tempfile.gettempdir()) / "emqlab-serve.url"
CLUSTER_PRIMARIES = 3


def app_from_env():  # type: ignore[no-untyped-def]
    """uvicorn factory: each worker builds the app on the URL serve chose
    (EMQLAB_VALKEY_URL; EMQLAB_VALKEY_CLUSTER=1 when it is a cluster)."""
    from server.app import create_app

    return create_app(os.environ["EMQLAB_VALKEY_URL"])


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def nodelay_listener() -> None:
    """Keep TCP_NODELAY on with `--workers N`.

    uvicorn's multiprocess supervisor binds the listening socket itself
    (`Config.bind_socket`) with `proto` 0; accepted sockets inherit it, and
    asyncio turns TCP_NODELAY on only for `proto == IPPROTO_TCP`. Nagle then
    meets the client's delayed ACK and every keep-alive response after the
    first waits about 40 ms (uvicorn issue #3149; 1 worker is not affected).
    Re-wrapping the bound socket's descriptor with IPPROTO_TCP fixes it; the
    socket reaches the workers with its proto intact.
    """
    from uvicorn.config import Config

    original = Config.bind_socket
    if getattr(original, "emqlab_nodelay", False):
        return

    def bind_socket(self: Config) -> socket.socket:
        sock = original(self)
        if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM \
                and sock.proto != socket.IPPROTO_TCP:
            sock = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
            sock.set_inheritable(True)
        return sock

    bind_socket.emqlab_nodelay = True  # type: ignore[attr-defined]
    Config.bind_socket = bind_socket  # type: ignore[method-assign]


def run_uvicorn(factory: str, host: str, port: int, workers: int = 1, log_level: str = "warning",
                **options: object) -> None:
    """uvicorn.run on an app factory, with 1 or N workers (TCP_NODELAY kept)."""
    import uvicorn

    if workers > 1:
        nodelay_listener()
    # The site reads X-Forwarded-For itself, only when EMQLAB_TRUST_FORWARDED_FOR
    # says a proxy stands in front: uvicorn must not rewrite the client first.
    options.setdefault("proxy_headers", False)
    uvicorn.run(factory, factory=True, host=host, port=port, workers=workers, log_level=log_level,
                timeout_graceful_shutdown=3, **options)  # type: ignore[arg-type]


def serve(args: argparse.Namespace) -> int:
    from server.valkey.connect import CLUSTER_ENV, wants_cluster
    from server.valkey.process import ValkeyCluster, ValkeyProcess

    if not port_free(args.host, args.port):
        print(f"emqlab: port {args.port} on {args.host} is in use; pick another with --port", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("emqlab: --workers must be at least 1", file=sys.stderr)
        return 2
    managed: ValkeyProcess | ValkeyCluster | None = None
    url = os.environ.get("EMQLAB_VALKEY_URL")
    if url:
        print(f"emqlab: using the Valkey at {url}", flush=True)
    else:
        managed = ValkeyCluster(CLUSTER_PRIMARIES) if args.cluster else ValkeyProcess()
        url = start_managed(managed)
        if url is None:
            return 3
    cluster = True if args.cluster else wants_cluster(url)
    os.environ[CLUSTER_ENV] = "1" if cluster else "0"
    if cluster and not args.cluster:
        print("emqlab: that Valkey is a cluster: using the cluster client", flush=True)
    os.environ["EMQLAB_VALKEY_URL"] = url
    URL_FILE.write_text(url)
    print(f"emqlab: Flows Lab is running — open http://{args.host}:{args.port}/", flush=True)
    try:
        run_uvicorn("server.cli:app_from_env", args.host, args.port, args.workers, args.log_level)
    except KeyboardInterrupt:
        pass
    finally:
        if managed is not None:
            managed.stop()
            print("emqlab: stopped the Valkey cluster" if cluster and args.cluster else "emqlab: stopped valkey-server",
                  flush=True)
        if URL_FILE.exists() and URL_FILE.read_text() == url:
            URL_FILE.unlink()
    return 0


def start_managed(managed: ValkeyProcess | ValkeyCluster) -> str | None:
    """Start the site's own Valkey (one server or a cluster) and say where; None
    when a cluster would not start."""
    from server.valkey import native
    from server.valkey.process import ValkeyCluster

    if isinstance(managed, ValkeyCluster):
        try:
            url = managed.start()
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            managed.stop()
            print(f"emqlab: could not start the Valkey cluster: {exc}", file=sys.stderr)
            return None
        ports = ", ".join(str(node.port) for node in managed.nodes)
        print(f"emqlab: started a {CLUSTER_PRIMARIES}-primary Valkey cluster on 127.0.0.1 ports {ports} "
              "(temporary, no persistence)", flush=True)
        return url
    url = managed.start()
    loaded = ", the EMQ module loaded" if native.built() else ", no EMQ module (run `make module`)"
    print(f"emqlab: started valkey-server on {url} (temporary, no persistence{loaded})", flush=True)
    return url


def reset(args: argparse.Namespace) -> int:
    import redis

    from server.sandboxes import learners, lifecycle, rooms
    from server.sandboxes.sandbox import SANDBOX_RE
    from server.valkey.connect import open_client

    url = os.environ.get("EMQLAB_VALKEY_URL") or (URL_FILE.read_text().strip() if URL_FILE.exists() else "")
    if not url:
        print("emqlab: no Valkey to reset: set EMQLAB_VALKEY_URL or start `emqlab serve`", file=sys.stderr)
        return 2

    async def run() -> int:
        conn = open_client(url)  # a cluster when EMQLAB_VALKEY_CLUSTER=1 or INFO cluster says so
        try:
            if args.all:
                removed = await lifecycle.reset_sandboxes(conn, None, by="emqlab reset")
                what = "every sandbox"
            elif args.room:
                room = await rooms.find(conn, args.room)
                if room is None:
                    print(f"emqlab: no open room with the code or name {args.room!r}", file=sys.stderr)
                    return 1
                joined = await learners.learner_ids(conn, room.code)
                removed = await lifecycle.reset_sandboxes(conn, [room.sandbox, *joined], by="emqlab reset")
                what = f"room {room.code} ({room.name})"
            else:
                if not SANDBOX_RE.fullmatch(args.sandbox):
                    raise ValueError(f"not a sandbox id: {args.sandbox!r} (s and 10 lowercase letters or digits)")
                if not await lifecycle.is_live(conn, args.sandbox):
                    print(f"emqlab: no live sandbox {args.sandbox}", file=sys.stderr)
                    return 1
                removed = await lifecycle.reset_sandboxes(conn, [args.sandbox], by="emqlab reset")
                what = f"sandbox {args.sandbox}"
            print(f"emqlab: reset {what}: {removed} keys removed")
            return 0
        except ValueError as exc:
            print(f"emqlab: {exc}", file=sys.stderr)
            return 2
        except (redis.RedisError, redis.exceptions.RedisClusterException, OSError) as exc:
            print(f"emqlab: cannot reach Valkey at {url}: {exc}", file=sys.stderr)
            return 3
        finally:
            await conn.aclose()

    return asyncio.run(run())


def module_path(args: argparse.Namespace) -> int:
    from server.valkey import native

    print(native.module_path())
    if not native.built():
        print("emqlab: the module is not built yet: run `make module`", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="emqlab", description="Flows Lab: EchoMQ flows, live on Valkey")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser(
        "serve",
        help="run the site (starts its own valkey-server unless EMQLAB_VALKEY_URL is set)",
    )
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.add_argument("--port", type=int, default=8000)
    p_serve.add_argument("--workers", type=int, default=1,
                         help="uvicorn worker processes (state lives in Valkey, so any worker serves any learner)")
    p_serve.add_argument("--cluster", action="store_true",
                         help=f"start a managed {CLUSTER_PRIMARIES}-primary Valkey Cluster instead of one server "
                              "(with EMQLAB_VALKEY_URL: that Valkey is a cluster)")
    p_serve.add_argument("--log-level", default="warning")
    p_serve.set_defaults(func=serve)
    p_reset = sub.add_parser("reset", help="the instructor's reset, from a shell")
    group = p_reset.add_mutually_exclusive_group(required=True)
    group.add_argument("--sandbox", metavar="ID")
    group.add_argument("--room", metavar="NAME", help="a room's code (or its name)")
    group.add_argument("--all", action="store_true")
    p_reset.set_defaults(func=reset)
    p_module = sub.add_parser("module-path", help="print the absolute path of the built EMQ module for Valkey")
    p_module.set_defaults(func=module_path)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
