"""Valkey's replies as valkey-cli prints them on a terminal (its cliFormatReplyTTY).

redis-py hands a status reply over as bytes, like a bulk string: which
commands answer a status is known from the command (`status=True`).
"""

from __future__ import annotations

from typing import Any

from redis import exceptions as errors

# redis-py drops the code of the error replies it knows, keeping it in
# `status_code` (not on an exception made here): valkey-cli prints it.
_CODES: dict[type, str] = {
    errors.NoScriptError: "NOSCRIPT", errors.NoPermissionError: "NOPERM", errors.OutOfMemoryError: "OOM",
    errors.ReadOnlyError: "READONLY", errors.BusyLoadingError: "LOADING", errors.ExecAbortError: "EXECABORT",
    errors.MovedError: "MOVED", errors.AskError: "ASK", errors.TryAgainError: "TRYAGAIN",
    errors.ClusterDownError: "CLUSTERDOWN", errors.ClusterCrossSlotError: "CROSSSLOT",
    errors.MasterDownError: "MASTERDOWN", errors.AuthenticationError: "WRONGPASS",
}
_REPR = {0x5C: "\\\\", 0x22: '\\"', 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x07: "\\a", 0x08: "\\b"}


def quote(value: bytes) -> str:
    """A bulk string as valkey-cli shows it: quoted, escaped like sdscatrepr."""
    escaped = (_REPR.get(b) or (chr(b) if 0x20 <= b <= 0x7E else f"\\x{b:02x}") for b in value)
    return '"' + "".join(escaped) + '"'


def error_text(exc: Exception) -> str:
    """The error reply as valkey-cli prints it, its code said once: redis-py moves a code it
    knows to `status_code` (before 8.2: only to the class); since 8.2 an unknown one is in both."""
    message = str(exc)
    code = getattr(exc, "status_code", None) or _CODES.get(type(exc))
    if code is not None:
        if message == code or message.startswith(f"{code} "):
            return message
        return f"{code} {message}" if message else code
    first = message.split(" ", 1)[0]
    if len(first) >= 2 and first.replace("_", "").isalnum() and first.isupper():
        return message  # a code kept in the message: WRONGTYPE, EMQSTALE, ... before 8.2
    return f"ERR {message}"


def wrong_type(reply: object) -> bool:
    """A command's error on a key of another type than it works on (WRONGTYPE), however redis-py typed it."""
    return isinstance(reply, Exception) and error_text(reply).startswith("WRONGTYPE")


def _scalar(reply: Any, status: bool) -> str:
    if reply is None:
        return "(nil)"
    if isinstance(reply, int):  # a bool too
        return f"(integer) {int(reply)}"
    if isinstance(reply, float):
        return f"(double) {reply:g}"
    if isinstance(reply, errors.RedisError):
        return f"(error) {error_text(reply)}"
    raw = reply if isinstance(reply, bytes) else reply.encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "replace") if status else quote(raw)


def _format(reply: Any, prefix: str, status: bool) -> str:
    if isinstance(reply, dict):  # RESP3 map: as the flat list RESP2 sends
        reply = [x for pair in reply.items() for x in pair]
    if not isinstance(reply, (list, tuple, set)):
        return _scalar(reply, status) + "\n"
    if not reply:
        return "(empty array)\n"
    width = len(str(len(reply)))
    inner = prefix + " " * (width + 2)
    # the first number follows the caller's own text; the others start on new lines, under it
    return "".join(f"{prefix if i else ''}{i + 1:>{width}}) " + _format(item, inner, False)
                   for i, item in enumerate(reply))


def lines(reply: Any, status: bool = False) -> list[str]:
    """The lines valkey-cli prints for `reply` (`status`: a bare status string)."""
    return _format(reply, "", status).rstrip("\n").split("\n")
