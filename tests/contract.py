"""What tests outside the project rely on, written once. Each widget's row of
DESIGN.md's table (its region's words, its controls' labels) is in the widget's
own module (`Widget.design`); the console is no widget, so its words are here."""

from __future__ import annotations

CONSOLE_WORDS = "console"
