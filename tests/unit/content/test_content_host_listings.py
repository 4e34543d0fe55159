"""Host listings: a Python function cut by name from the file the server runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.content.course import Course, make_markdown
from server.content.errors import ContentError, DirectiveError
from server.content.listing_directive import HostMissing, cut_function
from server.content.pages import CONTENT_DIR

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPTS = FIXTURES / "scripts"
HOST = FIXTURES / "host"


def _md():
    return make_markdown(None, SCRIPTS, sections=False, host=HOST)


def test_a_function_that_does_not_exist_is_refused_with_the_names_the_file_has():
    with pytest.raises(DirectiveError, match=r"server/demo.py has no top-level function 'gone'.*land") as info:
        _md().parse("intro\n\n```{listing} server/demo.py::gone\n```\n")
    assert info.value.line == 3


def test_a_host_file_that_does_not_exist_is_refused():
    with pytest.raises(DirectiveError, match=r"no host file server/nowhere\.py"):
        _md().parse("```{listing} server/nowhere.py::land\n```\n")


@pytest.mark.parametrize(
    "argument", ["server/../secrets.py::f", "/etc/passwd.py::f", "tools/x.py::f", "server/demo.py::"]
)
def test_a_path_outside_server_or_without_a_name_is_not_a_host_listing(argument):
    with pytest.raises(DirectiveError, match=r"takes NAME\.lua"):
        _md().parse(f"```{{listing}} {argument}\n```\n")


def test_a_host_listing_has_no_unknown_options():
    with pytest.raises(DirectiveError, match="no option 'lines'"):
        _md().parse("```{listing} server/demo.py::land\nlines: 1-2\n```\n")


def test_the_cut_ends_at_the_functions_last_line_and_skips_nested_functions():
    source = "def outer():\n    def inner():\n        return 1\n    return inner\n\n\nx = 1\n"
    found = cut_function(source, "outer")
    assert (found.first_line, found.last_line) == (1, 4)
    with pytest.raises(HostMissing):
        cut_function(source, "inner")


def test_every_host_listing_of_the_course_names_a_function_that_exists_in_the_running_code():
    course = Course.load(CONTENT_DIR)
    shown = [
        token.meta["host"]
        for page in course.pages.values()
        for token in page.tokens
        if token.type == "listing" and "host" in token.meta
    ]
    names = {f"{h.path}::{h.name}" for h in shown}
    assert {"server/emq/flows.py::_path", "server/emq/jobs.py::complete_call", "server/emq/results.py::dependencies",
            "server/emq/jobs.py::policy_arm", "server/emq/flows.py::add_bulk"} <= names
    root = Path(__file__).resolve().parents[3]
    for host in shown:
        lines = (root / host.path).read_text(encoding="utf-8").splitlines()
        assert list(host.lines) == lines[host.first_line - 1 : host.last_line]


def test_a_dive_naming_a_host_function_that_no_longer_exists_fails_the_course_load(tmp_path):
    for src in CONTENT_DIR.rglob("*.md"):
        dest = tmp_path / src.relative_to(CONTENT_DIR)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    dive = tmp_path / "flows" / "parent-and-children.md"
    text = dive.read_text(encoding="utf-8")
    assert "server/emq/flows.py::_path\n" in text
    dive.write_text(
        text.replace("server/emq/flows.py::_path\n", "server/emq/flows.py::_path_renamed\n", 1), encoding="utf-8"
    )
    with pytest.raises(ContentError, match=r"parent-and-children.md:\d+: .*_path_renamed"):
        Course.load(tmp_path)


def test_a_folded_listing_keeps_its_figure_inside_a_details_with_its_one_line_summary():
    html = _md().render("```{listing} server/demo.py::land\nfold: How `land` builds its keys\n```\n")
    assert html.startswith('<details class="listing-fold"><summary>How <code>land</code> builds its keys</summary>\n'
                           '<figure class="listing listing-host" data-host="server/demo.py::land">')
    assert html.endswith("</figure>\n</details>\n")


def test_a_fold_without_a_summary_is_refused_at_its_line():
    with pytest.raises(DirectiveError, match="fold: needs a one-line summary") as info:
        _md().parse("```{listing} server/demo.py::land\nfold: ''\n```\n")
    assert info.value.line == 2
