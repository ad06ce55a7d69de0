"""Text from the user's files (job names, users, GPU types, file names) made safe to print on a terminal.

A job name may hold terminal escape sequences (``ESC[2J`` clears the screen, ``ESC]8;;...``
writes a link, OSC 52 may set the clipboard) or bidirectional overrides that show text in another
order than it is stored. ``printable`` writes each such character as its Python escape
(``\\x1b``, ``\\u202e``), so what reaches the terminal is what the file holds, character by
character. JSON output needs none of this (``json.dumps`` escapes control characters itself).
"""

from __future__ import annotations

import math
import re
from typing import Any

#: C0 and C1 control characters, DEL, and the bidirectional embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def printable(text: str) -> str:
    """``text`` with every control character and bidirectional override written as its escape (``\\x1b``, ``\\n``, ``\\u202e``)."""
    return _UNSAFE.sub(_escape, text)


#: How ``json_safe`` writes a float that JSON has no number for (the spellings JavaScript's ``Number()`` and Python's
#: ``float()`` read back); every command's JSON output follows this one rule (``sql --format json``, ``whatif --json``).
NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def json_safe(value: Any) -> Any:
    """``value`` (dicts, lists, numbers) with each NaN or infinite float replaced by its ``NON_FINITE`` string, so that
    ``json.dumps(..., allow_nan=False)`` writes valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return NON_FINITE[str(value)]
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def printable_data(value: Any) -> Any:
    """``value`` (a report: dicts, lists, strings, numbers) with ``printable`` applied to every string, keys included."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_data(k): printable_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(printable_data(v) for v in value)
    return value


#: Most characters of the user's input one error line quotes (issue 54: a 50 MB header was quoted whole on stderr).
QUOTE_LIMIT = 200
#: What an error line quotes: a parenthesis, a bracket or quotes holding more than ``QUOTE_LIMIT`` characters (a header's
#: columns, a value's repr), or a run of that many without a space (a line, a path).
_N = f"{{{QUOTE_LIMIT + 1},}}"
_QUOTED = re.compile(rf"\(([^()]{_N})\)|\[([^\[\]]{_N})\]|'([^'\n]{_N})'|\"([^\"\n]{_N})\"|(\S{_N})")


def _clip(match: re.Match[str]) -> str:
    index, inner = next((i, g) for i, g in enumerate(match.groups()) if g is not None)
    opening, closing = ("(", ")", "[", "]", "'", "'", '"', '"', "", "")[2 * index:2 * index + 2]
    return f"{opening}{inner[:QUOTE_LIMIT]}... ({len(inner):,} characters){closing}"


def clip_input(message: str) -> str:
    """``message`` (an error line) with each piece of quoted input longer than ``QUOTE_LIMIT`` characters cut to that many,
    followed by how long it was: ``(has c0, c1, ..., c9999)`` -> ``(has c0, c1, ... c41... (68,888 characters))``."""
    return _QUOTED.sub(_clip, message) if len(message) > QUOTE_LIMIT else message
