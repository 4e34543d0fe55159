"""What a worker remembers of its admissions: a page's read never stands in
for an action's (the sandbox would stay "unused", evictable), an action's
stands for a read, and a read's lasts well inside the unused-eviction idle."""

from __future__ import annotations

import pytest

from server.settings import Settings
from server.web import entry


@pytest.fixture(autouse=True)
def clean() -> None:
    entry.forget()


def test_a_read_admission_does_not_stand_for_an_action() -> None:
    entry._remember("s1", used=False)
    assert entry._recently_admitted("s1", used=False)
    assert not entry._recently_admitted("s1", used=True)


def test_an_action_admission_stands_for_a_read_and_a_read_does_not_undo_it() -> None:
    entry._remember("s2", used=True)
    entry._remember("s2", used=False)
    assert entry._recently_admitted("s2", used=True)
    assert entry._recently_admitted("s2", used=False)


def test_a_read_admission_lapses_long_before_an_unused_sandbox_may_be_evicted(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().unused_idle >= entry.RECENT_SEEN * 3
    now = [1000.0]
    monkeypatch.setattr(entry.time, "monotonic", lambda: now[0])
    entry._remember("s3", used=False)
    now[0] += entry.RECENT_SEEN + 0.1
    assert not entry._recently_admitted("s3", used=False)
    entry._remember("s4", used=True)
    now[0] += entry.RECENT_SEEN + 0.1
    assert entry._recently_admitted("s4", used=False)  # an action's lasts RECENT
