"""Exercises: learners write a transition's Lua; a grader judges it on a Valkey of its own."""
