"""The outbox's "Try it as one script": a cross-queue add as ONE script, on a cluster.

The real `enqueue_flow` is sent with the parent's keys in one queue and a
child's row in another. It goes by EVALSHA straight to the node owning the
first key (redis-py's own slot check would refuse it before it left), so
the refusal the learner reads is the cluster's own CROSSSLOT. Nothing is
written: a refused script never runs, and the outcome counts the keys to
prove it.
"""

from __future__ import annotations

from redis.asyncio import RedisCluster
from redis.exceptions import ClusterCrossSlotError, ResponseError

from server.emq import keyspace, registry
from server.emq.wire import Conn
from server.valkey import connect
from server.widgets.outcome import Outcome, Refusal

PARENT, CHILD = "JOBsolo", "JOBsolo1"


async def try_one_script(conn: Conn, home: str, other: str) -> Outcome:
    """Send the add whose KEYS span `home` and `other`; say what the cluster answered."""
    if not isinstance(conn, RedisCluster):
        raise Refusal("Try it as one script needs a cluster: on one server every slot is local and "
                      "nothing refuses it. Run `emqlab serve --cluster`.")
    keys = [keyspace.job_key(home, PARENT), keyspace.dependencies_key(home, PARENT),
            keyspace.queue_key(home, "pending"), keyspace.job_key(other, CHILD)]
    args = [PARENT, "one script, two queues", "1", CHILD, "mail step, same script"]
    node = conn.get_node_from_key(keys[0])
    if node is None:
        raise Refusal("The cluster names no node for the parent's slot just now: try again in a moment.")
    sha = await conn.execute_command("SCRIPT", "LOAD", registry.script_source("enqueue_flow"), target_nodes=node)
    try:
        await conn.execute_command("EVALSHA", sha, len(keys), *keys, *args, target_nodes=node)
    except ClusterCrossSlotError as exc:
        # redis-py parses the reply's code word into the exception class.
        error = f"CROSSSLOT {exc}"
    except ResponseError as exc:
        error = str(exc)
    else:  # pragma: no cover - a cluster always refuses two slots in one script
        error = ""
    written = 0
    for key in keys:  # one slot per call
        written += int(await conn.exists(key))
    where = (f"{home} (hash slot {keyspace.hash_slot(keys[0])}, node {node.name}) and "
             f"{other} (hash slot {keyspace.hash_slot(keys[3])}, node {connect.node_of(conn, keys[3])})")
    if not error:
        return Outcome(f"EVALSHA enqueue_flow with KEYS in {where} was accepted.", "info",
                       {"error": None, "written": written})
    return Outcome(
        f"One script, two queues: EVALSHA enqueue_flow with KEYS in {where}, sent to node {node.name}. "
        f"The cluster refused it: {error}. Nothing was written ({written} of its {len(keys)} keys exist): "
        f"a cross-queue add has to be walked by the host, slot by slot, as flows.add does.",
        "refused", {"error": error, "node": node.name, "keys": keys, "written": written},
    )
