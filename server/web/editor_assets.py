"""The code editor's import map, which a page with an exercise carries.

The editor is CodeMirror 6 (with its Lua mode), served under /static/vendor/ as its packages publish
it (site/package-lock.json, no build step): ES modules importing each other by bare name, mapped to
files by an inline import map. The CSP (`script-src 'self'`) allows that one inline script by its
SHA-256 (`CSP_SOURCE`), computed from exactly `TAG`'s text, so the two cannot drift apart.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Final

from markupsafe import Markup

VENDOR: Final = "/static/vendor"

# bare name -> the package's ES module entry (its package.json "exports" import)
ENTRIES: Final = {
    "codemirror": "codemirror/dist/index.js",
    "@codemirror/autocomplete": "@codemirror/autocomplete/dist/index.js",
    "@codemirror/commands": "@codemirror/commands/dist/index.js",
    "@codemirror/language": "@codemirror/language/dist/index.js",
    "@codemirror/lint": "@codemirror/lint/dist/index.js",
    "@codemirror/search": "@codemirror/search/dist/index.js",
    "@codemirror/state": "@codemirror/state/dist/index.js",
    "@codemirror/streamparser": "@codemirror/streamparser/dist/index.js",
    "@codemirror/view": "@codemirror/view/dist/index.js",
    "@lezer/common": "@lezer/common/dist/index.js",
    "@lezer/highlight": "@lezer/highlight/dist/index.js",
    "@marijn/find-cluster-break": "@marijn/find-cluster-break/src/index.js",
    "crelt": "crelt/index.js",
    "style-mod": "style-mod/src/style-mod.js",
    "w3c-keyname": "w3c-keyname/index.js",
    # the Lua mode (the package exports its modes as "./mode/*")
    "@codemirror/legacy-modes/mode/lua": "@codemirror/legacy-modes/mode/lua.js",
}

MAP_TEXT: Final = json.dumps({"imports": {name: f"{VENDOR}/{path}" for name, path in ENTRIES.items()}},
                             separators=(",", ":"), sort_keys=True)
TAG: Final = Markup(f'<script type="importmap">{MAP_TEXT}</script>')
CSP_SOURCE: Final = "'sha256-" + base64.b64encode(hashlib.sha256(MAP_TEXT.encode()).digest()).decode() + "'"
