"""The cookie-signing secret: EMQLAB_SECRET, else the file in the site's data
directory (server/valkey/datadir.py: made once, 0600, shared by every worker,
an older state folder's secret moved in), so cookies survive a restart of
the site or of Valkey."""

from __future__ import annotations

from server.settings import Settings
from server.valkey.datadir import site_secret


def load_secret(settings: Settings) -> str:
    """The secret every worker of this site signs cookies with."""
    return settings.secret or site_secret(settings.data_dir)


__all__ = ["load_secret"]
