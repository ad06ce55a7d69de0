"""The bounds on a JSON document a user gives (``pipelines.ingest.bounded_json``; issue 54 item 1): its depth, measured
before ``json`` recurses, and its bytes, held by a measurement of the reader's peak memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.ingest.bounded_json import MAX_JSON_BYTES, MAX_JSON_DEPTH, check_json_depth, json_depth
from pipelines.ingest.common import IngestError
from pipelines.ingest.openei import read_tariff
from pipelines.ingest.power_limit_profiles import read_zeus_json
from tests.support.peak_rss import peak_rss_mib

MIB = 1 << 20


@pytest.mark.parametrize(("text", "depth"), [
    ("1", 0),
    ("[]", 1),
    ('{"a": [1, {"b": [2]}], "c": {}}', 4),  # { [ { [ : four open at "2"
    ('{"a": "[[[[{{{{"}', 1),  # brackets inside a string are text
    ('{"a": "x\\"[[["}', 1),  # an escaped quote does not end the string
    ("[[]][[[]]]", 3),
])
def test_depth_is_counted_outside_strings(text: str, depth: int) -> None:
    assert json_depth(text) == depth


def test_the_bound_is_32_levels_and_one_more_is_one_line() -> None:
    assert MAX_JSON_DEPTH == 32 and MAX_JSON_BYTES == 16 * MIB
    assert check_json_depth("[" * 32 + "]" * 32, "ok.json") == "[" * 32 + "]" * 32
    with pytest.raises(IngestError) as caught:
        check_json_depth("[" * 33 + "]" * 33, "deep.json")
    assert str(caught.value) == "deep.json: JSON nested 33 levels deep, more than 32 (the bound on JSON depth)"


def test_both_json_readers_refuse_a_deep_file_before_python_recurses(tmp_path: Path) -> None:
    """100,000 levels: ``json.loads`` raised ``RecursionError`` on it (issue 54)."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for read in (lambda: read_zeus_json(deep), lambda: read_tariff(deep, "UTC")):
        with pytest.raises(IngestError) as caught:
            read()
        assert str(caught.value) == f"{deep}: JSON nested 100,000 levels deep, more than 32 (the bound on JSON depth)"


#: read_tariff of PATH in a child: prints its one error line.
TARIFF = """
import sys
from pathlib import Path
from pipelines.ingest.common import IngestError
from pipelines.ingest.openei import read_tariff
try:
    read_tariff(Path(sys.argv[1]), "UTC")
except IngestError as exc:
    print(exc)
"""


def test_an_openei_tariff_over_the_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A 200 MiB tariff (sparse: no disk spent) is refused by its size: the child's peak is that of a 2-byte one. Without
    the bound (``path.read_text``, as before issue 54, where a 294 MB JSON held 2.13 GB) the bytes, their text and
    the depth scan's copies are all held: measured by hand with ``MAX_JSON_BYTES`` raised to 1 GiB, 1,276 MiB against the
    small file's 83 MiB (bounded: 83 MiB, the same), and this test failed."""
    small = tmp_path / "small.json"
    small.write_text("{}")
    code, out, baseline = peak_rss_mib(TARIFF, str(small))
    assert code == 0 and out.startswith(f"{small}: "), out
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(200 * MIB)
    code, out, peak = peak_rss_mib(TARIFF, str(big))
    assert (code, out) == (0, f"{big}: larger than 16,777,216 bytes (the bound on an OpenEI tariff)\n")
    assert peak - baseline < 32, (peak, baseline)
