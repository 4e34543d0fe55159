"""A managed cluster (`emqlab serve --cluster`) keeps one folder per node:
stopped and started again it forms again on the same ports with its slots
and keys, and a node killed on the way is started again by itself."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import redis
from redis.cluster import RedisCluster

from tests.integration.ops.serving import Serve, state_of, valkeys_of, wait_for

QUEUES = ["orders", "mail", "billing", "audit", "search", "media"]


def cluster_ok(client: RedisCluster) -> bool:
    try:
        # one INFO per node, keyed by node (redis-py's annotation says one dict)
        infos: Any = client.cluster_info(target_nodes=RedisCluster.ALL_NODES)
        return all(info.get("cluster_state") == "ok" for info in infos.values())
    except redis.RedisError:
        return False


def test_a_managed_cluster_restarted_on_its_data_directory_comes_back_with_its_slots_and_keys(tmp_path: Path) -> None:
    with Serve(tmp_path, "--cluster") as first:
        assert first.proc is not None
        url = first.running()["url"]
        assert first.running()["cluster"] is True
        client = RedisCluster.from_url(url, decode_responses=True)
        # every write on disk before the reply: the kill below must not meet appendfsync
        # everysec's last second (a documented window, not what this test is about)
        client.config_set("appendfsync", "always", target_nodes=RedisCluster.ALL_NODES)
        for queue in QUEUES:  # hashtags spread over the three primaries
            client.set(f"emq:{{{queue}}}:kept", queue)
        owners = {int(client.keyslot(f"emq:{{{q}}}:kept")) // 5462 for q in QUEUES}  # type: ignore[no-untyped-call]
        assert len(owners) >= 2
        homes = sorted((tmp_path / "data" / "cluster").iterdir())
        assert [home.name for home in homes] == ["node-0", "node-1", "node-2"]
        assert all((home / "nodes.conf").exists() and (home / "appendonlydir").is_dir() for home in homes)

        # one node killed: started again on its port, it rejoins with its keys
        victim = next(pid for pid in valkeys_of(first.proc.pid) if f"--port {url.rsplit(':', 2)[1]}" not in
                      Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: "started it again" in first.said(), 10, "the node started again")
        assert state_of(victim) is None
        wait_for(lambda: cluster_ok(client), 15, "cluster_state:ok after the node's return")
        assert [client.get(f"emq:{{{q}}}:kept") for q in QUEUES] == QUEUES
        client.close()
    assert first.stop() == 0

    with Serve(tmp_path, "--cluster") as second:
        assert second.running()["url"] == url
        client = RedisCluster.from_url(url, decode_responses=True)
        wait_for(lambda: cluster_ok(client), 15, "cluster_state:ok after the restart")
        assert [client.get(f"emq:{{{q}}}:kept") for q in QUEUES] == QUEUES
        slots = client.cluster_slots()
        assert sum(end - start + 1 for (start, end) in slots) == 16384
        client.close()
    assert second.stop() == 0
