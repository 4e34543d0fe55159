"""The widgets, found by the code: every `Widget` subclass with a `name` in this package.

A queue part two widgets claim stops the start: the hub finds a widget by its queue.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping

from server.widgets.base import Widget


def discover() -> dict[str, Widget]:
    """One instance of each widget, by name, in name order."""
    found: dict[str, Widget] = {}
    for module in pkgutil.iter_modules(__path__):
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        for value in vars(loaded).values():
            if (isinstance(value, type) and issubclass(value, Widget) and value.__module__ == loaded.__name__
                    and "name" in vars(value)):
                if value.name in found:
                    raise RuntimeError(f"two widgets are named {value.name!r}")
                found[value.name] = value()
    check_parts(found)
    return dict(sorted(found.items()))


def check_parts(widgets: Mapping[str, Widget]) -> None:
    """Every queue part belongs to one widget; a clash raises, naming both."""
    owner: dict[str, str] = {}
    for name, widget in widgets.items():
        for part in widget.queue_parts:
            if part in owner:
                raise RuntimeError(f"widgets {owner[part]!r} and {name!r} both claim the queue part {part!r}")
            owner[part] = name


WIDGETS = discover()
