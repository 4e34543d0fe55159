"""The exercises' code editor loads from the site alone: every module it needs,
by the bare names they import each other by, is in the page's import map,
installed under site/node_modules and served under /static/vendor/; the CSP
lets exactly that inline map run."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from server.web import templating
from tests.support import LiveSite

ROOT = Path(__file__).resolve().parents[3]
MODULES = ROOT / "site" / "node_modules"
EDITOR = ROOT / "site" / "static" / "widgets" / "editor.js"
IMPORT = re.compile(r"""^\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]""", re.M)


def imports(path: Path) -> set[str]:
    return set(IMPORT.findall(path.read_text("utf-8")))


def test_every_module_the_editor_reaches_resolves_through_the_import_map_to_an_installed_file() -> None:
    seen: set[str] = set()
    todo = sorted(imports(EDITOR))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        assert name in templating.ENTRIES, f"{name} is imported but not in the import map"
        path = MODULES / templating.ENTRIES[name]
        assert path.is_file(), f"{name} maps to {path}, which `make assets` did not install"
        todo.extend(sorted(imports(path) - seen))
    assert {"@codemirror/view", "@codemirror/legacy-modes/mode/lua", "style-mod"} <= seen


def test_a_page_with_an_exercise_carries_the_map_its_csp_names_and_the_modules_are_served(clean: LiveSite) -> None:
    client = clean.client()
    page = client.get("/flows/parent-and-children")
    found = re.findall(r'<script type="importmap">(.*?)</script>', page.text, re.S)
    assert found == [templating.MAP_TEXT]
    digest = base64.b64encode(hashlib.sha256(found[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in page.headers["content-security-policy"]
    assert "unsafe-inline" not in page.headers["content-security-policy"]
    for path in templating.ENTRIES.values():
        served = client.get(f"{templating.VENDOR}/{path}")
        assert served.status_code == 200 and "javascript" in served.headers["content-type"], path
    # a page without an exercise carries no map
    assert "importmap" not in client.get("/flows/reading-the-results").text
