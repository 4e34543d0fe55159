"""The include step, read from the files alone (no Valkey): each marker is
replaced by its helper between two visible fences, a missing or cyclic
include is refused at load, every script expands with no marker left, each
shared rule is written once. What the registry runs on Valkey is in
tests/integration/test_script_includes.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from server.emq import includes, registry
from tests.lua_folder import write_script

# Each shared rule, and the scripts that must take it from includes/ rather
# than carry a copy of their own.
RULES = {
    "leave_active": {"complete", "fail"},
    "release_parent": {"complete", "fail", "flow_deliver"},
    "fail_parent": {"fail", "flow_deliver"},
    "kind_refusal": {"enqueue_flow", "enqueue_flow_child", "hold_parent"},
    "now_ms": {"claim", "fail"},
    "outbox_entry": {"complete", "fail"},
    "parent_link": {"enqueue_flow_child", "hold_parent"},
}


def test_an_include_marker_is_replaced_by_the_helper_between_two_visible_fences(tmp_path: Path) -> None:
    write_script(tmp_path / "includes", "twice", "-- twice: double it\nlocal function twice(x) return 2 * x end\n")
    source = "-- s: uses twice\n\n-- @include twice\nreturn twice(ARGV[1])\n"
    assert includes.expand("s.lua", source, tmp_path).splitlines() == [
        "-- s: uses twice",
        "",
        "-- ▼ included from includes/twice.lua",
        "-- twice: double it",
        "local function twice(x) return 2 * x end",
        "-- ▲ end of includes/twice.lua",
        "return twice(ARGV[1])",
    ]


def test_a_script_without_markers_is_left_byte_for_byte(tmp_path: Path) -> None:
    source = "-- s: plain\nreturn 1"  # no trailing newline, and still unchanged
    assert includes.expand("s.lua", source, tmp_path) == source


def test_a_nested_helper_is_pasted_once_at_its_first_marker(tmp_path: Path) -> None:
    folder = tmp_path / "includes"
    write_script(folder, "clock", "local function clock() return 1 end")
    write_script(folder, "stamp", "-- @include clock\nlocal function stamp() return clock() end")
    expanded = includes.expand("s.lua", "-- @include clock\n-- @include stamp\nreturn stamp()\n", tmp_path)
    assert expanded.count("local function clock()") == 1
    assert includes.repeated("clock") in expanded.splitlines()


def test_a_missing_include_is_a_clear_error_at_load(tmp_path: Path) -> None:
    with pytest.raises(
        includes.IncludeError, match=r"s.lua line 2: '-- @include nowhere' names no file includes/nowhere.lua"
    ):
        includes.expand("s.lua", "-- s: broken\n-- @include nowhere\nreturn 1\n", tmp_path)


def test_an_include_cycle_is_refused_at_load(tmp_path: Path) -> None:
    write_script(tmp_path / "includes", "a", "-- @include b\n")
    write_script(tmp_path / "includes", "b", "-- @include a\n")
    with pytest.raises(includes.IncludeError, match="include cycle a -> b -> a"):
        includes.expand("s.lua", "-- @include a\n", tmp_path)


def test_a_marker_may_not_name_a_path(tmp_path: Path) -> None:
    with pytest.raises(includes.IncludeError, match="not a helper name"):
        includes.expand("s.lua", "-- @include ../keyspace\n", tmp_path)


def test_every_script_expands_and_keeps_no_marker() -> None:
    for name in registry.names():
        expanded = registry.script_source(name)
        assert not includes.includes_of(expanded), name
        if not includes.includes_of(registry.file_source(name)):
            assert expanded == registry.file_source(name), name


def test_each_shared_rule_is_written_once_in_includes() -> None:
    for helper, users in RULES.items():
        taking = {name for name in registry.names() if helper in includes.includes_of(registry.file_source(name))}
        assert users <= taking, helper
        definition = f"local function {helper}("
        for name in registry.names():
            assert definition not in registry.file_source(name), f"{name}.lua defines {helper} itself"
            if name in users:
                assert registry.script_source(name).count(definition) == 1
    # the rules' own words live only in the helpers
    for name in registry.names():
        body = registry.file_source(name)
        assert "redis.call('TIME')" not in body and "cjson.encode" not in body, name
        assert "EMQKIND job id must be JOB-namespaced" not in body.split("\n\n", 1)[1], name


def test_loading_every_script_names_each_by_the_sha_it_runs_under() -> None:
    loaded = registry.load_all()
    assert set(loaded) == set(registry.names())
    for name, sha in loaded.items():
        assert sha == hashlib.sha1(registry.script_source(name).encode("utf-8")).hexdigest()


def test_loading_every_script_stops_at_a_broken_include(scripts_dir: Path) -> None:
    write_script(
        scripts_dir, "broken", "-- broken: takes a helper that is not there\n\n-- @include nowhere\nreturn 1\n"
    )
    with pytest.raises(includes.IncludeError, match=r"broken\.lua line 3"):
        registry.load_all()


def test_the_steppers_prefixes_carry_the_kind_gate_helper_above_move_one() -> None:
    first = registry.moves("enqueue_flow")[0]
    helper_at = registry.script_source("enqueue_flow").splitlines().index(includes.opening("kind_refusal")) + 1
    assert helper_at < first.first_line
    for n in range(1, len(registry.moves("enqueue_flow")) + 1):
        assert "local function kind_refusal(" in registry.prefix_source("enqueue_flow", n)
