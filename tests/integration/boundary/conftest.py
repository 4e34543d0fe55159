"""Fixtures of the boundary tests: the session's real valkey-server (and the
3-primary cluster), a Runner of sandbox users on it, no ACL user left over."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from server.console.as_user import Runner

from .support import SECRET, drop_sandbox_users


@pytest.fixture
async def admin(conn: Any) -> AsyncIterator[Any]:
    """The site's connection (decoded replies, like the site's), on a flushed
    server with no sandbox user yet."""
    await drop_sandbox_users(conn)
    yield conn
    await drop_sandbox_users(conn)


@pytest.fixture
async def runner(admin: Any) -> AsyncIterator[Runner]:
    made = Runner(admin, SECRET)
    yield made
    await made.aclose()


@pytest.fixture
async def cluster_admin(cluster_conn: Any) -> AsyncIterator[Any]:
    await drop_sandbox_users(cluster_conn)
    yield cluster_conn
    await drop_sandbox_users(cluster_conn)


@pytest.fixture
async def cluster_runner(cluster_admin: Any) -> AsyncIterator[Runner]:
    made = Runner(cluster_admin, SECRET)
    yield made
    await made.aclose()
