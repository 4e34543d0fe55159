"""A sandbox's whole life outside one click: reset it, remove it, expire it.

Above the widgets and the console (it resets the former and removes what the
latter keeps), below the views and the command line, which call it.
"""
