"""A Ctrl-C that always ends a command: ``ctrl_c_ends_command`` (issue 39: Ctrl-C stops a command within 2 s, rc 130).

Python's own SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread happens to be. Where that is a weakref
callback, a ``__del__`` or a library's ``except BaseException``, the exception is dropped and the command runs on: a
``whatif`` on a LocalCluster wrote its report after a Ctrl-C, and another waited 30 s in a scatter for the workers the
same Ctrl-C had ended. Here the handler raises ``KeyboardInterrupt`` as Python's does, and also starts a watchdog. If the
process still runs ``GRACE_S`` later (and no ``deferred`` cleanup runs), the watchdog kills the command's child
processes, removes the temp files in flight (``removed_on_abort``: those of ``atomic.atomic_path``, a decompressed
export) and exits with status 130. Those temp files are also removed when SIGTERM or SIGHUP ends the process (where the
signal still has its default action) and at the interpreter's exit. ``atomic_path`` publishes nothing once a Ctrl-C came (``requested``), so an output
never appears after one.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

#: The exit status of a process ended by Ctrl-C (128 + SIGINT), as a shell reports it.
SIGINT_STATUS = 130
#: Seconds from a Ctrl-C until the watchdog ends a command that did not end by its ``KeyboardInterrupt``.
GRACE_S = 1.0

_requested = threading.Event()
#: Held while a cleanup that must finish runs (``deferred``): the watchdog waits for it.
_hold = threading.RLock()
#: Temp files and folders the watchdog removes before it exits (``removed_on_abort``): it ends the process without
#: running their writers' ``finally``.
_temporary: set[Path] = set()


def requested() -> bool:
    """True once this process got a Ctrl-C under ``ctrl_c_ends_command``."""
    return _requested.is_set()


@contextlib.contextmanager
def removed_on_abort(path: Path) -> Iterator[Path]:
    """Within the block, ``path`` (a temp file or folder) is removed if the watchdog ends the process, if a SIGTERM or
    SIGHUP ends it (``_end_on_signal``), or at the interpreter's exit (``atexit``)."""
    _end_on_signal_installed()
    _temporary.add(path)
    try:
        yield path
    finally:
        _temporary.discard(path)


#: The signals that end a process by default and that a ``finally`` never sees: the temp files are removed first.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_at_exit, _on_signal = threading.Event(), threading.Event()


def _end_on_signal_installed() -> None:
    """Register the ``atexit`` removal (once), and install ``_end_on_signal`` for each of ``ENDING_SIGNALS`` still at its
    default action (once, from the main thread: a handler another part of the process set, Dagster's in a step, is left
    alone)."""
    if not _at_exit.is_set():
        _at_exit.set()
        atexit.register(remove_temporary)
    if _on_signal.is_set() or threading.current_thread() is not threading.main_thread():
        return
    _on_signal.set()
    for signum in ENDING_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _end_on_signal)


def _end_on_signal(signum: int, frame: FrameType | None) -> None:
    """Remove the temp files in flight, then end as the signal's default action would (the status a shell expects)."""
    remove_temporary()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def remove_temporary() -> None:
    """Remove the temp files and folders in flight (``removed_on_abort``) now: for a command that ends by ``os._exit``
    (no ``finally``, finalizer or ``atexit`` runs then)."""
    for path in list(_temporary):
        with contextlib.suppress(OSError):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)


class _Handler:
    """SIGINT's handler under ``ctrl_c_ends_command``: raises ``KeyboardInterrupt`` and arms the watchdog once."""

    #: Read by ``pipelines.zeus.fast``: this handler, like Python's own, may be replaced by the signal's default action
    #: while a compiled kernel runs (no bytecode runs then, so no Python handler would).
    raises_keyboard_interrupt = True

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if not _requested.is_set():
            _requested.set()
            threading.Thread(target=_end_after_grace, name="ctrl-c-watchdog", daemon=True).start()
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block the watchdog waits: for a cleanup that must finish once begun (a Slurm cluster's close, which
    cancels its jobs), however long it takes."""
    with _hold:
        yield


def kill_children(spare: frozenset[int] = frozenset()) -> None:
    """SIGKILL every descendant process of this one but those in ``spare`` and multiprocessing's resource tracker (it
    removes what the killed processes left, then ends by itself once this process is gone)."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.pid not in spare and "resource_tracker" not in " ".join(child.cmdline()):
                child.kill()


def _end_after_grace() -> None:
    time.sleep(GRACE_S)
    _hold.acquire()  # never released: the process ends below
    kill_children()
    remove_temporary()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write("Aborted.\n")
        sys.stderr.flush()
    os._exit(SIGINT_STATUS)


@contextlib.contextmanager
def ctrl_c_ends_command() -> Iterator[None]:
    """Within the block (main thread only; elsewhere it changes nothing), a Ctrl-C raises ``KeyboardInterrupt`` and, if the
    process has not ended ``GRACE_S`` later, ends it with status 130. SIGINT's previous handler is restored on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous, previous_hook = signal.signal(signal.SIGINT, _Handler()), sys.unraisablehook
    sys.unraisablehook = _DroppedInterruptsQuiet(previous_hook)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook


class _DroppedInterruptsQuiet:
    """``sys.unraisablehook`` under ``ctrl_c_ends_command``: a ``KeyboardInterrupt`` raised where it cannot propagate (a
    ctypes callback, numba's compiler caching the kernel it compiles; a weakref callback; a ``__del__``) is this Ctrl-C,
    which the watchdog sees to: Python would print it with its traceback under the command's one line. Anything else
    goes to the hook it replaced."""

    def __init__(self, previous: Callable[[Any], object]) -> None:
        self.previous = previous

    def __call__(self, unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            self.previous(unraisable)
