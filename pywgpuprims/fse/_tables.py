"""Host-side FSE building blocks: table-log choice, count normalisation, the normalised-count
header (NCount), and the encoding/decoding tables.

These follow the reference FSE format (Collet's FiniteStateEntropy, also used by zstd, RFC 8878
section 4.1.1) so that blocks are bit-identical with the reference block compressor. They are
written from the format's description; the ``zstd`` package's exported FSE functions are the
test oracle.

Normalisation runs on the host because it needs 64-bit integer arithmetic (core WGSL has none);
:func:`normalize_many` vectorises it over many blocks with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import CorruptDataError, InputError

MIN_TABLELOG = 5
MAX_TABLELOG = 12          # the library's cap (reference: FSE_MAX_TABLELOG = 12)
DEFAULT_TABLELOG = 11
NCOUNT_BOUND = 512         # bytes an NCount header can take at most (256 symbols, table log 12)

# Rounding thresholds for small probabilities (the reference's "rest to beat" table, in 2^-20 units).
_RTB = np.array([0, 473195, 504333, 520860, 550000, 700000, 750000, 830000], dtype=np.uint64)
_RTB_I64 = _RTB.astype(np.int64)


def _highbit(x: int) -> int:
    return int(x).bit_length() - 1


def min_table_log(n: int, max_symbol: int) -> int:
    return min(_highbit(n) + 1, _highbit(max_symbol) + 2)


def optimal_table_log(max_table_log: int, n: int, max_symbol: int) -> int:
    """The table log the reference picks for ``n`` symbols with largest value ``max_symbol``."""
    tl = max_table_log or DEFAULT_TABLELOG
    # Unsigned 32-bit, as the reference computes it: below 4 symbols it wraps, and so never lowers tl.
    max_bits_src = (_highbit(n - 1) - 2) & 0xFFFFFFFF
    if max_bits_src < tl:
        tl = max_bits_src
    mb = min_table_log(n, max_symbol)
    if mb > tl:
        tl = mb
    return max(MIN_TABLELOG, min(MAX_TABLELOG, tl))


def _highbits(x: np.ndarray) -> np.ndarray:
    """``int(v).bit_length() - 1`` for each v of a non-negative integer array (below 2**53)."""
    return np.frexp(np.asarray(x, np.float64))[1].astype(np.int64) - 1


def optimal_table_logs(max_table_log: int, n: np.ndarray, max_symbol: np.ndarray) -> np.ndarray:
    """:func:`optimal_table_log` over arrays of block sizes and largest symbols (int64)."""
    n = np.asarray(n, np.int64)
    tl = np.full(n.shape, max_table_log or DEFAULT_TABLELOG, np.int64)
    mbs = _highbits(n - 1) - 2   # negative (below 4 symbols): the reference's u32 wraps, never lowering tl
    tl = np.where((mbs >= 0) & (mbs < tl), mbs, tl)
    mb = np.minimum(_highbits(n) + 1, _highbits(max_symbol) + 2)
    tl = np.maximum(tl, mb)
    return np.clip(tl, MIN_TABLELOG, MAX_TABLELOG)


def normalize_counts(counts, table_log: int, total: int | None = None, low_prob: bool = True) -> np.ndarray:
    """Normalise symbol counts so that they sum to ``2**table_log``, exactly as the reference does.

    Symbols whose count is at most ``total >> table_log`` get the special value -1 (a "low
    probability" symbol that takes one table slot) when ``low_prob`` is true, else 1.

    Parameters
    ----------
    counts : array_like of int, length ``max_symbol + 1``
        Histogram; the last entry should be nonzero (the reference trims it so).
    table_log : int
        5..12.
    total : int, optional
        Sum of ``counts`` (computed when omitted).

    Returns
    -------
    numpy.ndarray of int16, same length as ``counts``.

    Examples
    --------
    >>> from pywgpuprims.fse import normalize_counts
    >>> normalize_counts([60, 30, 10], 5).tolist()
    [20, 9, 3]
    """
    c = [int(v) for v in np.asarray(counts).ravel()]
    total = sum(c) if total is None else int(total)
    if not MIN_TABLELOG <= table_log <= MAX_TABLELOG:
        raise InputError("fse.normalize_counts", f"table_log {table_log} outside {MIN_TABLELOG}..{MAX_TABLELOG}")
    if not c or total <= 0 or any(v < 0 for v in c):
        raise InputError("fse.normalize_counts", "counts must be non-negative with a positive total")
    if table_log < min_table_log(total, len(c) - 1):
        raise InputError("fse.normalize_counts", f"table_log {table_log} too small for {len(c)} symbols")
    low = -1 if low_prob else 1
    scale = 62 - table_log
    step = (1 << 62) // total
    vstep = 1 << (scale - 20)
    still = 1 << table_log
    low_threshold = total >> table_log
    norm = [0] * len(c)
    largest, largest_p = 0, 0
    for s, cs in enumerate(c):
        if cs == total:
            raise InputError("fse.normalize_counts", "a single symbol: use an RLE block")
        if cs == 0:
            continue
        if cs <= low_threshold:
            norm[s] = low
            still -= 1
            continue
        proba = (cs * step) >> scale
        if proba < 8:
            rest = vstep * int(_RTB[proba])
            proba += 1 if (cs * step) - (proba << scale) > rest else 0
        if proba > largest_p:
            largest_p, largest = proba, s
        norm[s] = proba
        still -= proba
    if -still >= (norm[largest] >> 1):
        norm = _normalize_m2(c, table_log, total, low)
    else:
        norm[largest] += still
    return np.array(norm, dtype=np.int16)


def _normalize_m2(c: list[int], table_log: int, total: int, low: int) -> list[int]:
    """The reference's fallback normalisation for flat distributions."""
    unassigned = -2
    norm = [0] * len(c)
    distributed = 0
    low_threshold = total >> table_log
    low_one = (total * 3) >> (table_log + 1)
    for s, cs in enumerate(c):
        if cs == 0:
            continue
        if cs <= low_threshold:
            norm[s] = low
            distributed += 1
            total -= cs
        elif cs <= low_one:
            norm[s] = 1
            distributed += 1
            total -= cs
        else:
            norm[s] = unassigned
    to_distribute = (1 << table_log) - distributed
    if to_distribute == 0:
        return norm
    if total // to_distribute > low_one:
        low_one = (total * 3) // (to_distribute * 2)
        for s, cs in enumerate(c):
            if norm[s] == unassigned and cs <= low_one:
                norm[s] = 1
                distributed += 1
                total -= cs
        to_distribute = (1 << table_log) - distributed
    if distributed == len(c):
        maxv = max(range(len(c)), key=lambda s: (c[s], -s))
        norm[maxv] += to_distribute
        return norm
    if total == 0:
        s = 0
        while to_distribute > 0:
            if norm[s] > 0:
                to_distribute -= 1
                norm[s] += 1
            s = (s + 1) % len(c)
        return norm
    vlog = 62 - table_log
    mid = (1 << (vlog - 1)) - 1
    rstep = (((1 << vlog) * to_distribute) + mid) // total
    tmp = mid
    for s, cs in enumerate(c):
        if norm[s] == unassigned:
            end = tmp + cs * rstep
            weight = (end >> vlog) - (tmp >> vlog)
            if weight < 1:
                raise InputError("fse.normalize_counts", "normalisation failed")
            norm[s] = weight
            tmp = end
    return norm


def normalize_many(hist: np.ndarray, totals: np.ndarray, table_logs: np.ndarray) -> np.ndarray:
    """Vectorised :func:`normalize_counts` over rows of ``hist`` (blocks x 256), low-prob rule on.

    Rows must be FSE-able (no single-symbol row, total > 0). Returns int16 (blocks x 256); symbols
    past each row's last nonzero count are 0. Dense over the 256 columns (no gathers: a few
    thousand blocks in tens of milliseconds); rows needing the fallback method are done one by one.
    """
    hist = np.asarray(hist)
    nb = hist.shape[0]
    if nb == 0:
        return np.zeros((0, 256), np.int16)
    width = int(np.flatnonzero(hist.any(axis=0))[-1]) + 1   # columns past every row's last symbol stay 0
    c = hist[:, :width].astype(np.int64)
    totals = np.asarray(totals, dtype=np.int64)[:, None]
    tl = np.asarray(table_logs, dtype=np.int64)[:, None]
    scale = 62 - tl
    prod = c * ((1 << 62) // totals)                 # at most 2**62: exact in int64
    proba = prod >> scale
    # the reference's rounding of small probabilities (dense: cheaper than gathering them)
    rest = (np.int64(1) << (scale - 20)) * _RTB_I64[np.minimum(proba, 7)]
    proba += (proba < 8) & (prod - (proba << scale) > rest)
    present = c > 0
    low = present & (c <= (totals >> tl))
    cand = np.where(present & ~low, proba, -1)
    largest = np.argmax(cand, axis=1)               # the first largest, as the reference keeps it
    val = np.where(low, -1, np.where(present, proba, 0))
    still = (np.int64(1) << tl[:, 0]) - np.where(low, 1, val).sum(axis=1)
    r = np.arange(nb)
    lv = val[r, largest]
    m2 = -still >= (lv >> 1)
    val[r, largest] = lv + still
    out = np.zeros((nb, 256), np.int16)
    out[:, :width] = val
    for i in np.flatnonzero(m2):
        n = int(totals[i, 0])
        last = int(np.flatnonzero(hist[i])[-1])
        out[i, :] = 0
        out[i, :last + 1] = normalize_counts(hist[i, :last + 1], int(tl[i, 0]), n)
    return out


def write_ncount(norm, table_log: int) -> bytes:
    """The normalised-count header (reference NCount format) for ``norm`` (trimmed to its last symbol).

    Examples
    --------
    >>> from pywgpuprims.fse import write_ncount
    >>> write_ncount([20, 9, 3], 5).hex()
    '50f9'
    """
    norm = [int(v) for v in np.asarray(norm).ravel()]
    bits: list[tuple[int, int]] = []
    size = 1 << table_log
    remaining = size + 1
    threshold = size
    nbits = table_log + 1
    bits.append((table_log - MIN_TABLELOG, 4))
    s = 0
    prev0 = False
    n = len(norm)
    while s < n and remaining > 1:
        if prev0:
            start = s
            while s < n and norm[s] == 0:
                s += 1
            if s == n:
                break
            while s >= start + 24:
                start += 24
                bits.append((0xFFFF, 16))
            while s >= start + 3:
                start += 3
                bits.append((3, 2))
            bits.append((s - start, 2))
        count = norm[s]
        s += 1
        mx = (2 * threshold - 1) - remaining
        remaining -= abs(count)
        count += 1
        if count >= threshold:
            count += mx
        bits.append((count, nbits - (1 if count < mx else 0)))
        prev0 = count == 1
        if remaining < 1:
            raise InputError("fse.write_ncount", "counts do not sum to the table size")
        while remaining < threshold:
            nbits -= 1
            threshold >>= 1
    if remaining != 1:
        raise InputError("fse.write_ncount", "counts do not sum to the table size")
    acc, pos = 0, 0
    for v, k in bits:
        acc |= (v & ((1 << k) - 1)) << pos
        pos += k
    return acc.to_bytes((pos + 7) // 8, "little")


def read_ncount(buf: bytes, max_table_log: int = MAX_TABLELOG) -> tuple[np.ndarray, int, int]:
    """Parse an NCount header: returns ``(norm, table_log, header_bytes)``; CorruptDataError if bad."""
    data = bytes(buf)
    nbits_total = 8 * len(data)
    val = int.from_bytes(data, "little")
    pos = 0

    def take(k: int) -> int:
        nonlocal pos
        if pos + k > nbits_total:
            raise CorruptDataError("fse", "truncated count header")
        v = (val >> pos) & ((1 << k) - 1)
        pos += k
        return v

    def peek(k: int) -> int:
        return (val >> pos) & ((1 << k) - 1)

    tl = take(4) + MIN_TABLELOG
    if tl > max_table_log:
        raise CorruptDataError("fse", f"table log {tl} above {max_table_log}")
    remaining = (1 << tl) + 1
    threshold = 1 << tl
    nbits = tl + 1
    norm: list[int] = []
    prev0 = False
    while remaining > 1 and len(norm) <= 255:
        if prev0:
            n0 = len(norm)
            while peek(16) == 0xFFFF and pos + 16 <= nbits_total:
                n0 += 24
                take(16)
            while peek(2) == 3:
                n0 += 3
                take(2)
            n0 += take(2)
            if n0 > 255:
                raise CorruptDataError("fse", "symbol value above 255 in count header")
            norm.extend([0] * (n0 - len(norm)))
        mx = (2 * threshold - 1) - remaining
        if peek(nbits - 1) < mx:
            count = take(nbits - 1)
        else:
            count = take(nbits)
            if count >= threshold:
                count -= mx
        count -= 1
        remaining -= abs(count)
        norm.append(count)
        prev0 = count == 0
        if remaining < 1:
            raise CorruptDataError("fse", "counts exceed the table size")
        while remaining < threshold:
            nbits -= 1
            threshold >>= 1
    if remaining != 1:
        raise CorruptDataError("fse", "counts do not sum to the table size")
    return np.array(norm, dtype=np.int16), tl, (pos + 7) // 8


def _spread(norm: list[int], table_log: int) -> tuple[list[int], int]:
    size = 1 << table_log
    mask = size - 1
    high = size - 1
    table = [0] * size
    for s, v in enumerate(norm):
        if v == -1:
            table[high] = s
            high -= 1
    step = (size >> 1) + (size >> 3) + 3
    pos = 0
    for s, v in enumerate(norm):
        for _ in range(max(v, 0)):
            table[pos] = s
            pos = (pos + step) & mask
            while pos > high:
                pos = (pos + step) & mask
    if pos != 0:
        raise InputError("fse", "bad normalised counts (spread did not close)")
    return table, high


@dataclass
class CTable:
    """Compact FSE encoding table: ``nbBits = (state + delta_nb_bits[s]) >> 16``, then
    ``state = state_table[(state >> nbBits) + delta_find_state[s]]`` (states in [size, 2 size))."""

    table_log: int
    max_symbol: int
    state_table: np.ndarray       # uint16, tableSize entries
    delta_nb_bits: np.ndarray     # uint32, max_symbol + 1
    delta_find_state: np.ndarray  # int32, max_symbol + 1

    def reference_bytes(self) -> bytes:
        """The table in the reference's FSE_CTable memory layout (for comparison in tests)."""
        size = 1 << self.table_log
        head = np.array([self.table_log, self.max_symbol], np.uint16).tobytes()
        st = self.state_table.astype("<u2").tobytes()
        st += b"\0" * (4 * (size >> 1) - len(st))
        tt = np.empty((self.max_symbol + 1, 2), "<i4")
        tt[:, 0] = self.delta_find_state
        tt[:, 1] = self.delta_nb_bits.astype(np.int64).astype(np.uint32).view(np.int32)
        return head + st + tt.tobytes()


def _check_norm(norm, table_log: int, where: str) -> list[int]:
    n = [int(v) for v in np.asarray(norm).ravel()]
    if not MIN_TABLELOG <= table_log <= MAX_TABLELOG:
        raise InputError(where, f"table_log {table_log} outside {MIN_TABLELOG}..{MAX_TABLELOG}")
    if not 1 <= len(n) <= 256 or any(v < -1 for v in n) or sum(abs(v) for v in n) != (1 << table_log):
        raise InputError(where, "normalised counts must be >= -1 and their magnitudes sum to 2**table_log")
    return n


def build_ctable(norm, table_log: int) -> CTable:
    """The encoding table for normalised counts (reference symbol spread and state order).

    Examples
    --------
    >>> from pywgpuprims.fse import build_ctable
    >>> t = build_ctable([20, 9, 3], 5)
    >>> t.state_table[:4].tolist(), t.delta_nb_bits.tolist()
    ([32, 33, 34, 37], [65496, 131036, 262096])
    """
    n = _check_norm(norm, table_log, "fse.build_ctable")
    size = 1 << table_log
    table, _ = _spread(n, table_log)
    cumul = [0] * (len(n) + 1)
    for s, v in enumerate(n):
        cumul[s + 1] = cumul[s] + (1 if v == -1 else v)
    nxt = cumul[:]
    st = np.zeros(size, np.uint16)
    for u in range(size):
        s = table[u]
        st[nxt[s]] = size + u
        nxt[s] += 1
    dnb = np.zeros(len(n), np.int64)
    dfs = np.zeros(len(n), np.int64)
    total = 0
    for s, v in enumerate(n):
        if v == 0:
            dnb[s] = ((table_log + 1) << 16) - size
        elif v in (-1, 1):
            dnb[s] = (table_log << 16) - size
            dfs[s] = total - 1
            total += 1
        else:
            mbo = table_log - _highbit(v - 1)
            dnb[s] = (mbo << 16) - (v << mbo)
            dfs[s] = total - v
            total += v
    return CTable(table_log, len(n) - 1, st, (dnb & 0xFFFFFFFF).astype(np.uint32), dfs.astype(np.int32))


@dataclass
class DTable:
    """FSE decoding table: per state ``symbol``, ``nb_bits`` and ``new_state``; the next state is
    ``new_state + read(nb_bits)``."""

    table_log: int
    fast_mode: int
    new_state: np.ndarray  # uint16
    symbol: np.ndarray     # uint8
    nb_bits: np.ndarray    # uint8

    def reference_bytes(self) -> bytes:
        """The table in the reference's FSE_DTable memory layout."""
        e = np.zeros(len(self.symbol), dtype=[("ns", "<u2"), ("s", "u1"), ("nb", "u1")])
        e["ns"], e["s"], e["nb"] = self.new_state, self.symbol, self.nb_bits
        return np.array([self.table_log, self.fast_mode], "<u2").tobytes() + e.tobytes()


def build_dtable(norm, table_log: int) -> DTable:
    """The decoding table for normalised counts.

    Examples
    --------
    >>> from pywgpuprims.fse import build_dtable
    >>> build_dtable([20, 9, 3], 5).symbol[:6].tolist()
    [0, 0, 0, 1, 1, 0]
    """
    n = _check_norm(norm, table_log, "fse.build_dtable")
    size = 1 << table_log
    table, _ = _spread(n, table_log)
    nxt = [1 if v == -1 else v for v in n]
    large = 1 << (table_log - 1)
    fast = 0 if any(v >= large for v in n) else 1
    ns = np.zeros(size, np.uint16)
    nb = np.zeros(size, np.uint8)
    for u in range(size):
        s = table[u]
        x = nxt[s]
        nxt[s] += 1
        b = table_log - _highbit(x)
        nb[u] = b
        ns[u] = (x << b) - size
    return DTable(table_log, fast, ns, np.array(table, np.uint8), nb)
