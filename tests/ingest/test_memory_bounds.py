"""The readers' bounds hold memory, measured: each bound's reader runs in a child process on a small bomb, and the child's
peak RSS (the kernel's, ``tests.support.peak_rss``) stays within the bound's budget over a child that read a tiny file.

Each bomb is a few kilobytes on disk (or a sparse file) that, read without its bound, takes at least five times the
bounded child's peak; each test's docstring says what its bound's removal gave (measured once by hand, bound removed in
a scratch edit: the test failed). The other tests of the bounds check their messages; these check the memory.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from tests.ingest.test_slurm import HEADER, row
from tests.support.peak_rss import peak_rss_mib

MIB = 1 << 20

#: One child for every bound: READ (decompress, line, rows, fields) of PATH with the bound at N; prints the reader's one error line.
READER = """
import sys
from pathlib import Path
from pipelines.ingest.common import IngestError
from pipelines.ingest.compressed import decompressed_chunks
from pipelines.ingest.text_reader import ReadLimits, Source
from pipelines.ingest.slurm import read_sacct

what, path, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
try:
    if what == "decompress":
        for _ in decompressed_chunks(path, limit=n):
            pass
    elif what == "line":
        for _ in Source(path, path.name, chunk_bytes=1 << 20, digest=False, limits=ReadLimits(line_bytes=n)).blocks():
            pass
    elif what == "rows":
        read_sacct(path, trace="t", source_file=path.name, limits=ReadLimits(rows=n))
    elif what == "fields":
        result = read_sacct(path, trace="t", source_file=path.name, limits=ReadLimits(field_bytes=n))
        print(result.counts.quarantined, result.quarantine["reason"][0])
    print("read whole")
except IngestError as exc:
    print(exc)
"""


@pytest.fixture(scope="module")
def baseline_mib(tmp_path_factory: pytest.TempPathFactory) -> float:
    """The reader child's peak on a file of one line: the interpreter and the readers' imports (polars among them)."""
    path = tmp_path_factory.mktemp("baseline") / "t.sacct"
    path.write_text(HEADER + "\n")
    code, out, peak = peak_rss_mib(READER, "rows", str(path), "10")
    assert (code, out) == (0, "read whole\n")
    return peak


def _read(what: str, path: Path, bound: int) -> tuple[str, float]:
    code, out, peak = peak_rss_mib(READER, what, str(path), str(bound))
    assert code == 0, out
    return out.strip(), peak


def gzip_zeros(mib: int) -> bytes:
    """A gzip member of ``mib`` MiB of zero bytes, in a millisecond: deflate's output for 1 MiB of zeros after a full flush
    (which resets its state) is the same each time, so it is repeated. Its trailer's CRC is not computed (the readers stop
    long before it); ISIZE is right."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(bytes(MIB)) + deflate.flush(zlib.Z_FULL_FLUSH)
    again = deflate.compress(bytes(MIB)) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert deflate.compress(bytes(MIB)) + deflate.flush(zlib.Z_FULL_FLUSH) == again
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + first + again * (mib - 1) + deflate.flush() + (0).to_bytes(4, "little") + ((mib * MIB) % (1 << 32)).to_bytes(4, "little")


def zstd_zeros(mib: int) -> bytes:
    """A zstd frame of ``mib`` MiB of zero bytes: RLE blocks of 128 KiB, each 3 header bytes and the byte (RFC 8878 3.1.1.2);
    frame header: no content size, no checksum, a 128 KiB window."""
    blocks = mib * 8
    head = b"\x28\xb5\x2f\xfd" + bytes([0x00, 7 << 3])
    return head + b"".join(((128 * 1024) << 3 | 1 << 1 | (i == blocks - 1)).to_bytes(3, "little") + b"\0" for i in range(blocks))


def test_a_gzip_bomb_stops_at_the_cap_in_memory_too(tmp_path: Path, baseline_mib: float) -> None:
    """640 MiB of zeros in 664 kB of gzip, read with an 8 MiB cap. zlib is asked for at most what the cap leaves
    (``_decompress``'s ``bounded``): with ``bounded = False`` it expands the whole member in one call, and this test failed
    (peak 744 MiB against 120 MiB bounded; the reader then stops at the trailer's CRC, after the memory was spent)."""
    path = tmp_path / "bomb.sacct.gz"
    path.write_bytes(gzip_zeros(640))
    message, peak = _read("decompress", path, 8 * MIB)
    assert peak - baseline_mib < 48, (peak, baseline_mib)  # the cap's 8 MiB, the input's MiB, the allocator's slack
    assert message == "bomb.sacct.gz: decompresses to more than 8,388,608 bytes (the cap on decompressed size; --max-bytes raises it); " \
                      "refusing it as a possible decompression bomb"


def test_a_zstd_bomb_stops_at_the_cap_in_memory_too(tmp_path: Path, baseline_mib: float) -> None:
    """1 GiB of zeros in 33 kB of zstd, read with an 8 MiB cap. zstd's decompressor has no output bound: it is fed
    ``_ZSTD_PIECE`` (2 KiB) at a time, at most 64 MiB of output a call. Fed ``_READ`` (1 MiB) at a time instead, this test
    failed (peak 1,128 MiB against 169 MiB)."""
    path = tmp_path / "bomb.sacct.zst"
    path.write_bytes(zstd_zeros(1024))
    message, peak = _read("decompress", path, 8 * MIB)
    assert peak - baseline_mib < 112, (peak, baseline_mib)  # one call's 64 MiB and the allocator's slack
    assert message.startswith("bomb.sacct.zst: decompresses to more than 8,388,608 bytes")


def test_a_line_without_an_end_stops_at_the_line_bound_in_memory_too(tmp_path: Path, baseline_mib: float) -> None:
    """A 512 MiB sparse file of zero bytes (no line break; no disk), read in 1 MiB blocks with a 1 MiB bound on a line. The
    block reader checks the line it carries as it grows (``Source._pieces``): without that check it carried the whole
    file, and this test failed (peak 1,131 MiB against 113 MiB)."""
    path = tmp_path / "one-line.sacct"
    with path.open("wb") as f:
        f.truncate(512 * MIB)
    message, peak = _read("line", path, MIB)
    assert peak - baseline_mib < 32, (peak, baseline_mib)
    assert message == "one-line.sacct:1: a line longer than 1,048,576 bytes (the bound on one line; --max-line-bytes raises it)"


def test_empty_lines_stop_at_the_row_bound_in_memory_too(tmp_path: Path, baseline_mib: float) -> None:
    """A header and 8,000,000 empty lines (8 MB), read with a bound of 10,000 rows: a block's lines are counted before it is
    indexed or parsed. Without ``check_rows`` in ``Source.blocks`` this test failed (peak 1,252 MiB against 128 MiB); with the
    rows counted after ``_lines`` (as before this test), the bounded read itself peaked at 355 MiB (four integers per line)."""
    path = tmp_path / "empty-lines.sacct"
    path.write_bytes(HEADER.encode() + b"\n" + b"\n" * 8_000_000)
    message, peak = _read("rows", path, 10_000)
    assert peak - baseline_mib < 48, (peak, baseline_mib)
    assert message == "empty-lines.sacct: more than 10,000 lines (the bound on rows per file; --max-rows raises it)"


def test_a_gzip_bomb_under_a_large_cap_is_expanded_a_mebibyte_at_a_time(tmp_path: Path, baseline_mib: float) -> None:
    """640 MiB of zeros in 664 kB of gzip, read to a cap of 600 MiB (every byte of it streamed, none kept). zlib is asked
    for ``_OUT`` (1 MiB) a call: asked for all the cap left, one call of 1 MiB of input returned hundreds of MiB, and
    this test failed (xz: 2.2 GB held for the default 1 GiB cap, issue 54)."""
    path = tmp_path / "bomb.sacct.gz"
    path.write_bytes(gzip_zeros(640))
    message, peak = _read("decompress", path, 600 * MIB)
    assert peak - baseline_mib < 48, (peak, baseline_mib)
    assert message.startswith("bomb.sacct.gz: decompresses to more than 629,145,600 bytes")


def test_long_fields_are_quarantined_before_the_parse_in_memory_too(tmp_path: Path, baseline_mib: float) -> None:
    """A header and 100 lines of a 900 kB JobName each (90 MB; every line under the 1 MiB bound on a line), read with the
    default bound of 64 KiB on a field: each line is withheld as its block is read (``Source.bound_fields``), its
    quarantine row cut to 2,000 characters (``common.cut_raw``). Measured by hand: 95 MiB over the baseline; with the
    check in ``Source.blocks`` removed (the lines reach polars) 226 MiB, and this test failed; with that check and the cut
    both removed (as before issue 54, whose 1,401 such lines held 8.5 GB) 614 MiB: 6.5 times the bounded peak."""
    path = tmp_path / "long-names.sacct"
    with path.open("w") as f:
        f.write(HEADER + "\n")
        for job in range(1, 101):
            f.write(row(str(job), name="n" * 900_000) + "\n")
    message, peak = _read("fields", path, 1 << 16)
    assert peak - baseline_mib < 150, (peak, baseline_mib)
    assert message == "100 JobName: 900,000 bytes, more than 65,536 (the bound on one field; the line is not parsed)\nread whole"


#: A table read whole (``text_reader.read_bytes``): a group table (``read_table_file``) or a user's summary_train.csv
#: (``read_train``: ``whatif --trace-dir``, ``simulate``); prints the one error line.
TABLE_READER = """
import sys
from pathlib import Path
from pipelines.ingest.common import IngestError
from pipelines.ingest.simulator_inputs import read_table_file
from pipelines.ingest.zeus import read_train
from pipelines.zeus.traces import TraceError

what, path = sys.argv[1], Path(sys.argv[2])
try:
    print(read_table_file(path).shape if what == "group" else read_train(path).lines_in)
except (IngestError, TraceError) as exc:
    print(exc)
"""


@pytest.mark.parametrize(("what", "name"), [("group", "groups.csv"), ("train", "summary_train.csv")])
def test_a_table_over_the_table_bound_is_refused_before_it_is_read(tmp_path: Path, baseline_mib: float, what: str, name: str) -> None:
    """A 512 MiB sparse file (no disk) where a table read whole is expected: refused by its size, a byte never read
    (``text_reader.MAX_TABLE_BYTES``, 128 MiB). Before issue 53's one bounded read the group table was read whole under the
    1 GiB cap on decompressed bytes (a 1.0 GB CSV peaked at 2.12 GB), the trace folder's file without any bound on
    bytes; measured by hand on this file with that code (/usr/bin/time): 1,105 MiB (group) and 588 MiB (train), each
    before a bound on one line refused it, against 78 MiB now."""
    path = tmp_path / name
    with path.open("wb") as f:
        f.write(b"group,start_time,end_time,dataset,runtime_ratio\n")
        f.truncate(512 * MIB)
    code, out, peak = peak_rss_mib(TABLE_READER, what, str(path))
    assert code == 0, out
    assert peak - baseline_mib < 48, (peak, baseline_mib)
    shown = str(path) if what == "group" else name
    assert out.strip() == f"{shown}: larger than 134,217,728 bytes (the bound on a table read whole)"
