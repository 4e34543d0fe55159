"""The app's `Services` holding only what a test gives: for tests of one view or guard without the whole site.

Whatever a test does not give is None, so a code path that reaches for it fails
loudly (an AttributeError on None) rather than reading a default.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from starlette.applications import Starlette

from server.web.services import Cookies, Services


def cookies(**given: Any) -> Cookies:
    return Cookies(**{f.name: None for f in fields(Cookies)} | given)


def services(**given: Any) -> Services:
    return Services(**{f.name: None for f in fields(Services)} | {"page_bodies": {}, "cookies": cookies()} | given)


def on(app: Starlette, **given: Any) -> Starlette:
    """`app` with these services, as the site's lifespan would leave them."""
    app.state.services = services(**given)
    return app
