"""`emqlab serve`: the site, its data directory and the Valkey it manages.

In order: hold the data directory, bind the socket (a taken port stops here, before any Valkey
starts), make the cookie secret (before any worker, so none race for it), start and supervise the
managed Valkey (or take EMQLAB_VALKEY_URL's), run uvicorn. Workers learn the rest from the environment.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import tempfile
from pathlib import Path

import redis

from server.listen import listening_socket, run_uvicorn
from server.shell import fail, say
from server.valkey import datadir, engine, native
from server.valkey.client import CLUSTER_ENV, wants_cluster
from server.valkey.datadir import CLUSTER, CLUSTER_PRIMARIES, SINGLE, DataDir
from server.valkey.process import ClusterNode, ValkeyCluster, ValkeyProcess, free_port, port_free
from server.valkey.supervise import Supervisor

MAXMEMORY_ENV = "EMQLAB_VALKEY_MAXMEMORY"
MAXMEMORY = "256mb"  # per node; noeviction: a full Valkey refuses writes, it never drops a learner's keys


def serve(args: argparse.Namespace) -> int:
    # SIGTERM ends the site the way Ctrl-C does: uvicorn raises it again once shut
    # down, and the default handler would die before Valkey is stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.workers < 1:
        return fail("--workers must be at least 1")
    folder = Path(tempfile.mkdtemp(prefix="emqlab-ephemeral-")) if args.ephemeral else datadir.resolve(args.data_dir)
    data = DataDir(folder)
    try:
        data.claim()
    except datadir.Busy as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(f"cannot keep the site's data in {folder} ({exc.strerror or exc}): pick a folder with --data-dir")
    try:
        return serve_on(args, data)
    finally:
        data.release()
        if args.ephemeral:
            shutil.rmtree(folder, ignore_errors=True)


def serve_on(args: argparse.Namespace, data: DataDir) -> int:
    try:
        sock = listening_socket(args.host, args.port)
    except OSError as exc:
        return fail(f"cannot listen on {args.host} port {args.port} ({exc.strerror or exc}); pick another with --port")
    with sock:
        os.environ[datadir.ENV] = str(data.path)
        os.environ[datadir.EPHEMERAL_ENV] = "1" if args.ephemeral else "0"
        if not os.environ.get("EMQLAB_SECRET"):
            try:  # an ephemeral site's secret dies with it: it takes nobody's
                datadir.load_secret(data.path, None if args.ephemeral else datadir.old_state_dir())
            except OSError as exc:
                return fail(f"cannot keep the cookie-signing secret in {data.path}: {exc.strerror or exc}")
        managed = None
        url = os.environ.get("EMQLAB_VALKEY_URL")
        if url:
            say(f"using the Valkey at {url}")
            # older than the Lua fixes: said here; one not reached yet, the site says so itself
            with contextlib.suppress(redis.RedisError, OSError), \
                    redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2) as probe:
                if warning := engine.external_warning(probe.info("server")):
                    say(f"warning: {warning}")
        else:
            managed = start_managed(args, data)
            if managed is None:
                return 3
            url = managed.url
        return run_site(args, data, sock, url, managed)


def run_site(args: argparse.Namespace, data: DataDir, sock: socket.socket, url: str,
             managed: ValkeyProcess | ValkeyCluster | None) -> int:
    supervisor = None
    try:
        cluster = True if args.cluster else wants_cluster(url)
        if cluster and not args.cluster:
            say("that Valkey is a cluster: using the cluster client")
        os.environ[CLUSTER_ENV] = "1" if cluster else "0"
        os.environ["EMQLAB_VALKEY_URL"] = url
        site = f"http://{args.host}:{args.port}/"
        data.announce(url, cluster, site)
        if managed is not None:
            supervisor = Supervisor(managed.nodes if isinstance(managed, ValkeyCluster) else [managed])
            supervisor.start()
        if args.ephemeral:
            say(f"ephemeral: nothing is kept after this run (`emqlab reset --data-dir {data.path}` reaches it)")
        say(f"Flows Lab is running — open {site}")
        run_uvicorn("server.cli:app_from_env", args.host, args.port, args.workers, args.log_level, sock=sock)
    except KeyboardInterrupt:
        pass
    finally:
        if supervisor is not None:
            supervisor.stop()
        if managed is not None:
            managed.stop()
            say("stopped the Valkey cluster" if isinstance(managed, ValkeyCluster) else "stopped valkey-server")
    return 0


def start_managed(args: argparse.Namespace, data: DataDir) -> ValkeyProcess | ValkeyCluster | None:
    """Start the site's own Valkey (one server or a cluster) on the folder; None when it would not start."""
    wanted = os.environ.get(MAXMEMORY_ENV, "").strip() or MAXMEMORY
    memory = None if wanted == "0" else wanted
    try:
        managed: ValkeyProcess | ValkeyCluster
        if args.cluster:
            managed = cluster_on(data, args.ephemeral, memory)
        elif args.ephemeral:
            managed = ValkeyProcess(maxmemory=memory)
        else:
            recorded = data.ports(SINGLE)
            port = recorded[0][0] if recorded and port_free(recorded[0][0]) else free_port()
            if recorded and port != recorded[0][0]:
                say(f"port {recorded[0][0]} of the last run is taken: valkey-server moves to {port}")
            data.keep_ports(SINGLE, [[port]])
            managed = ValkeyProcess(port, home=data.home(SINGLE), maxmemory=memory)
        managed.start(timeout=60.0)
    except (RuntimeError, OSError) as exc:
        fail(f"could not start {'the Valkey cluster' if args.cluster else 'valkey-server'}: {exc}")
        return None
    kept = "temporary, no persistence" if args.ephemeral else f"data in {data.path}, append-only file"
    limit = f", maxmemory {memory}" if memory else ""
    if isinstance(managed, ValkeyCluster):
        ports = ", ".join(str(node.port) for node in managed.nodes)
        say(f"started a {len(managed.nodes)}-primary Valkey cluster on 127.0.0.1 ports {ports} ({kept}{limit})")
    else:
        module = ", the EMQ module loaded" if native.built() else ", no EMQ module (run `make module`)"
        say(f"started valkey-server on {managed.url} ({kept}{limit}{module})")
    return managed


def cluster_on(data: DataDir, ephemeral: bool, memory: str | None) -> ValkeyCluster:
    """The managed cluster's nodes; one formed before comes back on its nodes.conf ports, or not at all."""
    if ephemeral:
        return ValkeyCluster(nodes=[ClusterNode(maxmemory=memory) for _ in range(CLUSTER_PRIMARIES)])
    homes = [data.home(CLUSTER, index) for index in range(CLUSTER_PRIMARIES)]
    recorded = data.ports(CLUSTER)
    if len(recorded) == CLUSTER_PRIMARIES:
        kept = ValkeyCluster(nodes=[ClusterNode(port, bus, home=home, maxmemory=memory)
                                    for (port, bus), home in zip(recorded, homes)])
        if kept.formed():
            taken = [port for pair in recorded for port in pair if not port_free(port)]
            if taken:
                raise RuntimeError(f"the cluster kept in {data.path / CLUSTER} can only form again on its "
                                   f"old ports, and {', '.join(map(str, taken))} are taken: free them, or "
                                   f"remove {data.path / CLUSTER} to start a new, empty cluster")
            return kept
    fresh = ValkeyCluster(nodes=[ClusterNode(home=home, maxmemory=memory) for home in homes])
    data.keep_ports(CLUSTER, [[node.port, node.bus_port] for node in fresh.nodes])
    return fresh
