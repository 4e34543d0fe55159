"""The grader pool the exercise tests share: two real grading valkey-servers.

The pool is started once for the session; tests that need other settings
(one grader, a short line) start a pool of their own. Each test runs for
sandboxes of its own (``support.sandbox()``), so the shares of one test never
refuse another's runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.exercises import GraderPool, PoolSettings


@pytest.fixture(scope="session")
async def pool() -> AsyncIterator[GraderPool]:
    settings = PoolSettings(graders=2, queue_bound=32, sandbox_in_flight=4, sandbox_burst=100,
                            sandbox_per_minute=6000)
    async with GraderPool(settings) as started:
        yield started
