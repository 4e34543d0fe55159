"""The cookie-signing secret: EMQLAB_SECRET, else the file in the site's data directory
(shared by every worker), so cookies survive a restart of the site or of Valkey."""

from __future__ import annotations

from server.settings import Settings
from server.valkey.datadir import site_secret


def load_secret(settings: Settings) -> str:
    return settings.secret or site_secret(settings.data_dir)
