"""The unit tests: the pure parts, with no Valkey and no site.

`make test-unit` runs this folder alone and must never start a valkey-server:
the session's `valkey` fixture (tests/conftest.py) is refused here, and any
managed server or cluster a test would start fails the test that tried, so
a test that needs Valkey is moved to tests/integration instead of slowing
this suite down.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NoReturn

import pytest

from server.valkey.process import ValkeyCluster, ValkeyProcess

REFUSAL = "tests/unit runs without Valkey: a test that needs one belongs in tests/integration"


@pytest.fixture(scope="session")
def valkey() -> NoReturn:
    pytest.fail(REFUSAL)


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    pytest.fail(REFUSAL)


@pytest.fixture(autouse=True)
def no_valkey_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for managed in (ValkeyProcess, ValkeyCluster):
        monkeypatch.setattr(managed, "start", _refuse)
    yield
