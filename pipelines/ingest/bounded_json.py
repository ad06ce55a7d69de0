"""The bounds on a JSON document a user gives (a Zeus profile, an OpenEI tariff): its bytes and its depth.

Python's ``json`` reads the whole text into objects of several times its size (a 294 MB profile held 2.13 GB) and
recurses once per level of nesting (a deeply nested file raised ``RecursionError``; issue 54). So the bytes are read
under a bound (``text_reader.read_bytes``: a larger regular file is refused by its size, before a byte is read), and
the depth is measured from the text's brackets, outside its strings, before ``json`` parses it. Each bound is one
``IngestError`` line naming the file and the bound.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from pipelines.ingest.common import IngestError
from pipelines.ingest.text_reader import read_bytes

#: Most bytes of a JSON document a user gives (a Zeus profile of a few thousand measurements is under 1 MB).
MAX_JSON_BYTES = 16 << 20
#: Most levels of nesting of such a document (a Zeus profile has 3, an OpenEI item 5).
MAX_JSON_DEPTH = 32
#: A JSON string, escapes included (unrolled: no backtracking per character).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN, _CLOSE = np.array([ord("["), ord("{")], np.uint8), np.array([ord("]"), ord("}")], np.uint8)


def read_json_text(path: Path, name: str, what: str) -> str:
    """The text of ``path``, ``MAX_JSON_BYTES`` at most, decoded as UTF-8 (a byte order mark dropped); else one
    ``IngestError`` line (the bound on ``what``, or the line of the first byte that is not UTF-8)."""
    data = read_bytes(path, name, max_bytes=MAX_JSON_BYTES, what=what)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise IngestError(name, f"not UTF-8 text (byte {exc.start})", line=data[: exc.start].count(b"\n") + 1) from None


def json_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in ``text`` outside its strings (0: a scalar). Brackets are counted, not matched:
    for a text that is not JSON the number is only a bound the parse's own error follows."""
    bare = np.frombuffer(_STRING.sub('""', text).encode("utf-8", "surrogatepass"), np.uint8)
    brackets = bare[np.isin(bare, _OPEN) | np.isin(bare, _CLOSE)]
    if not brackets.size:
        return 0
    return int(np.cumsum(np.where(np.isin(brackets, _OPEN), 1, -1)).max())


def check_json_depth(text: str, name: str, limit: int = MAX_JSON_DEPTH) -> str:
    """``text``, if nested at most ``limit`` levels deep; else one ``IngestError`` line naming the bound."""
    depth = json_depth(text)
    if depth > limit:
        raise IngestError(name, f"JSON nested {depth:,} levels deep, more than {limit} (the bound on JSON depth)")
    return text
