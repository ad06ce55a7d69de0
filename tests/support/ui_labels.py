"""How the Dagster UI (dagster-webserver's bundle) cuts an asset's name to fit a lineage node.

The UI shows an asset by the last element of its key (its *leaf*), cut in the middle by
``withMiddleTruncation`` (ui-core/src/app/Util.tsx) to ``maxLength`` characters: 18 in the zoomed-out
global lineage (``AssetNodeMinimal``), 31 on a full node (``ASSET_NODE_NAME_MAX_LENGTH``), 30 on a
link to an asset of another group (``ASSET_LINK_NAME_MAX_LENGTH``). It cuts at an underscore (or
``__``, ``.``, ``-``, ``>``) when it can, keeping the text from that breakpoint to the end, so
``clusters_energy_timeline`` becomes ``clusters…_timeline``.

``middle_truncation`` is a line-for-line port of that function; ``installed_ui_source`` reads the
TypeScript sources shipped in the installed bundle's source maps, so a test can check that the port
and the lengths still are Dagster's.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

#: The bundle's source-map entries read here (``webpack://_N_E/../ui-core/src/<file>``).
UTIL, ASSET_NODE, LAYOUT = "app/Util.tsx", "asset-graph/AssetNode.tsx", "asset-graph/layout.ts"


def _indexes_of(text: str, pattern: str) -> list[int]:
    return [m.start() for m in re.finditer(pattern, text)]


def middle_truncation(text: str, max_length: int) -> str:
    """``withMiddleTruncation(text, {maxLength})`` of dagster-webserver's UI (ASCII text: JS counts UTF-16 units)."""
    overflow = len(text) - max_length
    if overflow <= 0:
        return text
    if max_length <= 10:
        return text[: max_length - 1] + "…"
    breakpoints = _indexes_of(text, "__") if "__" in text else _indexes_of(text, r"[_>.\-]")
    breakpoint = (len(text) + overflow) // 2
    first_usable = next((i for i, b in enumerate(breakpoints) if b > overflow + 3), -1)
    if first_usable != -1:
        breakpoint = breakpoints[max(first_usable, len(breakpoints) // 2)]
    # JS substring(0, n) with n < 0 is the empty string.
    return text[: max(0, breakpoint - (overflow + 1))] + "…" + text[breakpoint:]


@cache
def installed_ui_source() -> dict[str, str]:
    """{file under ui-core/src: its TypeScript} for ``UTIL``, ``ASSET_NODE`` and ``LAYOUT``, from the installed bundle's maps."""
    import dagster_webserver

    wanted = {f"webpack://_N_E/../ui-core/src/{name}": name for name in (UTIL, ASSET_NODE, LAYOUT)}
    found: dict[str, str] = {}
    chunks = Path(dagster_webserver.__file__).parent / "webapp" / "build" / "_next" / "static" / "chunks"
    for path in sorted(chunks.glob("*.js.map")):
        raw = path.read_bytes()
        if not any(source.encode() in raw for source in wanted):
            continue
        source_map = json.loads(raw)
        for source, content in zip(source_map["sources"], source_map.get("sourcesContent") or [], strict=False):
            if source in wanted and content:
                found[wanted[source]] = content
    return found
