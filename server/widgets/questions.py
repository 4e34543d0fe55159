"""What each widget asks before the steps where its lesson turns.

One tuple of `Question`s per widget name (`server/widgets/__init__.py` hands
each widget its own). A question is offered while its condition holds on the
keys just read, the first one that holds winning; every `measure` reads its
value from the keys Valkey holds after the action. No answer is written here:
a question that names one would be judged by this file, not by Valkey.
"""

from __future__ import annotations

import json

from server.emq import pump, registry
from server.widgets import enqueue_stepper, failure_flows, fanin_reading, ledger_batch, outbox, results_reader, tree
from server.widgets.predict import (
    Condition,
    Measure,
    Moment,
    Question,
    Value,
    counter,
    counter_above,
    key_count,
    new_keys,
)

DEPS = ":dependencies = {value}"
YES_NO = (("yes", "Yes"), ("no", "No"))
FATES = (("held", "Stays held (awaiting_children)"), ("released", "Released into pending"),
         ("failed", "Failed, into dead"))
FATE_OF = {"awaiting_children": "held", "pending": "released", "failed": "failed"}


def state_of(job_id: str, queue_at: int = 0) -> Measure:
    """A job's fate from its row's `state` field, as one of FATES (or the raw state)."""

    def measure(after: Moment, before: Moment) -> Value:
        row = after.views[queue_at].row(job_id)
        state = row.value.get("state") if row is not None else None
        return FATE_OF.get(state or "", state or "no row")

    return measure


def claimable(job_id: str) -> Measure:
    """Whether a worker's claim can take the job: is it in `pending`?"""

    def measure(after: Moment, before: Moment) -> Value:
        return "yes" if job_id in after.views[0].members("pending") else "no"

    return measure


def any_pending(ids: tuple[str, ...]) -> Condition:
    def when(moment: Moment) -> bool:
        return any(i in moment.views[0].members("pending") for i in ids)

    return when


def parent_state_is(job_id: str, state: str) -> Condition:
    def when(moment: Moment) -> bool:
        row = moment.views[0].row(job_id)
        return row is not None and row.value.get("state") == state

    return when


# -- the @enqueue_flow stepper ------------------------------------------------------


def stepper_can_move(moment: Moment) -> bool:
    state = moment.state
    return not state.get("refused") and int(state.get("move") or 0) < len(registry.moves(enqueue_stepper.SCRIPT))


STEPPER = (
    Question("stepper-atomic-non-job", "run-atomically",
             "Predict: with a non-JOB child id, how many keys will the stepper's queue hold after Run atomically?",
             key_count(0), "{value} keys in the stepper's queue",
             when=lambda m: m.state.get("non_job") == "1" and not m.state.get("refused")),
    Question("stepper-next-keys", "next", "Predict: how many keys will the stepper's queue hold after the next move?",
             key_count(0), "{value} keys in the stepper's queue", when=stepper_can_move),
)

# -- the fan-in counter ---------------------------------------------------------------

FANIN = (
    Question("fanin-dependencies", "complete-child",
             "Predict: what will :dependencies be after this completion?",
             counter(fanin_reading.PARENT), DEPS, when=counter_above(fanin_reading.PARENT, 0)),
    Question("fanin-redeliver", "redeliver",
             "Predict: what will :dependencies be after the last completion is delivered again?",
             counter(fanin_reading.PARENT), DEPS, when=lambda m: bool(m.state.get("last"))),
)

# -- the cross-queue outbox -------------------------------------------------------------


def outboxes(moment: Moment) -> list[list[str]]:
    """Each child queue's flow:outbox entries, as Valkey holds them ([] when it holds none)."""
    lists = [view.get("flow:outbox") for view in moment.views[1:]]
    return [list(key.value) if key is not None else [] for key in lists]


def poison_at_head(moment: Moment) -> bool:
    return any(lst and entry_is_poison(lst[0]) for lst in outboxes(moment))


def entry_is_poison(raw: str) -> bool:
    try:
        pump.decode_entry(raw)
    except pump.PoisonEntry:
        return True
    return False


def trimmed(after: Moment, before: Moment) -> Value:
    """Which entry of the outbox whose head is poison the tick took away."""
    for old, new in zip(outboxes(before), outboxes(after)):
        if not old or not entry_is_poison(old[0]):
            continue
        if new == old:
            return "none"
        if new == old[1:]:
            return "poison"
        if new == old[:1] + old[2:]:
            return "behind"
        return "other"
    return "none"


def lane_child_pending(moment: Moment) -> bool:
    """A child waits in the pending set of its own queue (not the parent's)."""
    return any(cid in view.members("pending") for view in moment.views[1:] for _, cid in outbox.CHILDREN)


def entries_waiting(moment: Moment) -> bool:
    return any(outboxes(moment))


# The Pump's questions come first: once an entry waits, the lesson is what the Pump does with it.
OUTBOX = (
    Question("outbox-trim", "pump-tick", "Predict: which outbox entry does the Pump trim?",
             trimmed, "the outboxes as the Pump left them: {value}", when=poison_at_head,
             choices=(("poison", "The poison entry at the head"), ("behind", "The completion behind it"),
                      ("none", "Neither: the outbox is unchanged"))),
    Question("outbox-pump", "pump-tick", "Predict: what will the parent's :dependencies be after this Pump tick?",
             counter(outbox.PARENT), DEPS, when=entries_waiting),
    Question("outbox-complete", "complete-child",
             "Predict: this child is in another queue. What will the parent's :dependencies be after it completes?",
             counter(outbox.PARENT), DEPS, when=lane_child_pending),
)

# -- the failure policy --------------------------------------------------------------------

POLICY = (
    Question("policy-fate", "fail-child", "Predict: what happens to the parent when this child dies at its cap?",
             state_of(failure_flows.PARENT), "the parent row's state: {value}",
             when=lambda m: any_pending(failure_flows.CHILDREN)(m)
             and parent_state_is(failure_flows.PARENT, "awaiting_children")(m),
             choices=FATES),
    Question("policy-claim", "complete-child", "Predict: after this completion, can a worker claim the parent?",
             claimable(failure_flows.PARENT), "the pending set's answer: {value}",
             when=lambda m: any_pending(failure_flows.CHILDREN)(m)
             and parent_state_is(failure_flows.PARENT, "failed")(m),
             choices=YES_NO),
    Question("policy-dependencies", "complete-child", "Predict: what will :dependencies be after this completion?",
             counter(failure_flows.PARENT), DEPS, when=any_pending(failure_flows.CHILDREN)),
)

# -- the bulk ledger --------------------------------------------------------------------------

FLOW4_PARENT = ledger_batch.FIXED[3]["parent"]["id"]


def result_size(after: Moment, before: Moment) -> Value:
    """How many entries the result list holds (the adds' return value, kept in Valkey)."""
    return len(json.loads(after.state.get("result") or "[]"))


def at_flow(n: int) -> Condition:
    def when(moment: Moment) -> bool:
        state = moment.state
        return not state.get("custom") and int(state.get("move") or 0) == n - 1

    return when


def stepping(moment: Moment) -> bool:
    return not moment.state.get("custom") and int(moment.state.get("move") or 0) < len(ledger_batch.FIXED)


LEDGER = (
    Question("ledger-flow4", "next", "Predict: flow 4's second child is not a JOB id. What becomes of flow 4's parent?",
             state_of(FLOW4_PARENT), "flow 4's parent: {value}", when=at_flow(4),
             choices=(("no row", "Nothing lands: no row"), ("held", "It lands and stays held"),
                      ("released", "It lands in pending"))),
    Question("ledger-result", "next", "Predict: how many entries will the result list hold after this flow?",
             result_size, "{value} entries in the result list", when=stepping),
    Question("ledger-ill-formed", "ill-formed",
             "Predict: how many new keys will the batch with an ill-formed id write?",
             new_keys, "{value} new keys in the ledger's queues"),
)

# -- the results reader ------------------------------------------------------------------------


def read_dependencies(after: Moment, before: Moment) -> Value:
    """What `results.dependencies` returned, as the widget kept it in Valkey."""
    read = json.loads(after.state["read"]) if after.state.get("read") else {}
    return int(read["dependencies"]) if "dependencies" in read else "no read"


RESULTS = (
    Question("results-fail", "fail-child", "Predict: a child dies at its cap under ignore the dependency. "
             "What will :dependencies be after it?",
             counter(results_reader.PARENT), DEPS, when=counter_above(results_reader.PARENT, 0)),
    Question("results-read", "read", "Predict: what will dependencies() return?",
             read_dependencies, "dependencies() → {value}"),
)

# -- the tree --------------------------------------------------------------------------------------

TREE = (
    Question("tree-root", "complete-level", "Predict: after this level completes, can a worker claim the root?",
             claimable(tree.ROOT), "the pending set's answer: {value}",
             when=lambda m: parent_state_is(tree.ROOT, "awaiting_children")(m)
             and any_pending((tree.INNER, tree.TWIG, *tree.LEAVES))(m),
             choices=YES_NO),
)

# -- the native refusal ------------------------------------------------------------------------------


def keys_changed(after: Moment, before: Moment) -> Value:
    """Whether any key of the widget's queue differs, name, type or value."""
    def keys(moment: Moment) -> list[dict[str, object]]:
        return [k.as_json() for view in moment.views for k in view.keys]

    return "yes" if keys(after) != keys(before) else "no"


NATIVE = (
    Question("native-refusal", "native", "Predict: will the same line sent as EMQ.COMPLETE change any key?",
             keys_changed, "a key changed: {value}", choices=YES_NO),
)

QUESTIONS: dict[str, tuple[Question, ...]] = {
    "tree": TREE, "native": NATIVE,
    "enqueue-stepper": STEPPER, "fanin": FANIN, "outbox": OUTBOX,
    "failure-policy": POLICY, "ledger": LEDGER, "results": RESULTS,
}
