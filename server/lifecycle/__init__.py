"""A sandbox's whole life outside one click: reset it, remove it, expire it (above the widgets
and the console, below the views and the command line)."""
