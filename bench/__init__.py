"""Benchmarks (run by hand or by `make bench`; never timed assertions in tests)."""
