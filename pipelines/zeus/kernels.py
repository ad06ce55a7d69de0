"""The group replay compiled with numba: the event loop, the four policies and numpy's random draws, bit for bit.

This module imports numba at import time: only ``pipelines.zeus.fast`` imports it, and only when
the fast path runs, so that ``pipelines.zeus``, the command line and the Dagster code location load
without it. Every function is ``njit(cache=True)``: compiled once per machine and stored beside
this file (``__pycache__``) or, where that folder is read-only (an installed wheel), in numba's
user-wide cache folder (``$NUMBA_CACHE_DIR`` when set).

What is emulated, exactly as the pure-Python reference (``groups.py``, ``policies.py``,
``bandit.py``, ``runs.py``, ``exact.py``) computes it:

* numpy's ``PCG64`` (128-bit LCG, XSL-RR output), seeded like ``np.random.PCG64(seed)`` through
  ``SeedSequence`` (also the seed knob's ``SeedSequence(entropy, spawn_key=(knob,))``);
* 32-bit draws as ``Generator`` methods take them (low half of a 64-bit output, then its high
  half), Lemire's bounded integers (``choice(n, 1)``, the permutation of the arms) and the
  ziggurat ``standard_normal`` (numpy's tables, shipped by numba);
* numpy's pairwise float64 summation (``np.add.reduce``, ``np.var``) and CPython's float ``//``.

Floating-point expressions keep the reference's operation order (no fastmath): results are the
same float64 values, not merely close ones. The reference stays the readable specification and
the test oracle (``tests/zeus/test_fast.py`` compares the two run by run).

A call covers groups ``[g_lo, g_hi)`` of one trace and one GPU under one policy, for one or more
*states* (a replay's eta, beta and seed knob). With one state it records every run (the runs of
``replay_groups``); with many (a sweep's batch) it replays each group under every state in turn and
keeps only each state's totals: its runs counted, their energy and time summed exactly
(``_exact_add``: integers per binary exponent, rounded once at the end as ``math.fsum`` rounds).
Instead of raising, a state stops at the first group the reference would stop at, with an error
code (``ERR_*``); ``pipelines.zeus.fast`` then replays it with the reference, which raises the
genuine exception and message.

Written for numba's code generation (measured with perf; see ``bench/bench_replay.py``): the event
loop of a group is one function whose hot state lives in local arrays, since numba reference-counts
an array on every call that passes it and on every read of a tuple's field inside a loop of this
size (that cost 20x); the loop reads its arrays through views that own nothing (``_borrowed``), so
the calls in it (a fit, a Thompson step) count no references; buffers never grow inside the loop (a
re-assigned array is reference-counted on every iteration); a group's first runs end in an order
known before any state replays it (``end_orders``), so only the retries go through a heap; and an
arm's posterior is refitted when the next prediction reads it rather than at every observation (the
same values: a fit depends on the arm's rewards only; 35x fewer summed rewards on ITP).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array
from numba.np.random._constants import fi_double, ki_double, wi_double, ziggurat_nor_inv_r, ziggurat_nor_r  # numpy's ziggurat tables

# ---------------------------------------------------------------------------------------------
# error codes: the kernel returns [code, group, detail]; OK = every group replayed

OK = 0
#: make_policy raised for the group's workload (detail: its dataset index).
ERR_SETUP = 1
#: a trace job missed the target in _MAX_ATTEMPTS runs (detail: the job's index in its group).
ERR_STUCK = 2
#: a concurrent Zeus run at a batch size that was never profiled (detail: its k).
ERR_POWER_NOT_PROFILED = 3
#: the pruning round's default batch size is not among the survivors (detail: its k).
ERR_PRUNED_DEFAULT = 4
#: pruning left no batch size for Thompson Sampling.
ERR_EMPTY_BANDIT = 5
#: an arm has fewer than two observations when Thompson Sampling starts (detail: its k).
ERR_FEW_OBSERVATIONS = 6
#: no train-trace run at the chosen batch size (detail: its k).
ERR_NO_TRAIN_RUN = 7
#: a power limit that the batch size was not profiled at (a = k).
ERR_LIMIT_INDEX = 8
#: the epoch cost of early stopping is zero (float floor division by zero).
ERR_ZERO_DIVISION = 9
#: a run at a batch size the table has no rows for.
ERR_UNKNOWN_BATCH_SIZE = 10
#: not an error: the buffers are full; go on from this group with larger ones (detail: the group's runs or rewards so far).
ERR_CAPACITY = 11
#: not an error either: a total that ``math.fsum`` would not sum exactly (a value that is not finite); replay the state alone.
ERR_INEXACT = 12

#: Runs of one trace job after which its group is declared stuck (``groups._MAX_ATTEMPTS``).
MAX_ATTEMPTS = 1_000
#: Pruning rounds before Thompson Sampling (``bandit._NUM_PRUNING_ROUNDS``).
NUM_PRUNING_ROUNDS = 2

POLICY_ZEUS = 0
POLICY_FIXED = 1  # Default and Oracle: one configuration
POLICY_GRID = 2

#: Columns of the runs array (rows of a (N_COLUMNS, capacity) float64 array; integers are exact in float64).
COL_GROUP, COL_JOB, COL_T0, COL_T1, COL_BS, COL_PL, COL_ENERGY, COL_TIME, COL_REACHED = range(9)
N_COLUMNS = 9

# ---------------------------------------------------------------------------------------------
# PCG64 (numpy's pcg64.h): 128-bit state and increment as (high, low) uint64 pairs

_U0 = np.uint64(0)
_U1 = np.uint64(1)
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_MULT_HI = np.uint64(0x2360ED051FC65DA4)
_MULT_LO = np.uint64(0x4385DF649FCCF645)
_ROT_SHIFT = np.uint64(58)
_ROT_MASK = np.uint64(63)
_U64_BITS = np.uint64(64)
_DOUBLE_SHIFT = np.uint64(11)
_DOUBLE_SCALE = 1.0 / 9007199254740992.0

#: A stream's slots in its uint64 array.
_ST_HI, _ST_LO, _INC_HI, _INC_LO, _HAS_HIGH, _HIGH = range(6)
STREAM_WORDS = 6
#: The words that seeding sets (state and increment; no buffered half yet).
_SEEDED_WORDS = 4


@njit(cache=True, error_model="numpy", inline="always")
def _mulhi(a: np.uint64, b: np.uint64) -> np.uint64:
    """High 64 bits of the 128-bit product a x b."""
    a_lo = a & _M32
    a_hi = a >> _S32
    b_lo = b & _M32
    b_hi = b >> _S32
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    carry = ((p0 >> _S32) + (p1 & _M32) + (p2 & _M32)) >> _S32
    return p3 + (p1 >> _S32) + (p2 >> _S32) + carry


@njit(cache=True, error_model="numpy", inline="always")
def _step(st: np.ndarray) -> None:
    """state = state x multiplier + inc (mod 2**128)."""
    hi, lo = st[_ST_HI], st[_ST_LO]
    new_lo = lo * _MULT_LO
    new_hi = _mulhi(lo, _MULT_LO) + hi * _MULT_LO + lo * _MULT_HI
    out_lo = new_lo + st[_INC_LO]
    carry = _U1 if out_lo < new_lo else _U0
    st[_ST_HI] = new_hi + st[_INC_HI] + carry
    st[_ST_LO] = out_lo


@njit(cache=True, error_model="numpy", inline="always")
def next64(st: np.ndarray) -> np.uint64:
    """One 64-bit output (``random_raw``): step, then XSL-RR of the new state."""
    return _pcg_next64(st)


def _pcg_next64_typer(typingctx: Any, st: Any) -> Any:
    """``_pcg_next64(st)``: ``_step`` then the XSL-RR output, in LLVM's 128-bit integers (one multiply instruction, where
    ``_mulhi`` takes four; and numba types one call instead of the step's arithmetic, which cut the first compile ~3 s)."""
    if not (isinstance(st, types.Array) and st.ndim == 1 and st.layout == "C" and st.dtype == types.uint64):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        data = context.make_array(signature.args[0])(context, builder, value=args[0]).data
        i64, i128 = ir.IntType(64), ir.IntType(128)
        words = [builder.gep(data, [ir.Constant(i64, w)]) for w in (_ST_HI, _ST_LO, _INC_HI, _INC_LO)]

        def wide(hi_ptr: Any, lo_ptr: Any) -> Any:
            hi = builder.shl(builder.zext(builder.load(hi_ptr), i128), ir.Constant(i128, 64))
            return builder.or_(hi, builder.zext(builder.load(lo_ptr), i128))

        state = builder.add(builder.mul(wide(words[0], words[1]), ir.Constant(i128, (int(_MULT_HI) << 64) | int(_MULT_LO))), wide(words[2], words[3]))
        hi, lo = builder.trunc(builder.lshr(state, ir.Constant(i128, 64)), i64), builder.trunc(state, i64)
        builder.store(hi, words[0])
        builder.store(lo, words[1])
        xored, rot = builder.xor(hi, lo), builder.lshr(hi, ir.Constant(i64, int(_ROT_SHIFT)))
        left = builder.and_(builder.sub(ir.Constant(i64, 64), rot), ir.Constant(i64, int(_ROT_MASK)))
        return builder.or_(builder.lshr(xored, rot), builder.shl(xored, left))

    return types.uint64(st), codegen


_pcg_next64: Any = intrinsic(_pcg_next64_typer)


@njit(cache=True, error_model="numpy", inline="always")
def next32(st: np.ndarray) -> np.uint64:
    """One 32-bit draw: the low half of a fresh 64-bit output, then its high half (``exact.Uint32Draws.next32``)."""
    if st[_HAS_HIGH] != _U0:
        st[_HAS_HIGH] = _U0
        return st[_HIGH]
    raw = next64(st)
    st[_HAS_HIGH] = _U1
    st[_HIGH] = raw >> _S32
    return raw & _M32


@njit(cache=True, error_model="numpy", inline="always")
def bounded(st: np.ndarray, high: int) -> np.int64:
    """A uniform integer in [0, high] by Lemire's method (``exact.Uint32Draws.bounded``); high 0 draws nothing."""
    if high == 0:
        return np.int64(0)
    span = np.uint64(high + 1)
    product = next32(st) * span
    leftover = product & _M32
    if leftover < span:
        threshold = (_M32 - np.uint64(high)) % span
        while leftover < threshold:
            product = next32(st) * span
            leftover = product & _M32
    return np.int64(product >> _S32)


@njit(cache=True, error_model="numpy")
def next_double(st: np.ndarray) -> float:
    """numpy's ``next_double``: the top 53 bits of a 64-bit output, in [0, 1)."""
    return float(next64(st) >> _DOUBLE_SHIFT) * _DOUBLE_SCALE


@njit(cache=True, error_model="numpy")
def standard_normal(st: np.ndarray) -> float:
    """numpy's ``random_standard_normal`` (ziggurat, ``distributions.c``); consumes 64-bit outputs only."""
    while True:
        r = next64(st)
        idx = np.int64(r & np.uint64(0xFF))
        r >>= np.uint64(8)
        sign = r & _U1
        rabs = (r >> _U1) & np.uint64(0x000FFFFFFFFFFFFF)
        x = float(rabs) * wi_double[idx]
        if sign != _U0:
            x = -x
        if rabs < ki_double[idx]:
            return x
        if idx == 0:
            while True:
                xx = -ziggurat_nor_inv_r * np.log1p(-next_double(st))
                yy = -np.log1p(-next_double(st))
                if yy + yy > xx * xx:
                    if ((rabs >> np.uint64(8)) & _U1) != _U0:
                        return -(ziggurat_nor_r + xx)
                    return ziggurat_nor_r + xx
        elif (fi_double[idx - 1] - fi_double[idx]) * next_double(st) + fi_double[idx] < np.exp(-0.5 * x * x):
            return x


# ---------------------------------------------------------------------------------------------
# SeedSequence (numpy's bit_generator.pyx), uint32 arithmetic in uint64 registers

_INIT_A = np.uint64(0x43B0D7E5)
_MULT_A = np.uint64(0x931E8875)
_INIT_B = np.uint64(0x8B51F9DD)
_MULT_B = np.uint64(0x58F38DED)
_MIX_MULT_L = np.uint64(0xCA01F9DD)
_MIX_MULT_R = np.uint64(0x4973F715)
_XSHIFT = np.uint64(16)
_POOL_SIZE = 4


@njit(cache=True, error_model="numpy", inline="always")
def _hashmix(value: np.uint64, hash_const: np.ndarray) -> np.uint64:
    value = (value ^ hash_const[0]) & _M32
    hash_const[0] = (hash_const[0] * _MULT_A) & _M32
    value = (value * hash_const[0]) & _M32
    return value ^ (value >> _XSHIFT)


@njit(cache=True, error_model="numpy", inline="always")
def _mix(x: np.uint64, y: np.uint64) -> np.uint64:
    result = ((_MIX_MULT_L * x) - (_MIX_MULT_R * y)) & _M32
    return result ^ (result >> _XSHIFT)


@njit(cache=True, error_model="numpy")
def seed_pool(entropy: np.ndarray) -> np.ndarray:
    """The pool of ``SeedSequence`` over the assembled entropy words (uint32 values in a uint64 array)."""
    pool = np.zeros(_POOL_SIZE, dtype=np.uint64)
    hash_const = np.full(1, _INIT_A, dtype=np.uint64)
    n = entropy.size
    for i in range(_POOL_SIZE):
        pool[i] = _hashmix(entropy[i] if i < n else _U0, hash_const)
    for i_src in range(_POOL_SIZE):
        for i_dst in range(_POOL_SIZE):
            if i_src != i_dst:
                pool[i_dst] = _mix(pool[i_dst], _hashmix(pool[i_src], hash_const))
    for i_src in range(_POOL_SIZE, n):
        for i_dst in range(_POOL_SIZE):
            pool[i_dst] = _mix(pool[i_dst], _hashmix(entropy[i_src], hash_const))
    return pool


@njit(cache=True, error_model="numpy")
def generate_words(pool: np.ndarray, n_words: int) -> np.ndarray:
    """``SeedSequence.generate_state(n_words, np.uint32)`` (as uint64 values)."""
    out = np.zeros(n_words, dtype=np.uint64)
    hash_const = _INIT_B
    for i in range(n_words):
        value = (pool[i % _POOL_SIZE] ^ hash_const) & _M32
        hash_const = (hash_const * _MULT_B) & _M32
        value = (value * hash_const) & _M32
        out[i] = value ^ (value >> _XSHIFT)
    return out


@njit(cache=True, error_model="numpy")
def spawned_seed(base: np.uint64, knob_words: np.ndarray) -> np.uint64:
    """``SeedSequence(entropy=base, spawn_key=(knob,)).generate_state(1, np.uint32)[0]`` for a uint32 ``base``.

    ``knob_words``: the knob as numpy coerces it (little-endian 32-bit words; [0] for 0).
    """
    entropy = np.zeros(_POOL_SIZE + knob_words.size, dtype=np.uint64)
    entropy[0] = base  # the run entropy is padded to the pool size when a spawn key follows
    for i in range(knob_words.size):  # a loop, not a slice assignment: see ``_copy``
        entropy[_POOL_SIZE + i] = knob_words[i]
    return generate_words(seed_pool(entropy), 1)[0]


@njit(cache=True, error_model="numpy")
def seed_stream(st: np.ndarray, seed: np.uint64) -> None:
    """``np.random.PCG64(seed)`` for a uint32 ``seed``: SeedSequence words, then ``pcg64_set_seed``."""
    entropy = np.full(1, seed, dtype=np.uint64)
    words = generate_words(seed_pool(entropy), 8)
    init_hi = words[0] | (words[1] << _S32)
    init_lo = words[2] | (words[3] << _S32)
    seq_hi = words[4] | (words[5] << _S32)
    seq_lo = words[6] | (words[7] << _S32)
    st[_INC_HI] = (seq_hi << _U1) | (seq_lo >> np.uint64(63))
    st[_INC_LO] = (seq_lo << _U1) | _U1
    st[_ST_HI] = _U0
    st[_ST_LO] = _U0
    _step(st)
    lo = st[_ST_LO] + init_lo
    carry = _U1 if lo < init_lo else _U0
    st[_ST_HI] = st[_ST_HI] + init_hi + carry
    st[_ST_LO] = lo
    _step(st)
    st[_HAS_HIGH] = _U0
    st[_HIGH] = _U0


@njit(cache=True, error_model="numpy")
def group_streams(seeds: np.ndarray, g_lo: int, g_hi: int, knob_words: np.ndarray, knob_len: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The seeded generators of groups ``[g_lo, g_hi)`` (``seeds``: each group's adler32) per distinct seed knob:
    (streams, knob_row). State ``s`` seeds group ``g``'s generators with ``streams[knob_row[s], g]`` (PCG64's
    state and increment, ``_restart``); states that share a knob share a row, so a sweep's states seed once per knob.
    """
    n_states = knob_len.size
    knob_row = np.full(n_states, -1, dtype=np.int64)
    first = np.empty(n_states, dtype=np.int64)  # a state of each row
    n_rows = 0
    for s in range(n_states):
        for r in range(n_rows):
            o, same = first[r], knob_len[first[r]] == knob_len[s]
            for w in range(knob_len[s] if same else 0):
                same = same and knob_words[o, w] == knob_words[s, w]
            if same:
                knob_row[s] = r
                break
        if knob_row[s] < 0:
            knob_row[s], first[n_rows] = n_rows, s
            n_rows += 1
    streams = np.empty((n_rows, g_hi, _SEEDED_WORDS), dtype=np.uint64)  # groups before g_lo are not read
    st = np.zeros(STREAM_WORDS, dtype=np.uint64)
    for r in range(n_rows):
        s = first[r]
        for g in range(g_lo, g_hi):
            seed_stream(st, seeds[g] if knob_len[s] == 0 else spawned_seed(seeds[g], knob_words[s, : knob_len[s]]))
            for w in range(_SEEDED_WORDS):
                streams[r, g, w] = st[w]
    return streams, knob_row


@njit(cache=True, error_model="numpy", inline="always")
def _restart(st: np.ndarray, streams: np.ndarray, row: int, i: int) -> None:
    """Generator ``st`` as ``seed_stream`` leaves it, from ``group_streams``' ``streams[row, i]``."""
    for w in range(_SEEDED_WORDS):
        st[w] = streams[row, i, w]
    st[_HAS_HIGH] = _U0
    st[_HIGH] = _U0


# ---------------------------------------------------------------------------------------------
# numpy's pairwise summation and CPython's float floor division

_PAIRWISE_SEQUENTIAL = 8
_PAIRWISE_BLOCK = 128
#: Nodes on the path from the root of numpy's pairwise tree to a leaf: n halves at each level (n < 2**63).
_PAIRWISE_DEPTH = 64
#: Where a pairwise walk's partial sums start in its work array (after 3 floats per node: lo, n, stage) ...
_PAIRWISE_SUMS = 3 * (_PAIRWISE_DEPTH + 1)
#: ... and the work array's size.
PAIRWISE_WORK = _PAIRWISE_SUMS + _PAIRWISE_DEPTH + 1


#: numpy's accumulators in a pairwise block: the lanes of one vector.
_LANES = _PAIRWISE_SEQUENTIAL


def _lanes_intrinsic(square: bool) -> Any:
    """An intrinsic ``(a, lo, end, shift) -> (r0, ..., r7)``: numpy's 8 accumulators of a pairwise block, over the
    terms ``lo:end`` of contiguous float64 ``a`` (``end - lo`` a multiple of 8, at least 8; ``_term``).

    Accumulator j starts at term ``lo + j`` and adds terms ``lo + j + 8``, ``lo + j + 16``, ... in order, as numpy's
    block does: the 8 are one vector of 8 lanes here, each lane the same IEEE operations in the same order (no
    reassociation; LLVM does not vectorize the scalar loop without fastmath). A fit sums its rewards twice per
    prediction; this cut its time about 5x.
    """

    @intrinsic
    def lanes(typingctx: Any, a: Any, lo: Any, end: Any, shift: Any) -> Any:
        if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" and a.dtype == types.float64):
            return None
        sig = types.UniTuple(types.float64, _LANES)(a, lo, end, shift)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            data = context.make_array(signature.args[0])(context, builder, value=args[0]).data
            i64, vec = ir.IntType(64), ir.VectorType(ir.DoubleType(), _LANES)
            start = context.cast(builder, args[1], signature.args[1], types.int64)
            stop = context.cast(builder, args[2], signature.args[2], types.int64)
            splat = ir.Constant(vec, ir.Undefined)
            for j in range(_LANES):
                splat = builder.insert_element(splat, args[3], ir.Constant(ir.IntType(32), j))

            def term(index: Any) -> Any:
                values = builder.load(builder.bitcast(builder.gep(data, [index]), vec.as_pointer()), align=8)
                if not square:
                    return values
                d = builder.fsub(values, splat)
                return builder.fmul(d, d)

            first, second, entry = term(start), builder.add(start, ir.Constant(i64, _LANES)), builder.block
            loop, body, done = (builder.append_basic_block(f"lanes.{name}") for name in ("loop", "body", "done"))
            builder.branch(loop)
            builder.position_at_end(loop)
            acc, index = builder.phi(vec), builder.phi(i64)
            acc.add_incoming(first, entry)
            index.add_incoming(second, entry)
            builder.cbranch(builder.icmp_signed("<", index, stop), body, done)
            builder.position_at_end(body)
            acc.add_incoming(builder.fadd(acc, term(index)), body)
            index.add_incoming(builder.add(index, ir.Constant(i64, _LANES)), body)
            builder.branch(loop)
            builder.position_at_end(done)
            lanes = [builder.extract_element(acc, ir.Constant(ir.IntType(32), j)) for j in range(_LANES)]
            return context.make_tuple(builder, signature.return_type, lanes)

        return sig, codegen

    return lanes


_lanes = _lanes_intrinsic(square=False)
_lanes_squared = _lanes_intrinsic(square=True)


@njit(cache=True, error_model="numpy", inline="always")
def _term(a: np.ndarray, i: int, shift: float, square: bool) -> float:
    """A summed value: ``a[i]``, or ``(a[i] - shift) ** 2`` as ``np.var`` computes it (the deviation, then its product)."""
    if square:
        d = a[i] - shift
        return d * d
    return a[i]


@njit(cache=True, error_model="numpy", inline="always")
def _pairwise_block(a: np.ndarray, lo: int, n: int, shift: float, square: bool) -> float:
    """numpy's pairwise sum of the terms ``lo:lo + n`` for ``n <= 128``: sequential below 8, else 8 accumulators."""
    if n < _PAIRWISE_SEQUENTIAL:
        res = 0.0
        for i in range(lo, lo + n):
            res += _term(a, i, shift, square)
        return res
    end = lo + n - n % 8
    if square:
        r0, r1, r2, r3, r4, r5, r6, r7 = _lanes_squared(a, lo, end, shift)
    else:
        r0, r1, r2, r3, r4, r5, r6, r7 = _lanes(a, lo, end, shift)
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(end, lo + n):
        res += _term(a, i, shift, square)
    return res


@njit(cache=True, error_model="numpy", inline="always")
def _pairwise(a: np.ndarray, lo: int, n: int, shift: float, square: bool, work: np.ndarray) -> float:
    """numpy's pairwise sum (``np.add.reduce``) of the terms ``lo:lo + n`` of contiguous float64 ``a`` (``_term``).

    Above 128 values numpy sums the halves (the first rounded down to a multiple of 8) and adds
    them: the same tree is walked here with an explicit stack in ``work`` (float64 [PAIRWISE_WORK]:
    allocating it per call cost a tenth of a sweep), since numba's cache cannot reload code that
    calls a recursive function.
    """
    if n <= _PAIRWISE_BLOCK:
        return _pairwise_block(a, lo, n, shift, square)
    # post-order walk: each node (lo, n) is visited three times (stage 0: left, 1: right, 2: add);
    # a node's lo and n are kept as floats (exact below 2**53), its partial sums after the nodes
    top, n_values = 0, 0
    work[0], work[1], work[2] = lo, n, 0
    while top >= 0:
        at = 3 * top
        nlo, nn = int(work[at]), int(work[at + 1])
        if nn <= _PAIRWISE_BLOCK:
            work[_PAIRWISE_SUMS + n_values] = _pairwise_block(a, nlo, nn, shift, square)
            n_values += 1
            top -= 1
            continue
        half = nn // 2
        half -= half % 8
        stage = work[at + 2]
        if stage == 0:
            work[at + 2] = 1
            work[at + 3], work[at + 4], work[at + 5] = nlo, half, 0
            top += 1
        elif stage == 1:
            work[at + 2] = 2
            work[at + 3], work[at + 4], work[at + 5] = nlo + half, nn - half, 0
            top += 1
        else:
            n_values -= 1
            work[_PAIRWISE_SUMS + n_values - 1] = work[_PAIRWISE_SUMS + n_values - 1] + work[_PAIRWISE_SUMS + n_values]
            top -= 1
    return work[_PAIRWISE_SUMS]


@njit(cache=True, error_model="numpy")
def pairwise_sum(a: np.ndarray, lo: int, n: int, work: np.ndarray) -> float:
    """``np.add.reduce(a[lo:lo + n])`` for contiguous float64 (numpy's pairwise order, ``exact.pairwise_sum``);
    ``work``: float64 [PAIRWISE_WORK]."""
    return _pairwise(a, lo, n, 0.0, False, work)


@njit(cache=True, error_model="numpy", inline="always")
def sum_and_var(values: np.ndarray, lo: int, n: int, work: np.ndarray) -> tuple[float, float]:
    """``(v.sum(), np.var(v))`` of ``v = values[lo:lo + n]`` bit for bit (``exact.sum_and_var``); ``work``: float64 [PAIRWISE_WORK].

    np.var sums the squared deviations from the mean as an array of its own: each is the same float64 here, summed
    in the same pairwise order without that array.
    """
    if n < _PAIRWISE_SEQUENTIAL:
        total = 0.0
        for i in range(lo, lo + n):
            total += values[i]
        mean = total / n
        sq = 0.0
        for i in range(lo, lo + n):
            d = values[i] - mean
            sq += d * d
        return total, sq / n
    total = _pairwise(values, lo, n, 0.0, False, work)
    return total, _pairwise(values, lo, n, total / n, True, work) / n


@njit(cache=True, error_model="numpy", inline="always")
def zeus_cost(eta: float, energy: float, max_power: float, time: float) -> float:
    """``cost.zeus_cost``, compiled into the replay: its own copy, so that numba's cache of this module never holds a
    callee from another file it would not see change. tests/zeus/test_cost.py holds the two equal bit for bit."""
    return eta * energy + (1 - eta) * max_power * time


@njit(cache=True, error_model="numpy")
def py_floordiv(vx: float, wx: float) -> float:
    """CPython's ``vx // wx`` for floats (``_float_div_mod``); ``wx`` must not be 0 (Python raises there)."""
    mod = np.fmod(vx, wx)
    div = (vx - mod) / wx
    if mod != 0.0 and (wx < 0) != (mod < 0):
        div -= 1.0
    if div != 0.0:
        floordiv = np.floor(div)  # a float (math.floor gives an int64 that overflows)
        if div - floordiv > 0.5:
            floordiv += 1.0
        return floordiv
    return math.copysign(0.0, vx / wx)


# ---------------------------------------------------------------------------------------------
# the replay: its inputs (``pipelines.zeus.fast`` packs them), the Thompson step, the event loop


class Jobs(NamedTuple):
    """The jobs of a trace, groups sorted, each group's jobs by start time (ties in table order)."""

    bounds: np.ndarray  # int64, groups + 1: group g holds jobs bounds[g]:bounds[g + 1]
    dataset: np.ndarray  # int64 per group: its dataset's index d
    seed: np.ndarray  # uint64 per group: adler32(group id), the artifact's seed
    start: np.ndarray  # float64 per job, s
    end: np.ndarray  # float64 per job, s
    ratio: np.ndarray  # float64 per job: runtime_ratio
    weight: np.ndarray  # float64 per job: what its energy is multiplied by in the totals (num_gpu); unread when runs are recorded


class Tables(NamedTuple):
    """``WorkloadTable`` per dataset d, batch-size index k (batch sizes ascending) and limit index m (trace order), padded."""

    n_bs: np.ndarray  # int64 [d]
    b0_index: np.ndarray  # int64 [d]: k of b0, -1 when b0 is not a batch size of the table
    max_epochs: np.ndarray  # float64 [d]
    bs_value: np.ndarray  # int64 [d, k]
    max_pl: np.ndarray  # int64 [d, k]: the largest limit profiled at that batch size, W
    first_energy: np.ndarray  # float64 [d, k]: JIT-profiling epoch energy, J
    first_time: np.ndarray  # float64 [d, k]: JIT-profiling epoch time, s
    n_lim: np.ndarray  # int64 [d, k]
    lim_value: np.ndarray  # int64 [d, k, m], W
    energy_per_epoch: np.ndarray  # float64 [d, k, m], J
    time_per_epoch: np.ndarray  # float64 [d, k, m], s
    target_offset: np.ndarray  # int64 [d, k]: where its runs' target epochs start in ``targets``
    n_targets: np.ndarray  # int64 [d, k]
    targets: np.ndarray  # float64: target epoch of each train-trace run (NaN: never reached), trace order


class PolicyArrays(NamedTuple):
    """Who chooses, and the knobs of each *state*: one replay of the trace (an optimizer per group) at its (eta, beta, seed)."""

    kind: int  # POLICY_*, the same for every state
    max_power: float  # W: MaxPower of the hybrid cost
    grid_offset: np.ndarray  # int64 [d + 1]: Grid Search's configurations of d are grid_bs/grid_pl[offset[d]:offset[d + 1]]
    grid_bs: np.ndarray  # int64: in the reference's order (batch sizes, then limits, ascending)
    grid_pl: np.ndarray  # int64, W
    eta: np.ndarray  # float64 [s]
    beta: np.ndarray  # float64 [s]: inf for policies without early stopping
    knob_words: np.ndarray  # uint64 [s, w]: the seed knob as SeedSequence words (``knob_len[s]`` of them) ...
    knob_len: np.ndarray  # int64 [s]: ... 0 for the artifact's seeding
    setup_failed: np.ndarray  # bool [s, d]: make_policy raised for that dataset
    jit_pl: np.ndarray  # int64 [s, d, k]: Zeus's JIT-profiled limit at the state's eta, W
    fixed_bs: np.ndarray  # int64 [s, d]: Default's or the Oracle's batch size
    fixed_pl: np.ndarray  # int64 [s, d]: its power limit, W


class Buffers(NamedTuple):
    """The working state of one group's replay, allocated once per kernel call and reset per group and state (the seeded
    generators: computed once per call)."""

    is_: np.ndarray  # int64 [N_INT_SLOTS, slot]: the runs in flight (a job has at most one)
    fs: np.ndarray  # float64 [N_FLOAT_SLOTS, slot]
    heap: np.ndarray  # int64: a heap of slots, earliest end first: the retries (every run where the group is not ``streamed``)
    end_order: np.ndarray  # int64 per job: the jobs of each group by end, ties by start order (a first run's end is its job's) ...
    streamed: np.ndarray  # bool per group: ... which pops its first runs in that order (no job ends before it starts)
    sampler: np.ndarray  # uint64 stream: the run sampler's generator
    profiled: np.ndarray  # bool [k]: Zeus profiled the batch size's limits already
    hist_n: np.ndarray  # int64 [k]: rewards (negated costs) per batch size ...
    hist: np.ndarray  # float64 [k x history capacity]: ... and their values, batch size k's from k x capacity on
    work: np.ndarray  # float64 [PAIRWISE_WORK]: a fit's pairwise sums
    survivors: np.ndarray  # int64 [k]: the pruning walk's survivors, ascending
    directions: np.ndarray  # int64 [2, k]: this round's two directions (down from the default, default included; then up)
    dir_len: np.ndarray  # int64 [2]
    dir_pos: np.ndarray  # int64 [2]
    good: np.ndarray  # int64 [k]: the batch sizes that reached the target this round
    arm_of: np.ndarray  # int64 [k]: Thompson Sampling's arm of a batch size (-1: none) ...
    arm_k: np.ndarray  # int64 [arm]: ... and its batch size
    arm_mean: np.ndarray  # float64 [arm]
    arm_scale: np.ndarray  # float64 [arm]
    arm_stale: np.ndarray  # bool [arm]: observed since its last fit
    bandit_rng: np.ndarray  # uint64 stream: the bandit's generator
    streams: np.ndarray  # uint64 [knob row, group, word]: each group's seeded generator per seed knob (``group_streams``) ...
    knob_row: np.ndarray  # int64 [s]: ... the row of state s


#: Rows of the int64 state of the runs in flight (``is_[row, slot]``).
_F_SEQ, _F_JOB, _F_ATTEMPT, _F_K, _F_PL, _F_REACHED, N_INT_SLOTS = range(7)
#: Rows of their float64 state (``fs[row, slot]``).
_F_T1, _F_T0, _F_RATIO, _F_TIME, _F_ENERGY, _F_COST, N_FLOAT_SLOTS = range(7)


@njit(cache=True, error_model="numpy")
def _copy(source: np.ndarray, target: np.ndarray, n: int) -> None:
    """``target[:n] = source[:n]`` as a loop: a slice assignment of one array to another makes numba compile its
    shape-mismatch error (string formatting), about 2 s of the kernel's first compile for a check that cannot fail here."""
    for i in range(n):
        target[i] = source[i]


@njit(cache=True, error_model="numpy")
def _sort(values: np.ndarray, n: int) -> None:
    """Sort ``values[:n]`` ascending in place (insertion sort: a handful of batch sizes)."""
    for i in range(1, n):
        v = values[i]
        j = i - 1
        while j >= 0 and values[j] > v:
            values[j + 1] = values[j]
            j -= 1
        values[j + 1] = v


@njit(cache=True, error_model="numpy")
def _fit(rewards: np.ndarray, lo: int, n: int, work: np.ndarray) -> tuple[float, float]:
    """``GaussianThompson.fit``: (posterior mean, standard deviation) of an arm from its ``n`` rewards ``rewards[lo:lo + n]``
    (prior mean 0, precision 0)."""
    total, var = sum_and_var(rewards, lo, n, work)
    reward_precision = 1.0 / var if var != 0.0 else math.inf
    if reward_precision == math.inf:
        precision = math.inf
        mean = total / n
    else:
        precision = 0.0 + n * reward_precision
        mean = (0.0 * 0.0 + reward_precision * total) / precision
    return mean, math.sqrt(1.0 / precision if precision != 0.0 else math.inf)


@njit(cache=True, error_model="numpy")
def _thompson(rng: np.ndarray, n: int, mean: np.ndarray, scale: np.ndarray) -> int:
    """``GaussianThompson.predict``: the draws of a permutation of the ``n`` arms, one normal per arm; the first largest sample's arm."""
    for j in range(1, n):  # Floyd's picks
        bounded(rng, j)
    for j in range(n - 1, 0, -1):  # the shuffle
        bounded(rng, j)
    best_i, best = 0, -math.inf
    for i in range(n):
        sample = mean[i] + scale[i] * standard_normal(rng)
        if i == 0 or sample > best:
            best_i, best = i, sample
    return best_i

# ---------------------------------------------------------------------------------------------
# exact totals: math.fsum's value (the exactly rounded sum), kept as integers per binary exponent

#: Bins of an exact sum: a finite x >= 0 is m x 2**(e - 53) with m < 2**53 (``math.frexp``), added to bin e - 53 + _BIN_ZERO.
_BIN_ZERO = 1_126
EXACT_BINS = 2_240
#: A bin above this carries into the bin 53 up (2**53 times its weight): a bin stays below 2**63 (one add is below 2**53).
_BIN_CARRY = np.int64(1) << np.int64(62)
#: Below this a bin's halves could be subnormal (inexact in ``_exact_total``): such a value is not taken.
_TINY = 2.0**-960
_LOW_BITS = np.int64(0xFFFFFFFF)
#: A normal float64's stored fraction bits, and its implicit leading bit.
_FRACTION = (np.int64(1) << np.int64(52)) - np.int64(1)
_IMPLICIT_BIT = np.int64(1) << np.int64(52)


def _float_bits_typer(typingctx: Any, x: Any) -> Any:
    """``_float_bits(x)``: the IEEE bits of float64 ``x`` as an int64 (a bit cast; numba's ``math.frexp`` is a call into C)."""
    if x != types.float64:
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


_float_bits: Any = intrinsic(_float_bits_typer)


@njit(cache=True, error_model="numpy", inline="always")
def _exact_add(bins: np.ndarray, x: float) -> bool:
    """Add ``x`` to the exact sum in ``bins`` (int64 [EXACT_BINS]); False for a value it does not take (negative, not
    finite): the totals then come from the runs, as ``math.fsum`` sums them."""
    if x == 0.0:
        return True
    if not (_TINY <= x < math.inf):
        return False
    # x = m x 2**(e - 53) (``math.frexp``'s e, m < 2**53) read from its bits: x is normal and positive here
    bits = _float_bits(x)
    i = (bits >> np.int64(52)) - 1022 - 53 + _BIN_ZERO
    bins[i] += (bits & _FRACTION) | _IMPLICIT_BIT
    while bins[i] > _BIN_CARRY:  # rare: after about 500 adds to one bin
        if i + 53 >= EXACT_BINS:
            return False
        bins[i + 53] += bins[i] >> np.int64(53)
        bins[i] &= (np.int64(1) << np.int64(53)) - np.int64(1)
        i += 53
    return True


@njit(cache=True, error_model="numpy", inline="always")
def _partials_add(partials: np.ndarray, n: int, value: float) -> int:
    """``math.fsum``'s step (CPython's ``Modules/mathmodule.c``, Shewchuk's partials): ``value`` added to ``partials[:n]``
    (non-overlapping, increasing magnitude), exactly; returns their new count."""
    x, i = value, 0
    for j in range(n):
        y = partials[j]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            partials[i] = lo
            i += 1
        x = hi
    if x != 0.0:
        partials[i] = x
        i += 1
    return i


@njit(cache=True, error_model="numpy")
def _exact_total(bins: np.ndarray, partials: np.ndarray) -> float:
    """The sum kept in ``bins``, rounded once to the nearest float64 (ties to even): ``math.fsum``'s value of the values
    added. Each bin is split into two exactly representable floats, summed as ``math.fsum`` sums (exact on exact
    inputs, then rounded once); ``partials`` holds 2 x EXACT_BINS floats."""
    n = 0
    for i in range(EXACT_BINS):
        v = bins[i]
        if v != 0:
            n = _partials_add(partials, n, math.ldexp(float(v >> np.int64(32)), i - _BIN_ZERO + 32))
            n = _partials_add(partials, n, math.ldexp(float(v & _LOW_BITS), i - _BIN_ZERO))
    hi, lo = 0.0, 0.0
    if n > 0:
        n -= 1
        hi = partials[n]
        while n > 0:
            x = hi
            n -= 1
            y = partials[n]
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                break
        if n > 0 and ((lo < 0.0 and partials[n - 1] < 0.0) or (lo > 0.0 and partials[n - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            if y == x - hi:
                hi = x
    return hi


def _borrowed_typer(typingctx: Any, a: Any) -> Any:
    """``_borrowed(a)``: ``a`` as a view that owns nothing (no meminfo, as ``numba.carray`` makes): reference counting it
    is a test of a null pointer, not an atomic add on the array's count. Only for an array that outlives the view: an
    argument of the function that borrows it (held by its caller), or a part of one, never returned or stored."""
    if not isinstance(a, types.Array):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        source = context.make_array(signature.args[0])(context, builder, value=args[0])
        view = context.make_array(signature.return_type)(context, builder)
        populate_array(view, data=source.data, shape=source.shape, strides=source.strides, itemsize=source.itemsize, meminfo=None)
        return view._getvalue()

    return a(a), codegen


_borrowed: Any = intrinsic(_borrowed_typer)


def _alive_typer(typingctx: Any, x: Any) -> Any:
    """``_alive(x)``: nothing, but a use of ``x`` here: numba releases a variable after its last use, and views that
    ``_borrowed`` made of its arrays must not outlive it."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return context.get_dummy_value()

    return types.none(x), codegen


_alive: Any = intrinsic(_alive_typer)


@njit(cache=True, error_model="numpy")
def _replay_group(  # noqa: PLR0915 - one event loop as groups.replay_group; numba wants the hot state in locals (module docstring)
    g: int, s: int, jobs: Jobs, t: Tables, p: PolicyArrays, b: Buffers, runs: np.ndarray, n_runs: int, sums: np.ndarray
) -> tuple[int, int, int]:
    """Replay group ``g`` under state ``s``: (``OK`` or the ``ERR_*`` where the reference raises, its detail, runs after it).
    Every array passed is a borrowed view (``replay_groups_kernel`` makes them once per call).

    Records its runs in ``runs`` from column ``n_runs`` on, or, where ``runs`` has no column (totals only), adds their
    energy and time to the exact sums ``sums[0]`` and ``sums[1]`` (``_exact_add``) and counts them in the runs returned.
    """
    # Inputs read once into locals: numba reference-counts each read of a tuple's field in a loop this size. The caller
    # passes views that own nothing (``_borrowed``), so these counts, and those of the calls in the loop (a fit, a
    # Thompson step) that pass them on, are tests of a null pointer.
    bounds, group_dataset, start, end, ratio, weight = jobs.bounds, jobs.dataset, jobs.start, jobs.end, jobs.ratio, jobs.weight
    n_bs, b0_index, max_epochs, bs_value, max_pl = t.n_bs, t.b0_index, t.max_epochs, t.bs_value, t.max_pl
    first_energy, first_time, n_lim, lim_value = t.first_energy, t.first_time, t.n_lim, t.lim_value
    energy_per_epoch, time_per_epoch, target_offset, n_targets, targets = t.energy_per_epoch, t.time_per_epoch, t.target_offset, t.n_targets, t.targets
    kind, max_power, grid_offset, grid_bs, grid_pl = p.kind, p.max_power, p.grid_offset, p.grid_bs, p.grid_pl
    eta, beta, streams, knob_row = p.eta[s], p.beta[s], b.streams, b.knob_row
    setup_failed, jit_pl, fixed_bs, fixed_pl = p.setup_failed[s], p.jit_pl[s], p.fixed_bs[s], p.fixed_pl[s]
    is_, fs, heap, end_order, sampler, profiled, hist_n, hist, work = b.is_, b.fs, b.heap, b.end_order, b.sampler, b.profiled, b.hist_n, b.hist, b.work
    survivors, directions, dir_len, dir_pos, good = b.survivors, b.directions, b.dir_len, b.dir_pos, b.good
    arm_of, arm_k, arm_mean, arm_scale, arm_stale, bandit_rng = b.arm_of, b.arm_k, b.arm_mean, b.arm_scale, b.arm_stale, b.bandit_rng
    runs_capacity, history_capacity = runs.shape[1], hist.size // max(1, bs_value.shape[1])
    energy_sum, time_sum = sums[0], sums[1]

    d = group_dataset[g]
    if setup_failed[d]:
        return ERR_SETUP, d, n_runs
    _restart(sampler, streams, knob_row[s], g)
    # the group's best known configuration (``groups._GroupState``)
    best_k, best_pl, min_cost = b0_index[d], -1, math.inf
    # Zeus
    profiled[:] = False
    hist_n[:] = 0
    n_surv = n_bs[d]
    for k in range(n_surv):
        survivors[k] = k
    walk_default, expecting, prune_round, n_dirs, n_good, round_best = b0_index[d], -1, 0, 0, 0, math.inf
    has_result, result_k, result_cost, result_reached = False, -1, 0.0, False
    walk_started, walk_done, n_arms = False, False, 0
    arm_of[:] = -1
    # Grid Search
    grid_next, grid_best_bs, grid_best_pl, grid_best_cost = grid_offset[d], -1, -1, math.inf

    lo, hi = bounds[g], bounds[g + 1]
    group_runs = n_runs  # where this group's runs start: kept if it has to start over
    # A job has at most one run in flight: its slot is its index in the group. Runs end in heapq's order (end, then
    # submission). Where no job ends before it starts, the first runs are popped in ``end_order`` (the next one has
    # arrived whenever it could end before the next arrival; among first runs submission is start order), and only the
    # retries (under 1 % of runs) go through the heap: on ITP, a group's heap of some hundred runs was a third of the time.
    streamed, heap_n, flying, seq, job, first = b.streamed[g], 0, 0, 0, lo, lo  # flying: runs in flight
    while True:
        # ---- the next event: the earliest-ending run if it ends by the next arrival, else that arrival
        waiting = from_heap = heap_n > 0
        ends = fs[_F_T1, heap[0]] if waiting else 0.0
        if streamed and first < hi and end_order[first] < job:  # the first run next to end, its job arrived
            head = end_order[first]
            if not waiting or end[head] < ends or (end[head] == ends and is_[_F_SEQ, head - lo] < is_[_F_SEQ, heap[0]]):
                waiting, from_heap, ends = True, False, end[head]
        if waiting and (job >= hi or ends <= start[job]):
            flying -= 1
            if not from_heap:
                slot = end_order[first] - lo
                first += 1
            else:
                # pop the heap's root, sift its last entry down (inline: a call would reference-count its arrays)
                slot = heap[0]
                heap_n -= 1
                if heap_n > 0:
                    moving, i = heap[heap_n], 0
                    t1m, seqm = fs[_F_T1, moving], is_[_F_SEQ, moving]
                    while True:
                        c = 2 * i + 1
                        if c >= heap_n:
                            break
                        if c + 1 < heap_n and (fs[_F_T1, heap[c + 1]] < fs[_F_T1, heap[c]] or (
                                fs[_F_T1, heap[c + 1]] == fs[_F_T1, heap[c]] and is_[_F_SEQ, heap[c + 1]] < is_[_F_SEQ, heap[c]])):
                            c += 1
                        if not (fs[_F_T1, heap[c]] < t1m or (fs[_F_T1, heap[c]] == t1m and is_[_F_SEQ, heap[c]] < seqm)):
                            break
                        heap[i] = heap[c]
                        i = c
                    heap[i] = moving
            k, limit, reached, cost = is_[_F_K, slot], is_[_F_PL, slot], is_[_F_REACHED, slot] != 0, fs[_F_COST, slot]
            # the policy observes (``Policy.observe``)
            if kind == POLICY_ZEUS:
                if hist_n[k] == history_capacity:
                    return ERR_CAPACITY, hist_n[k], group_runs
                hist[k * history_capacity + hist_n[k]] = -cost
                hist_n[k] += 1
                if n_arms > 0:
                    # A fit is a pure function of the arm's rewards and only the next prediction reads it:
                    # refit then, once (the same values as refitting at every observation).
                    if arm_of[k] >= 0:
                        arm_stale[arm_of[k]] = True
                elif expecting == k:  # concurrency: only the result the walk waits on is reported
                    expecting = -1
                    has_result, result_k, result_cost, result_reached = True, k, cost, reached
            elif kind == POLICY_GRID and reached and cost < grid_best_cost:
                grid_best_bs, grid_best_pl, grid_best_cost = bs_value[d, k], limit, cost
            energy, time, r = fs[_F_ENERGY, slot], fs[_F_TIME, slot], fs[_F_RATIO, slot]
            if energy != 0 or time != 0 or reached:  # a run that could not afford an epoch is not reported
                if runs_capacity == 0:  # totals only: the run's energy (x its job's weight) and time, summed exactly
                    n_runs += 1
                    if not (_exact_add(energy_sum, energy * r * weight[is_[_F_JOB, slot]]) and _exact_add(time_sum, time * r)):
                        return ERR_INEXACT, 0, n_runs
                else:
                    if n_runs == runs_capacity:
                        return ERR_CAPACITY, n_runs - group_runs, group_runs
                    runs[COL_GROUP, n_runs], runs[COL_JOB, n_runs] = g, is_[_F_JOB, slot] - lo
                    runs[COL_T0, n_runs], runs[COL_T1, n_runs] = fs[_F_T0, slot], fs[_F_T1, slot]
                    runs[COL_BS, n_runs], runs[COL_PL, n_runs] = bs_value[d, k], limit
                    runs[COL_ENERGY, n_runs], runs[COL_TIME, n_runs] = energy * r, time * r
                    runs[COL_REACHED, n_runs] = 1.0 if reached else 0.0
                    n_runs += 1
            if reached:
                if min_cost > cost:
                    best_k, best_pl, min_cost = k, limit, cost
                continue
            # a miss is retried at once: it starts at the run's end and takes the same wall time
            t0, t1 = fs[_F_T0, slot], fs[_F_T1, slot]
            new_job, attempt, new_t0, new_t1, new_r = is_[_F_JOB, slot], is_[_F_ATTEMPT, slot] + 1, t1, t1 + (t1 - t0), r
        elif job < hi:
            new_job, attempt, new_t0, new_t1, new_r = job, 1, start[job], end[job], ratio[job]
            job += 1
        else:
            break

        # ---- submit a run (``replay_group.submit``): its configuration ...
        if attempt > MAX_ATTEMPTS:
            return ERR_STUCK, new_job - lo, n_runs
        profile = False
        if flying > 0:  # concurrent: the best known batch size and its limit (``Policy.power_limit`` when none is known)
            k = best_k
            if best_pl >= 0:
                limit = best_pl
            elif kind == POLICY_ZEUS:
                if not profiled[k]:
                    return ERR_POWER_NOT_PROFILED, k, n_runs
                limit = jit_pl[d, k]
            elif kind == POLICY_FIXED:
                limit = fixed_pl[d]
            else:
                limit = max_pl[d, k]
        elif kind == POLICY_ZEUS:
            # ``PruningGTSOptimizer.predict``: the pruning walk (``PruningExplorer.next_batch_size``), then Thompson Sampling.
            # The walk is asked only when nothing is in flight, so its last result is always in (the reference's
            # 'asked before the last result was reported' cannot happen in a group replay).
            k = -1
            if n_arms == 0 and not walk_done:
                new_round = False
                if not walk_started:
                    walk_started, new_round = True, True
                elif has_result:
                    has_result = False
                    if result_reached:
                        if round_best > result_cost:
                            round_best, walk_default = result_cost, result_k
                        good[n_good] = result_k
                        n_good += 1
                    else:
                        n_dirs -= 1  # the rest of this direction is pruned
                while True:
                    if new_round:  # ``PruningExplorer._start_round``
                        new_round = False
                        idx = -1
                        for i in range(n_surv):
                            if survivors[i] == walk_default:
                                idx = i
                        if idx < 0:
                            return ERR_PRUNED_DEFAULT, walk_default, n_runs
                        for i in range(idx + 1):
                            directions[0, i] = survivors[idx - i]
                        for i in range(idx + 1, n_surv):
                            directions[1, i - idx - 1] = survivors[i]
                        dir_len[0], dir_len[1], dir_pos[0], dir_pos[1] = idx + 1, n_surv - idx - 1, 0, 0
                        n_dirs, n_good, round_best = 2, 0, math.inf
                    while n_dirs > 0 and dir_pos[2 - n_dirs] == dir_len[2 - n_dirs]:
                        n_dirs -= 1
                    if n_dirs > 0:  # the head direction's next batch size
                        head = 2 - n_dirs
                        k = directions[head, dir_pos[head]]
                        dir_pos[head] += 1
                        expecting = k
                        break
                    expecting = -1
                    n_surv = n_good
                    _copy(good, survivors, n_good)
                    _sort(survivors, n_surv)
                    prune_round += 1
                    if prune_round == NUM_PRUNING_ROUNDS:
                        walk_done = True
                        break
                    new_round = True
            if k < 0:
                if n_arms == 0:  # the bandit starts over the survivors, on a fresh generator with the group's seed
                    if n_surv == 0:
                        return ERR_EMPTY_BANDIT, 0, n_runs
                    _restart(bandit_rng, streams, knob_row[s], g)
                    n_arms = n_surv
                    for a in range(n_arms):
                        arm_k[a], arm_of[survivors[a]], arm_stale[a] = survivors[a], a, True  # each fitted below
                    for a in range(n_arms):
                        if hist_n[arm_k[a]] < 2:
                            return ERR_FEW_OBSERVATIONS, arm_k[a], n_runs
                for a in range(n_arms):
                    if arm_stale[a]:
                        arm_stale[a] = False
                        arm_mean[a], arm_scale[a] = _fit(hist, arm_k[a] * history_capacity, hist_n[arm_k[a]], work)
                k = arm_k[_thompson(bandit_rng, n_arms, arm_mean, arm_scale)]
            # ``ZeusPolicy.choose``: the first run of a batch size profiles its power limits
            limit = jit_pl[d, k]
            profile = not profiled[k]
            profiled[k] = True
        elif kind == POLICY_FIXED:
            k, limit = -1, fixed_pl[d]
            for i in range(n_bs[d]):
                if bs_value[d, i] == fixed_bs[d]:
                    k = i
        else:  # ``GridSearchPolicy.choose``
            if grid_next < grid_offset[d + 1]:
                bs, limit = grid_bs[grid_next], grid_pl[grid_next]
                grid_next += 1
            elif grid_best_bs >= 0:
                bs, limit = grid_best_bs, grid_best_pl
            else:
                bs, limit = bs_value[d, b0_index[d]], max_pl[d, b0_index[d]]
            k = -1
            for i in range(n_bs[d]):
                if bs_value[d, i] == bs:
                    k = i

        # ---- ... and its outcome (``RunSampler.run``)
        if k < 0:  # a batch size without rows (an Oracle's concurrent run at a b0 the table lacks)
            return ERR_UNKNOWN_BATCH_SIZE, 0, n_runs
        if n_targets[d, k] == 0:
            return ERR_NO_TRAIN_RUN, k, n_runs
        m = 0  # the first limit of that value (``BatchSizeTable.limit_index``)
        while m < n_lim[d, k] and lim_value[d, k, m] != limit:
            m += 1
        if m == n_lim[d, k]:
            return ERR_LIMIT_INDEX, k, n_runs
        epe, tpe = energy_per_epoch[d, k, m], time_per_epoch[d, k, m]
        target = targets[target_offset[d, k] + bounded(sampler, n_targets[d, k] - 1)]
        cost_bound = beta * min_cost
        if cost_bound == math.inf:
            budget = max_epochs[d]
        else:
            epoch_cost = zeus_cost(eta, epe, max_pl[d, k], tpe)
            if epoch_cost == 0.0:
                return ERR_ZERO_DIVISION, k, n_runs
            if 1.0 <= target <= max_epochs[d] and cost_bound / epoch_cost >= target + 3.0:
                # The run reaches its target whatever the budget's exact value: the true quotient exceeds target + 2, so
                # Python's floor division (exact up to 2**52) is above the target, and so is the smaller max_epochs.
                # The value that stands for it gives the same run without the division's fmod (a libm call per run).
                budget = target
            else:
                budget = py_floordiv(cost_bound, epoch_cost)
                # min(budget, max_epochs) as Python takes it: the first unless the second is smaller (a NaN stays)
                budget = max_epochs[d] if max_epochs[d] < budget else budget
        if budget == 0:
            energy, time, reached = 0.0, 0.0, False
        else:
            reached = not math.isnan(target) and target <= budget
            epochs = target if reached else budget
            if profile:
                energy, time = first_energy[d, k] + epe * (epochs - 1), first_time[d, k] + tpe * (epochs - 1)
            else:
                energy, time = epe * epochs, tpe * epochs

        # ---- in flight until its end
        slot = new_job - lo
        is_[_F_SEQ, slot], is_[_F_JOB, slot], is_[_F_ATTEMPT, slot] = seq, new_job, attempt
        is_[_F_K, slot], is_[_F_PL, slot], is_[_F_REACHED, slot] = k, limit, 1 if reached else 0
        fs[_F_T1, slot], fs[_F_T0, slot], fs[_F_RATIO, slot] = new_t1, new_t0, new_r
        fs[_F_TIME, slot], fs[_F_ENERGY, slot] = time, energy
        fs[_F_COST, slot] = zeus_cost(eta, energy, max_power, time)
        seq += 1
        flying += 1
        if streamed and attempt == 1:
            continue  # popped in end_order
        # push: sift up from the end (ends tie rarely; then the earlier submission first, as heapq's tuples)
        i = heap_n
        heap_n += 1
        while i > 0:
            parent = (i - 1) // 2
            q = heap[parent]
            if not (new_t1 < fs[_F_T1, q] or (new_t1 == fs[_F_T1, q] and seq - 1 < is_[_F_SEQ, q])):
                break
            heap[i] = q
            i = parent
        heap[i] = slot
    return OK, 0, n_runs


@njit(cache=True, error_model="numpy")
def end_orders(bounds: np.ndarray, start: np.ndarray, end: np.ndarray, g_lo: int, g_hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(``end_order``, ``streamed``) of ``Buffers`` for groups ``[g_lo, g_hi)``: each group's job indices by end, ties in
    start order (a stable sort), where every job of the group ends no earlier than it starts (``streamed``); the same for
    every state, so computed once per call."""
    end_order = np.empty(end.size, dtype=np.int64)
    streamed = np.zeros(bounds.size - 1, dtype=np.bool_)
    for g in range(g_lo, g_hi):
        lo, hi = bounds[g], bounds[g + 1]
        ordered = True
        for j in range(lo, hi):
            ordered = ordered and end[j] >= start[j]  # False for a NaN too
        streamed[g] = ordered
        if ordered:
            by_end = np.argsort(end[lo:hi], kind="mergesort")
            for i in range(hi - lo):
                end_order[lo + i] = lo + by_end[i]
    return end_order, streamed


@njit(cache=True, error_model="numpy")
def replay_groups_kernel(
    g_lo: int, g_hi: int, jobs: Jobs, t: Tables, p: PolicyArrays, runs_capacity: int, history_capacity: int
) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray]:
    """Replay groups ``[g_lo, g_hi)`` of ``jobs`` under each state of ``p``; returns (runs, number of runs, errors, counts, sums).

    With ``runs_capacity`` > 0 (one state), ``runs`` is a (N_COLUMNS, runs_capacity) float64 array, one column per
    reported run in replay order (rows ``COL_*``), and ``errors[0]`` is int64 [code, group, detail]: ``OK``, or the
    ``ERR_*`` of the first group (in order) where the reference raises, or ``ERR_CAPACITY`` where the runs or a batch
    size's rewards (``history_capacity`` per group) would not fit: the runs of the groups before it are complete, and the
    caller goes on from that group with larger buffers (buffers never grow here: an array re-assigned in the loop costs
    reference counting on every run).

    With ``runs_capacity`` 0 (totals only, any number of states), each group is replayed under every state in turn
    (one pass over the jobs, the states side by side), and state ``s`` gets ``counts[s]`` (its reported runs) and
    ``sums[s]`` (the exactly rounded sums of their energy x ``jobs.weight`` and of their time: ``math.fsum``'s values),
    or its error in ``errors[s]`` (the state is then left out of the groups after it; ``ERR_CAPACITY`` and
    ``ERR_INEXACT`` too: the caller replays that state alone).
    """
    n_states = p.eta.size
    errors = np.zeros((n_states, 3), dtype=np.int64)
    counts = np.zeros(n_states, dtype=np.int64)
    bins = np.zeros((n_states, 2, EXACT_BINS), dtype=np.int64)
    sums = np.zeros((n_states, 2), dtype=np.float64)
    runs = np.empty((N_COLUMNS, runs_capacity), dtype=np.float64)
    max_jobs = 1
    for g in range(g_lo, g_hi):
        max_jobs = max(max_jobs, jobs.bounds[g + 1] - jobs.bounds[g])
    nb = t.bs_value.shape[1]
    streams, knob_row = group_streams(jobs.seed, g_lo, g_hi, p.knob_words, p.knob_len)
    end_order, streamed = end_orders(jobs.bounds, jobs.start, jobs.end, g_lo, g_hi)
    b = Buffers(
        is_=np.zeros((N_INT_SLOTS, max_jobs), dtype=np.int64), fs=np.zeros((N_FLOAT_SLOTS, max_jobs), dtype=np.float64),
        heap=np.zeros(max_jobs, dtype=np.int64), end_order=end_order, streamed=streamed, sampler=np.zeros(STREAM_WORDS, dtype=np.uint64),
        profiled=np.zeros(nb, dtype=np.bool_), hist_n=np.zeros(nb, dtype=np.int64), hist=np.empty(nb * history_capacity, dtype=np.float64),
        work=np.empty(PAIRWISE_WORK, dtype=np.float64), survivors=np.zeros(nb, dtype=np.int64), directions=np.zeros((2, nb), dtype=np.int64),
        dir_len=np.zeros(2, dtype=np.int64), dir_pos=np.zeros(2, dtype=np.int64), good=np.zeros(nb, dtype=np.int64),
        arm_of=np.full(nb, -1, dtype=np.int64), arm_k=np.zeros(nb, dtype=np.int64), arm_mean=np.zeros(nb, dtype=np.float64),
        arm_scale=np.zeros(nb, dtype=np.float64), arm_stale=np.zeros(nb, dtype=np.bool_), bandit_rng=np.zeros(STREAM_WORDS, dtype=np.uint64),
        streams=streams, knob_row=knob_row,
    )  # fmt: skip
    # The call below reads every array through these tuples of borrowed views (``_borrowed``; ``b`` is kept ``_alive``):
    # reading a field of a tuple of owned arrays counts a reference to it twice, atomically, some 100 counts a call and a
    # call per group and state.
    _b = _borrowed
    jv = Jobs(_b(jobs.bounds), _b(jobs.dataset), _b(jobs.seed), _b(jobs.start), _b(jobs.end), _b(jobs.ratio), _b(jobs.weight))
    tv = Tables(_b(t.n_bs), _b(t.b0_index), _b(t.max_epochs), _b(t.bs_value), _b(t.max_pl), _b(t.first_energy), _b(t.first_time),
                _b(t.n_lim), _b(t.lim_value), _b(t.energy_per_epoch), _b(t.time_per_epoch), _b(t.target_offset), _b(t.n_targets),
                _b(t.targets))
    pv = PolicyArrays(p.kind, p.max_power, _b(p.grid_offset), _b(p.grid_bs), _b(p.grid_pl), _b(p.eta), _b(p.beta), _b(p.knob_words),
                      _b(p.knob_len), _b(p.setup_failed), _b(p.jit_pl), _b(p.fixed_bs), _b(p.fixed_pl))
    bv = Buffers(_b(b.is_), _b(b.fs), _b(b.heap), _b(b.end_order), _b(b.streamed), _b(b.sampler), _b(b.profiled), _b(b.hist_n),
                 _b(b.hist), _b(b.work), _b(b.survivors), _b(b.directions), _b(b.dir_len), _b(b.dir_pos), _b(b.good), _b(b.arm_of),
                 _b(b.arm_k), _b(b.arm_mean), _b(b.arm_scale), _b(b.arm_stale), _b(b.bandit_rng), _b(b.streams), _b(b.knob_row))
    runs_v, bins_v = _b(runs), _b(bins)
    n_runs = 0
    for g in range(g_lo, g_hi):
        for s in range(n_states):
            if errors[s, 0] != OK:
                continue
            code, detail, after = _replay_group(g, s, jv, tv, pv, bv, runs_v, counts[s] if runs_capacity == 0 else n_runs, bins_v[s])
            if code != OK:
                errors[s, 0], errors[s, 1], errors[s, 2] = code, g, detail
                if runs_capacity > 0:
                    return runs, after, errors, counts, sums
            elif runs_capacity == 0:
                counts[s] = after
            else:
                n_runs = after
    _alive(b)
    partials = np.empty(EXACT_BINS * 2, dtype=np.float64)
    for s in range(n_states):
        if errors[s, 0] == OK:
            sums[s, 0], sums[s, 1] = _exact_total(bins[s, 0], partials), _exact_total(bins[s, 1], partials)
    return runs, n_runs, errors, counts, sums
