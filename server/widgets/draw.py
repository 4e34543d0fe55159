"""Drawing a widget: its one template (`site/templates/widgets/_<name>.html`) over
its snapshot. The first paint, the page without JavaScript and every frame of the
stream are this same HTML; the browser only morphs it in.

What the last step changed is marked here, from the effects the stream already
words: a key row, a set's member, a counter whose key a notification named.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence

import msgspec
from jinja2 import Environment
from markupsafe import Markup, escape

from server.live import effects
from server.live.streams import Worded
from server.widgets.base import Widget
from server.widgets.snapshot import Snapshot
from server.widgets.view import KeyShape


def key_breaks(name: str, joints: str = ":}") -> Markup:
    """A key name that may wrap only after ":" and "}" (the grammar's joints); a queue name passes "."."""
    return Markup("<wbr>").join(escape(piece) for piece in re.split(f"(?<=[{re.escape(joints)}])", name) if piece)


def short_key(name: str) -> str:
    """A key's name after its hash tag: "emq:{q}:job:J" -> ":job:J"."""
    return name.partition("}")[2] if "}" in name else name


def key_text(key: KeyShape | dict[str, object]) -> str:
    """A key's value as the key panel prints it; a value the read cut says so, with its whole size.
    A row a widget remembered in its lab state (native's before and after), or an exercise's picture,
    comes as JSON's types."""
    if isinstance(key, dict):  # an exercise's picture says `whole` where a snapshot says `cut`
        key = msgspec.convert({"cut": not key.get("whole", True), **key}, KeyShape)
    kind, value = key.type, key.value
    size = f"{key.size} bytes" if kind == "string" else f"{key.size} elements"
    if value is None:
        return f"({size}; not shown: this snapshot's budget is spent)"
    if kind == "hash" and isinstance(value, dict):
        text = "\n".join(f"{f} = {v}" for f, v in value.items()) or "(empty)"
    elif kind == "zset" and isinstance(value, list):
        pairs = [pair for pair in value if isinstance(pair, list)]  # [member, score]
        text = "\n".join(f"{pair[0]} (score {pair[1]})" for pair in pairs) or "(empty)"
    elif kind == "list" and isinstance(value, list):
        text = "\n".join(f"[{i}] {v}" for i, v in enumerate(value)) or "(empty)"
    else:
        text = str(value)
    return text + (f"\n… ({size} in all; the first shown)" if key.cut else "")


class Changed:
    """The keys the last step's notifications named, asked by a template."""

    def __init__(self, effects: Sequence[Worded]) -> None:
        self.keys = {e.key for e in effects}

    def shown(self, snap: Snapshot) -> bool:
        """A key the snapshot shows was written (a key deleted since is not marked, nor counted)."""
        return any(k.name in self.keys for q in snap.queues for k in q.keys)

    def key(self, name: str) -> bool:
        return name in self.keys

    def job(self, job_id: str, sub: str = "") -> bool:
        """A job's row (or its `sub` key, ":dependencies") was written, in any queue."""
        tail = f":job:{job_id}{sub}"
        return any(k.endswith(tail) for k in self.keys)


class Drawing:
    """Draws each widget; the HTML is a function of the snapshot read for this request (and the marks),
    so the last few drawings are kept by what they were drawn from: the same snapshot again (a page
    viewed again, every first visit's specimen) is not drawn again. Never stale: the key is the data."""

    KEPT = 64  # drawings kept, the least recently used dropped first

    def __init__(self, env: Environment) -> None:
        self.env = env
        # `verb`: the command an effect's script ran (a DECR is notified as ``incrby``: server/live/effects.py)
        env.filters.update(key_breaks=key_breaks, short_key=short_key, key_text=key_text,
                           verb=lambda effect: effects.command(effect.event, effect.key))
        self.drawn: OrderedDict[bytes, str] = OrderedDict()

    def html(self, widget: Widget, snap: Snapshot | None, effects: Sequence[Worded] = ()) -> str:
        """The widget's `<section>`; with no snapshot (Valkey away), its shell, which the stream fills."""
        key = msgspec.json.encode((widget.name, snap, effects))
        found = self.drawn.get(key)
        if found is None:
            context = {"widget": widget, "snap": snap, "p": snap.picture if snap else None,
                       "effects": list(reversed(effects)), "changed": Changed(effects), **widget.partial_context()}
            found = self.drawn[key] = self.env.get_template(f"widgets/_{widget.name}.html").render(context)
            if len(self.drawn) > self.KEPT:
                self.drawn.popitem(last=False)
        else:
            self.drawn.move_to_end(key)
        return found
