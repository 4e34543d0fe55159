"""Sandboxes, classes (rooms) and their lifecycle: who acts on which keys, and when they go."""
