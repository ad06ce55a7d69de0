"""Reading a pickled list of numpy arrays without letting the pickle run anything.

The only pickles the project reads are AcmeTrace's pinned distributions (``acme/util_pkl``): a
list of float arrays. ``pickle.load`` would call any global a file names (``os.system`` is one
opcode away), so ``load_arrays`` unpickles with ``find_class`` admitting exactly the globals numpy's
own array pickling names, each behind a guard that checks its arguments:

* ``numpy.core.multiarray._reconstruct`` (numpy 1.x pickles; ``numpy._core.multiarray._reconstruct``
  in numpy 2.x): accepted only as ``_reconstruct(numpy.ndarray, (0,), b'b')``, the empty array numpy
  always writes, whose state (shape, dtype, raw bytes) then comes from the pickle's BUILD;
* ``numpy.ndarray``: only as that first argument (calling it raises);
* ``numpy.dtype``: only a numeric dtype (bool, integer, float), never one that holds objects.

Any other global is refused before it is imported or called, and the error names it. So are a
persistent id, a pickle over ``MAX_BYTES``, bytes after the pickle's end, a truncated or corrupt
stream, and a result that is not a list of one-dimensional float arrays. The caller checks the
file's sha256 against its pin before calling this (``pipelines.ingest.fleet``).
"""

from __future__ import annotations

import io
import pickle
from typing import Any, NoReturn

import numpy as np

#: A larger pickle is refused unread (AcmeTrace's largest is 80 kB).
MAX_BYTES = 16 << 20
#: The globals numpy's array pickling names (numpy 1.x and 2.x spellings of the reconstructor).
RECONSTRUCT = (("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"))
ADMITTED = (*(f"{m}.{n}" for m, n in RECONSTRUCT), "numpy.ndarray", "numpy.dtype")


class PickleRefused(ValueError):
    """A pickle that is refused (an admitted-globals violation, or not a readable list of float arrays); says why."""


class _NdarrayToken:
    """What ``numpy.ndarray`` unpickles to: usable only as ``_reconstruct``'s first argument."""

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        raise PickleRefused("the pickle calls numpy.ndarray directly; only numpy's array reconstruction may use it")


_NDARRAY = _NdarrayToken()


def _reconstruct(subtype: object, shape: object, dtype: object) -> np.ndarray:
    if subtype is not _NDARRAY or shape != (0,) or dtype != b"b":
        raise PickleRefused(f"_reconstruct called with ({type(subtype).__name__}, {shape!r}, {dtype!r}), "
                            "not numpy's (ndarray, (0,), b'b')")
    return np.empty((0,), dtype=np.int8)  # numpy's own _reconstruct makes this; BUILD sets shape, dtype and data


def _dtype(spec: object, align: object = False, copy: object = False) -> np.dtype:
    if not isinstance(spec, str) or not isinstance(align, bool) or not isinstance(copy, bool):
        raise PickleRefused(f"numpy.dtype called with {spec!r}, {align!r}, {copy!r}; only a type code is admitted")
    dtype = np.dtype(spec, align=align, copy=copy)
    if dtype.hasobject or dtype.kind not in "biuf":
        raise PickleRefused(f"numpy.dtype {spec!r} is not numeric (kind {dtype.kind!r}); only numeric arrays are admitted")
    return dtype


class _NumpyArraysOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in RECONSTRUCT:
            return _reconstruct
        if (module, name) == ("numpy", "ndarray"):
            return _NDARRAY
        if (module, name) == ("numpy", "dtype"):
            return _dtype
        raise PickleRefused(f"the pickle names the global {module}.{name}; only {', '.join(ADMITTED)} are admitted")

    def persistent_load(self, pid: Any) -> NoReturn:
        raise PickleRefused("the pickle holds a persistent id; none is admitted")


def load_arrays(data: bytes) -> list[np.ndarray]:
    """The one-dimensional float64 arrays of a pickled list, unpickled with numpy's array globals only.

    Raises ``PickleRefused`` naming the reason (the refused global, a truncated stream, a wrong
    shape or type); nothing the pickle names outside ``ADMITTED`` is imported or called.
    """
    if len(data) > MAX_BYTES:
        raise PickleRefused(f"{len(data):,} bytes: larger than the {MAX_BYTES:,} admitted")
    stream = io.BytesIO(data)
    try:
        value = _NumpyArraysOnly(stream).load()
    except PickleRefused:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError, OverflowError,
            MemoryError, RecursionError, UnicodeDecodeError) as exc:
        raise PickleRefused(f"not a readable pickle, truncated or corrupt ({type(exc).__name__}: {exc})") from None
    if stream.tell() != len(data):
        raise PickleRefused(f"{len(data) - stream.tell():,} bytes after the pickle's end")
    if not isinstance(value, list):
        raise PickleRefused(f"holds a {type(value).__name__}, not a list of arrays")
    for i, item in enumerate(value):
        if not isinstance(item, np.ndarray) or item.ndim != 1 or item.dtype != np.float64:
            what = f"{item.ndim}-d {item.dtype} array" if isinstance(item, np.ndarray) else type(item).__name__
            raise PickleRefused(f"item {i} is a {what}, not a one-dimensional float64 array")
    return value
