"""The widgets, found by the code: every module of this package that defines a
`Widget` subclass with a `name` is one. No list of widgets is kept by hand.
"""

from __future__ import annotations

import importlib
import pkgutil

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
    return dict(sorted(found.items()))


WIDGETS = discover()
