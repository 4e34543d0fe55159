"""A widget whose scenario is one flow on its own queue, landed by `flows.add`.

The fan-in and the results reader both teach on a parent held on a few
children in one queue: what they land, and which rows their snapshot looks
for (the parent's, held in no state set, and each child's), is this one
rule.
"""

from __future__ import annotations

from typing import Any, ClassVar

from server.emq import flows, keyspace
from server.widgets.base import Widget
from server.widgets.context import Context


class OneFlow(Widget):
    parent: ClassVar[str]
    children: ClassVar[tuple[str, ...]]

    def flow_spec(self) -> dict[str, Any]:
        """The flow the scenario lands (through the real `flows.add`)."""
        raise NotImplementedError

    def job_ids(self, queue: str) -> list[str]:
        return [self.parent, *self.children]

    async def land(self, ctx: Context) -> None:
        queue = self.queues(ctx)[0]
        # A Reset that ends its action: the whole land rides the closing round
        # trip, proved by the parent's row (the lock's call removed it).
        closing = ctx.closing if ctx.land_tail is not None else None
        if closing is not None and flows.queue_add(closing.batch, queue, self.flow_spec()):
            closing.prove("EXISTS", keyspace.job_key(queue, self.parent))
            return
        # otherwise after a Reset, the children's parent_policy HSETs ride with the finish
        await flows.add(ctx.conn, queue, self.flow_spec(), tail=ctx.land_tail)
