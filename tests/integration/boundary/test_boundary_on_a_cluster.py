"""The boundary on a managed 3-primary Valkey Cluster: each line runs as the
sandbox's user on the primary owning its key's slot, the user is made there
when first needed, and Valkey refuses another sandbox's key on every node."""

from __future__ import annotations

from typing import Any

from redis.exceptions import NoPermissionError

from server.console import as_user as acl
from server.console.as_user import Runner
from server.emq import keyspace

from .support import A, B, console, held_by, land_fanin, line


def node_of(admin: Any, queue: str) -> Any:
    return admin.get_node_from_key(keyspace.queue_key(queue, "pending"))


async def user_on(admin: Any, node: Any, sandbox: str) -> bool:
    return acl.user_of(sandbox) in await admin.execute_command("ACL", "USERS", target_nodes=node)


async def test_each_line_runs_as_the_user_made_on_the_node_owning_its_slot(
    cluster_admin: Any, cluster_runner: Runner
) -> None:
    admin = cluster_admin
    fanin, mail = node_of(admin, f"{B}.fanin"), node_of(admin, f"{B}.outbox.mail")
    assert fanin.name != mail.name
    await land_fanin(admin, B)
    visitor = console(admin, cluster_runner, B)
    assert (await line(visitor, "GET emq:{fanin}:job:JOBparent:dependencies")).lines == ('"3"',)
    assert await user_on(admin, fanin, B) and not await user_on(admin, mail, B)
    assert (await line(visitor, "SET emq:{outbox.mail}:note hi")).lines == ("OK",)
    assert await user_on(admin, mail, B)
    untouched = [n for n in admin.get_primaries() if n.name not in (fanin.name, mail.name)]
    assert len(untouched) == 1 and not await user_on(admin, untouched[0], B)
    assert (await line(visitor, "DEL emq:{fanin}:nope emq:{outbox.mail}:nope")).status == 400  # a write, one queue
    assert (await line(visitor, "EXISTS emq:{fanin}:job:JOBparent emq:{outbox.mail}:note")).lines == (
        "(error) CROSSSLOT Keys in request don't hash to the same slot",)


async def test_another_sandboxs_key_answers_noperm_on_its_own_node(cluster_admin: Any, cluster_runner: Runner) -> None:
    admin = cluster_admin
    await land_fanin(admin, A)
    before = await held_by(admin, A)
    theirs = keyspace.dependencies_key(f"{A}.fanin", "JOBparent")
    assert isinstance(await cluster_runner.call(B, ["DECR", theirs], theirs), NoPermissionError)
    assert await user_on(admin, node_of(admin, f"{A}.fanin"), B)  # made there, and refused there
    for args in (["KEYS", "*"], ["SCAN", "0"], ["RANDOMKEY"], ["FLUSHALL"]):
        assert isinstance(await cluster_runner.call(B, args, theirs), NoPermissionError), args
    assert await held_by(admin, A) == before


async def test_users_dropped_on_every_primary_are_made_again_where_needed(
    cluster_admin: Any, cluster_runner: Runner
) -> None:
    admin = cluster_admin
    await land_fanin(admin, B)
    visitor = console(admin, cluster_runner, B)
    assert (await line(visitor, "ZCARD emq:{fanin}:pending")).lines == ("(integer) 3",)
    await acl.drop_user(cluster_runner.admin, B)
    assert not any([await user_on(admin, n, B) for n in admin.get_primaries()])
    assert (await line(visitor, "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 30000")).lines == (
        '1) "JOBchild1"', "2) (integer) 1")
    assert await user_on(admin, node_of(admin, f"{B}.fanin"), B)


async def test_scan_runs_as_the_site_across_primaries_and_the_budget_sums_every_slot(
    cluster_admin: Any, cluster_runner: Runner
) -> None:
    admin = cluster_admin
    visitor = console(admin, cluster_runner, B, budget=600)
    for queue in ("outbox.mail", "outbox.orders", "outbox.billing"):
        assert (await line(visitor, f"ZADD emq:{{{queue}}}:pending 0 JOBone")).status == 200
    assert (await line(visitor, "SCAN 0 MATCH emq:{outbox.*}:pending")).lines == (
        '1) "0"', '2) 1) "emq:{outbox.billing}:pending"', '   2) "emq:{outbox.mail}:pending"',
        '   3) "emq:{outbox.orders}:pending"')
    more = 0  # a member each time: the budget charges what Valkey holds, and a rewrite adds nothing
    while (await line(visitor, f"ZADD emq:{{fanin}}:pending 0 JOBmore{more}")).status == 200:
        more += 1
    refused = await line(visitor, "ZADD emq:{outbox.mail}:pending 0 JOBtwo")
    assert refused.status == 409
