"""Whether the cookie-signing secret changed under a Valkey's data: said in the log.

A new secret (file deleted or replaced, new `EMQLAB_SECRET`) voids every cookie
at once, so Valkey keeps a keyed fingerprint of the secret its data was written
under (the secret cannot be read back from it) and each start compares it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging

from server.emq.wire import Conn, as_text

log = logging.getLogger("emqlab.secret")

KEY = "lab:secret-fingerprint"
CHANGED = ("the cookie-signing secret is not the one this Valkey's data was written under (its file was deleted "
           "or replaced, or EMQLAB_SECRET changed): every cookie signed before no longer counts, so every "
           "visitor gets a new sandbox, every class member joins again and the instructor signs in again")


async def note(conn: Conn, secret: str) -> bool:
    """Record this secret's fingerprint (SET … GET: one worker of many sees the old one);
    True, and one warning logged, when Valkey held another secret's."""
    mine = hmac.new(secret.encode(), b"emqlab-secret-seen", hashlib.sha256).hexdigest()[:32]
    before = await conn.set(KEY, mine, get=True)
    if before is not None and as_text(before) != mine:
        log.warning("emqlab: %s", CHANGED)
        return True
    return False
