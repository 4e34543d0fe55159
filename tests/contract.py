"""What tests outside the project rely on, written once: DESIGN.md's table of
the words each widget's region name contains. Every other test derives widget
names from the code (server.widgets.WIDGETS) and the course."""

from __future__ import annotations

# widget -> the words its region's accessible name contains (DESIGN.md, "The site")
REGION_WORDS = {
    "enqueue-stepper": "@enqueue_flow",
    "fanin": "fan-in",
    "native": "native",
    "tree": "tree",
    "ledger": "ledger",
    "outbox": "outbox",
    "failure-policy": "failure policy",
    "results": "results",
    "race": "Race",
}
CONSOLE_WORDS = "console"
