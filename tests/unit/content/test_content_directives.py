"""The {widget} and {listing} directives: parse results, render hooks, errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from server.content.course import make_markdown
from server.content.errors import DirectiveError
from server.emq import includes, registry
from server.emq.registry import cut_moves

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPTS = FIXTURES / "scripts"


def _tokens(md, text, env=None):
    return [t for t in md.parse(text, env if env is not None else {}) if t.type in {"widget", "listing"}]


def test_widget_token_carries_name_and_options():
    md = make_markdown(None, SCRIPTS, sections=False)
    (token,) = _tokens(md, "```{widget} fanin\nstart: 2\nlabel: three children\n```\n")
    assert token.type == "widget"
    assert token.meta["name"] == "fanin"
    assert token.meta["options"] == {"start": "2", "label": "three children"}
    placement = token.meta["placement"]
    assert (placement.name, placement.options, placement.questions, placement.line) == (
        "fanin", {"start": "2", "label": "three children"}, (), 1)


def test_widget_render_calls_the_apps_render_widget_with_name_and_options():
    md = make_markdown(None, SCRIPTS, sections=False)
    calls = []

    def render_widget(name, options):
        calls.append((name, options))
        return f'<section class="widget" aria-label="{name}">live</section>'

    html = md.render("```{widget} outbox\nbatch: 5\n```\n", {"render_widget": render_widget})
    assert calls == [("outbox", {"batch": "5"})]
    assert html == '<section class="widget" aria-label="outbox">live</section>\n'


def test_unknown_widget_name_is_an_error_when_the_known_set_is_given():
    md = make_markdown({"fanin"}, SCRIPTS, sections=False)
    with pytest.raises(DirectiveError, match="unknown widget 'fan-in'") as info:
        md.parse("text\n\n```{widget} fan-in\n```\n")
    assert info.value.line == 3


def test_any_widget_name_is_accepted_without_a_known_set():
    md = make_markdown(None, SCRIPTS, sections=False)
    (token,) = _tokens(md, "```{widget} something-new\n```\n")
    assert token.meta["name"] == "something-new"


@pytest.mark.parametrize(
    "fence",
    [
        "```{widget}\n```\n",  # no name
        "```{widget} two names\n```\n",
        "```{widget} fanin\nnot an option line\n```\n",
        "```{widget} fanin\nstart: 1\nstart: 2\n```\n",
        "```{widget} fanin\nstart: [1, 2]\n```\n",  # an option is one line of text
        "```{widget} fanin\n- a list\n```\n",
    ],
)
def test_malformed_widget_fence_is_an_error(fence):
    md = make_markdown(None, SCRIPTS, sections=False)
    with pytest.raises(DirectiveError):
        md.parse(fence)


@pytest.mark.parametrize(
    "argument,message",
    [
        ("missing.lua", "no script"),
        ("demo.lua#7", "has no move 7"),
        ("demo.lua#lines=10-99", "outside it"),
        ("demo.lua#lines=5-2", "outside it"),
        ("demo.py", "takes NAME.lua"),
        ("../secret.lua", "takes NAME.lua"),
    ],
)
def test_listing_that_cannot_be_resolved_is_an_error_at_load_time(argument, message):
    md = make_markdown(None, SCRIPTS, sections=False)
    with pytest.raises(DirectiveError, match=message):
        md.parse(f"```{{listing}} {argument}\n```\n")


def test_listing_rejects_unknown_options():
    md = make_markdown(None, SCRIPTS, sections=False)
    with pytest.raises(DirectiveError, match="no option 'color'"):
        md.parse("```{listing} demo.lua\ncolor: red\n```\n")


def test_listing_reads_the_file_when_parsed_not_a_copy(tmp_path):
    (tmp_path / "live.lua").write_text("-- @move 1: only\nreturn 'v1'\n")
    md = make_markdown(None, tmp_path, sections=False)
    assert "v1" in md.render("```{listing} live.lua\n```\n")
    (tmp_path / "live.lua").write_text("-- @move 1: only\nreturn 'v2'\n")
    assert "v2" in md.render("```{listing} live.lua\n```\n")


def test_cut_moves_runs_each_move_from_its_marker_to_the_next():
    moves = cut_moves((FIXTURES / "scripts" / "demo.lua").read_text())
    assert [(m.number, m.title, m.first_line, m.last_line) for m in moves] == [
        (1, "check the input", 5, 8),
        (2, "write & count", 10, 12),
    ]
    assert moves[1].text.startswith("-- @move 2")


def test_default_listing_source_is_the_file_the_server_runs():
    """Without an injected folder, listings read server/emq/scripts/ through
    the host library's registry: the text it registers, includes expanded."""
    md = make_markdown(None, None, sections=False)
    (token,) = _tokens(md, "```{listing} enqueue_flow.lua\n```\n")
    assert [line.text for line in token.meta["lines"]] == registry.script_source("enqueue_flow").splitlines()
    assert any(line.move == 2 for line in token.meta["lines"])


@pytest.mark.parametrize("name", registry.names())
def test_every_listing_is_the_registered_text_with_its_includes_shown(name):
    md = make_markdown(None, None, sections=False)
    (token,) = _tokens(md, f"```{{listing}} {name}.lua\n```\n")
    listed = "\n".join(line.text for line in token.meta["lines"]) + "\n"
    assert listed == registry.script_source(name)
    assert hashlib.sha1(listed.encode()).hexdigest() == registry.script(name).sha
    for helper in includes.includes_of(registry.file_source(name)):
        assert includes.opening(helper) in listed.splitlines()
        assert includes.closing(helper) in listed.splitlines()
    assert "@include" not in listed
    assert token.meta["includes"] == includes.helpers_shown(registry.script_source(name))


def test_a_listing_of_a_folder_script_expands_its_includes(tmp_path):
    (tmp_path / "includes").mkdir()
    (tmp_path / "includes" / "twice.lua").write_text("local function twice(x) return 2 * x end\n")
    (tmp_path / "uses.lua").write_text("-- uses: a helper\n\n-- @include twice\n-- @move 1: double\nreturn twice(2)\n")
    md = make_markdown(None, tmp_path, sections=False)
    (token,) = _tokens(md, "```{listing} uses.lua#1\n```\n")
    assert [(line.number, line.text) for line in token.meta["lines"]] == [
        (6, "-- @move 1: double"),
        (7, "return twice(2)"),
    ]
    html = md.render("```{listing} uses.lua\n```\n")
    assert "<code>server/emq/scripts/uses.lua</code> · includes expanded: twice</figcaption>" in html
    assert "-- ▼ included from includes/twice.lua" in html
    assert "local function twice(x) return 2 * x end" in html
    assert "-- ▲ end of includes/twice.lua" in html


def test_a_listing_whose_include_is_missing_fails_at_load(tmp_path):
    (tmp_path / "broken.lua").write_text(
        "-- broken: names a helper that is not there\n\n-- @include nowhere\nreturn 1\n"
    )
    md = make_markdown(None, tmp_path, sections=False)
    with pytest.raises(
        DirectiveError, match=r"broken.lua line 3: '-- @include nowhere' names no file includes/nowhere.lua"
    ):
        md.parse("```{listing} broken.lua\n```\n", {})
