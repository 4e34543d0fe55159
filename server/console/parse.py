"""Split a console line the way valkey-cli (sdssplitargs) does, saying what is wrong and where
instead of "Invalid argument(s)". Arguments must be UTF-8: the widgets read the keys as text."""

from __future__ import annotations

import re
from dataclasses import dataclass

SPACE = " \t\n\r\v\f"
ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "a": "\a"}
HEX = "0123456789abcdefABCDEF"


class Malformed(ValueError):
    """A line that cannot be split into arguments (answered with a 400)."""


@dataclass(frozen=True)
class Limits:
    line_bytes: int = 4096
    arguments: int = 64
    argument_bytes: int = 1024


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Malformed(f"the line is not valid UTF-8 text (a lone surrogate at position {exc.start + 1})") from exc


_PLAIN = re.compile(r"[^ \t\n\r\v\f\"']+")  # a run of an unquoted word
_IN_QUOTES = {'"': re.compile(r'[^"\\]+'), "'": re.compile(r"[^'\\]+")}


def _quoted(line: str, at: int, quote: str, out: bytearray) -> int:
    """The index after the closing quote of the part opened at `at`."""
    i = at + 1
    run = _IN_QUOTES[quote]
    while i < len(line):
        plain = run.match(line, i)
        if plain:
            out += _utf8(plain.group())
            i = plain.end()
            continue
        ch = line[i]
        if quote == '"' and line.startswith("\\x", i) and len(line) > i + 3 \
                and line[i + 2] in HEX and line[i + 3] in HEX:
            out.append(int(line[i + 2:i + 4], 16))
            i += 4
        elif ch == "\\" and i + 1 < len(line) and (quote == '"' or line[i + 1] == "'"):
            nxt = line[i + 1]
            out += _utf8(ESCAPES.get(nxt, nxt) if quote == '"' else nxt)
            i += 2
        elif ch == quote:
            if i + 1 < len(line) and line[i + 1] not in SPACE:
                raise Malformed(f"the quote closed at column {i + 1} must be followed by a space or the end of "
                                "the line")
            return i + 1
        else:  # a backslash with nothing it escapes: kept as it is
            out += b"\\"
            i += 1
    name = "double" if quote == '"' else "single"
    raise Malformed(f"unbalanced quotes: the {name} quote opened at column {at + 1} is never closed")


def split(line: str, limits: Limits = Limits()) -> list[str]:
    size = len(_utf8(line))
    if size > limits.line_bytes:
        raise Malformed(f"the command is {size} bytes long; the console takes at most {limits.line_bytes}")
    args: list[str] = []
    i = 0
    while True:
        while i < len(line) and line[i] in SPACE:
            i += 1
        if i >= len(line):
            break
        raw = bytearray()  # an unquoted run, then perhaps one quoted part
        plain = _PLAIN.match(line, i)
        if plain:
            raw += _utf8(plain.group())
            i = plain.end()
        if i < len(line) and line[i] in "\"'":
            i = _quoted(line, i, line[i], raw)
        if len(raw) > limits.argument_bytes:
            raise Malformed(f"argument {len(args) + 1} is {len(raw)} bytes long; each argument may be at most "
                            f"{limits.argument_bytes} bytes")
        try:
            args.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise Malformed(f"argument {len(args) + 1} is not UTF-8 text (its \\x escapes make invalid bytes); "
                            "the widgets read these keys as text") from exc
        if len(args) > limits.arguments:
            raise Malformed(f"more than {limits.arguments} arguments; the console takes at most {limits.arguments}")
    if not args:
        raise Malformed("type a command, e.g. HGETALL emq:{fanin}:job:JOBparent")
    return args
