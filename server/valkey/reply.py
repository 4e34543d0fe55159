"""Valkey's replies as valkey-cli prints them on a terminal.

The rules are valkey-cli's (cliFormatReplyTTY): an integer is ``(integer) 3``,
a bulk string is quoted with its bytes escaped (``"a\\"b"``, ``"\\xe2\\x86\\x92"``),
a status is printed bare (``OK``), a missing value is ``(nil)``, an error is
``(error) ...``, an empty array ``(empty array)``, and an array numbers its
items ``1)``, right-aligned to the widest index, with nested arrays indented
under their parent's number.

redis-py hands a status reply over as bytes, like a bulk string; which
commands answer a status is known from the command (`status=True`).
"""

from __future__ import annotations

from typing import Any

from redis import exceptions as errors

# redis-py drops the code from the error replies it knows ("ERR", "NOSCRIPT",
# ...) and keeps it in the exception's `status_code`; valkey-cli prints the
# reply whole. An exception made without one (not read off the wire) is
# known by its class, from redis-py's public exceptions.
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
    out = ['"']
    for byte in value:
        if byte in _REPR:
            out.append(_REPR[byte])
        elif 0x20 <= byte <= 0x7E:
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    out.append('"')
    return "".join(out)


def error_text(exc: Exception) -> str:
    """The error reply as Valkey sent it, its code restored."""
    message = str(exc)
    code = getattr(exc, "status_code", None) or _CODES.get(type(exc))
    if code is not None:
        return f"{code} {message}" if message else str(code)
    first = message.split(" ", 1)[0]
    if len(first) >= 2 and first.replace("_", "").isalnum() and first.isupper():
        return message  # a code redis-py does not know, kept: WRONGTYPE, EMQSTALE, ...
    return f"ERR {message}"


def _as_bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")


def _scalar(reply: Any, status: bool) -> str:
    if reply is None:
        return "(nil)"
    if isinstance(reply, bool):
        return f"(integer) {int(reply)}"
    if isinstance(reply, int):
        return f"(integer) {reply}"
    if isinstance(reply, float):
        return f"(double) {reply:g}"
    if isinstance(reply, errors.RedisError):
        return f"(error) {error_text(reply)}"
    raw = _as_bytes(reply)
    return raw.decode("utf-8", "replace") if status else quote(raw)


def _array(items: list[Any], prefix: str) -> str:
    if not items:
        return "(empty array)\n"
    width = len(str(len(items)))
    inner = prefix + " " * (width + 2)
    out = []
    for i, item in enumerate(items):
        out.append(f"{'' if i == 0 else prefix}{i + 1:>{width}}) ")
        out.append(_format(item, inner, False))
    return "".join(out)


def _format(reply: Any, prefix: str, status: bool) -> str:
    if isinstance(reply, dict):  # RESP3 map: as the flat list RESP2 sends
        reply = [x for pair in reply.items() for x in pair]
    if isinstance(reply, (list, tuple, set)):
        return _array(list(reply), prefix)
    return _scalar(reply, status) + "\n"


def lines(reply: Any, status: bool = False) -> list[str]:
    """The lines valkey-cli prints for `reply` (`status`: a bare status string)."""
    return _format(reply, "", status).rstrip("\n").split("\n")


def error_lines(exc: Exception) -> list[str]:
    return [f"(error) {error_text(exc)}"]
