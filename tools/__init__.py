"""Developer tools (not part of the served site)."""
