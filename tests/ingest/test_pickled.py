"""The restricted unpickler: AcmeTrace's pinned pickles load; anything naming another global, or not a list of float arrays, is refused."""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from pipelines.ingest.fleet import FILES, PAIRS
from pipelines.ingest.pickled import MAX_BYTES, PickleRefused, load_arrays


class Hostile:
    """Unpickles by calling ``fn(*args)`` (what a pickle can do to ``pickle.load``)."""

    def __init__(self, fn: object, *args: object) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return self.fn, self.args


def test_the_pinned_files_load_as_float_arrays(mirror: Path) -> None:
    for name in FILES:
        arrays = load_arrays((mirror / name).read_bytes())
        assert len(arrays) == 2 * PAIRS[name], name
        assert all(a.dtype == np.float64 and a.shape == (1000,) for a in arrays), name
        # every y is the upstream notebook's np.linspace(0, 1, 1000) * 100, every x a quantile curve (non-decreasing)
        for x, y in zip(arrays[::2], arrays[1::2], strict=True):
            assert np.array_equal(y, np.linspace(0, 1, num=1000) * 100) and (np.diff(x) >= 0).all(), name


def test_a_pickle_that_would_run_a_command_is_refused_naming_the_global_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    for hostile in (Hostile(os.system, f"touch {marker}"), Hostile(eval, f"open({str(marker)!r}, 'w')"),
                    Hostile(__import__("subprocess").call, ["touch", str(marker)])):
        data = pickle.dumps([np.zeros(3), hostile])
        with pytest.raises(PickleRefused, match=r"names the global (posix|nt|builtins|subprocess)\.(system|eval|call); only numpy"):
            load_arrays(data)
    assert not marker.exists()


def test_numpys_globals_are_admitted_only_as_numpys_pickling_uses_them() -> None:
    ndarray_called = Hostile(np.ndarray, (10**12,))  # a huge allocation through the admitted class
    with pytest.raises(PickleRefused, match="calls numpy.ndarray directly"):
        load_arrays(pickle.dumps([ndarray_called]))
    with pytest.raises(PickleRefused, match="not numeric"):
        load_arrays(pickle.dumps([np.array(["a"], dtype=object)]))
    reconstruct = __import__("numpy._core.multiarray", fromlist=["_reconstruct"])._reconstruct
    with pytest.raises(PickleRefused, match=r"_reconstruct called with .*\(10,\)"):
        load_arrays(pickle.dumps([Hostile(reconstruct, np.ndarray, (10,), b"b")]))
    with pytest.raises(PickleRefused, match="the global numpy.load"):
        load_arrays(pickle.dumps([Hostile(np.load, "x.npy")]))


def test_truncated_padded_oversized_or_misshapen_pickles_are_refused_with_the_reason(mirror: Path) -> None:
    data = (mirror / "acme/util_pkl/gpu_power_kalos.pkl").read_bytes()
    for cut in (0, 1, 100, len(data) // 2, len(data) - 1):
        with pytest.raises(PickleRefused, match="not a readable pickle, truncated or corrupt"):
            load_arrays(data[:cut])
    with pytest.raises(PickleRefused, match="3 bytes after the pickle's end"):
        load_arrays(data + b"\x00\x00\x00")
    with pytest.raises(PickleRefused, match="larger than"):
        load_arrays(b"\x80" * (MAX_BYTES + 1))
    for value, reason in (({"x": np.zeros(2)}, "holds a dict"), ([np.zeros((2, 2))], "2-d float64"),
                          ([np.arange(3)], "1-d int64"), ([[1.0, 2.0]], "item 0 is a list")):
        with pytest.raises(PickleRefused, match=reason):
            load_arrays(pickle.dumps(value))


def test_a_persistent_id_is_refused() -> None:
    buffer = io.BytesIO()

    class WithIds(pickle.Pickler):
        def persistent_id(self, obj: object) -> str | None:
            return "external" if isinstance(obj, str) else None

    WithIds(buffer).dump(["ref"])
    with pytest.raises(PickleRefused, match="persistent id"):
        load_arrays(buffer.getvalue())
