"""ctypes access to the reference FSE functions that the ``zstd`` PyPI package (1.5.7.x) exports.

Used by the tests (bit-exactness oracle) and the benchmark (reference CPU rate). These are internal
zstd symbols, not a public API: :func:`load` returns None when the package or a symbol is missing.
"""

from __future__ import annotations

import ctypes

import numpy as np

SYMBOLS = ("FSE_normalizeCount", "FSE_writeNCount", "FSE_readNCount", "FSE_buildCTable_wksp",
           "FSE_buildDTable_wksp", "FSE_compress_usingCTable", "FSE_decompress_wksp_bmi2", "HIST_count",
           "FSE_optimalTableLog")

_lib = None
_missing: str | None = None


def load():
    """The loaded library, or None (see :func:`why_missing`)."""
    global _lib, _missing
    if _lib is not None or _missing is not None:
        return _lib
    try:
        import zstd  # noqa: PLC0415

        lib = ctypes.CDLL(zstd.__file__)
    except Exception as exc:  # pragma: no cover - depends on the environment
        _missing = f"zstd package not loadable: {exc}"
        return None
    absent = [s for s in SYMBOLS if not hasattr(lib, s)]
    if absent:
        _missing = f"zstd package lacks {', '.join(absent)}"
        return None
    sz, vp, u, i = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
    sigs = {
        "FSE_normalizeCount": (sz, [vp, u, vp, sz, u, u]),
        "FSE_writeNCount": (sz, [vp, sz, vp, u, u]),
        "FSE_readNCount": (sz, [vp, vp, vp, vp, sz]),
        "FSE_buildCTable_wksp": (sz, [vp, vp, u, u, vp, sz]),
        "FSE_buildDTable_wksp": (sz, [vp, vp, u, u, vp, sz]),
        "FSE_compress_usingCTable": (sz, [vp, sz, vp, sz, vp]),
        "FSE_decompress_wksp_bmi2": (sz, [vp, sz, vp, sz, u, vp, sz, i]),
        "HIST_count": (sz, [vp, vp, vp, sz]),
        "FSE_optimalTableLog": (u, [u, sz, u]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    _lib = lib
    return lib


def why_missing() -> str:
    load()
    return _missing or ""


def _err(code: int) -> bool:
    return code > (1 << 64) - 200


def _p(a) -> int:
    return a.ctypes.data


def normalize(counts, table_log: int, total: int, low_prob: bool = True) -> np.ndarray:
    lib = load()
    c = np.ascontiguousarray(counts, dtype=np.uint32)
    out = np.zeros(256, np.int16)
    r = lib.FSE_normalizeCount(_p(out), table_log, _p(c), total, len(c) - 1, int(low_prob))
    if _err(r):
        raise ValueError("FSE_normalizeCount failed")
    return out[:len(c)]


def write_ncount(norm, table_log: int) -> bytes:
    lib = load()
    n = np.ascontiguousarray(norm, dtype=np.int16)
    buf = np.zeros(1024, np.uint8)
    r = lib.FSE_writeNCount(_p(buf), len(buf), _p(n), len(n) - 1, table_log)
    if _err(r):
        raise ValueError("FSE_writeNCount failed")
    return buf[:r].tobytes()


def ctable_bytes(norm, table_log: int) -> bytes:
    lib = load()
    n = np.ascontiguousarray(norm, dtype=np.int16)
    ct = np.zeros(1 + (1 << (table_log - 1)) + 2 * 256 + 8, np.uint32)
    wk = np.zeros(1 << 14, np.uint32)
    r = lib.FSE_buildCTable_wksp(_p(ct), _p(n), len(n) - 1, table_log, _p(wk), wk.nbytes)
    if _err(r):
        raise ValueError("FSE_buildCTable_wksp failed")
    size = 4 * (1 + (1 << (table_log - 1))) + 8 * len(n)
    return ct.view(np.uint8)[:size].tobytes()


def dtable_bytes(norm, table_log: int) -> bytes:
    lib = load()
    n = np.ascontiguousarray(norm, dtype=np.int16)
    dt = np.zeros(1 + (1 << table_log), np.uint32)
    wk = np.zeros(1 << 14, np.uint32)
    r = lib.FSE_buildDTable_wksp(_p(dt), _p(n), len(n) - 1, table_log, _p(wk), wk.nbytes)
    if _err(r):
        raise ValueError("FSE_buildDTable_wksp failed")
    return dt.view(np.uint8).tobytes()


def compress_block(data: bytes, table_log: int = 11) -> tuple[int, bytes]:
    """What the reference block compressor (FSE_compress2 chain) gives for ``data``:
    ``(0, b"")`` not compressible, ``(1, b"")`` single symbol, ``(2, payload)`` an FSE block."""
    lib = load()
    src = np.frombuffer(bytes(data), np.uint8).copy()
    n = len(src)
    if n <= 1:
        return 0, b""
    count = np.zeros(256, np.uint32)
    msv = ctypes.c_uint(255)
    maxc = lib.HIST_count(_p(count), ctypes.addressof(msv), _p(src), n)
    if maxc == n:
        return 1, b""
    if maxc == 1 or maxc < (n >> 7):
        return 0, b""
    m = msv.value
    tl = lib.FSE_optimalTableLog(table_log, n, m)
    norm = normalize(count[:m + 1], tl, n, True)
    head = write_ncount(norm, tl)
    ct = np.zeros(1 + (1 << (tl - 1)) + 2 * 256 + 8, np.uint32)
    wk = np.zeros(1 << 14, np.uint32)
    r = lib.FSE_buildCTable_wksp(_p(ct), _p(norm), m, tl, _p(wk), wk.nbytes)
    if _err(r):
        raise ValueError("FSE_buildCTable_wksp failed")
    dst = np.zeros(n + n // 128 + 1024, np.uint8)
    c = lib.FSE_compress_usingCTable(_p(dst), len(dst), _p(src), n, _p(ct))
    if _err(c):
        raise ValueError("FSE_compress_usingCTable failed")
    if c == 0 or len(head) + c >= n - 1:
        return 0, b""
    return 2, head + dst[:c].tobytes()


def decompress_block(payload: bytes, n: int, max_log: int = 12) -> bytes:
    """The reference decoder over one FSE block (NCount header + bitstream)."""
    lib = load()
    src = np.frombuffer(bytes(payload), np.uint8).copy()
    dst = np.zeros(max(n, 1), np.uint8)
    wk = np.zeros(1 << 15, np.uint32)
    r = lib.FSE_decompress_wksp_bmi2(_p(dst), n, _p(src), len(src), max_log, _p(wk), wk.nbytes, 0)
    if _err(r):
        raise ValueError(f"reference decoder rejected the block (code {(1 << 64) - r})")
    return dst[:r].tobytes()


def timed_encode(data: bytes, block_size: int = 32 << 10, table_log: int = 11) -> tuple[float, int, list]:
    """Run the reference block compressor over ``data`` in blocks, timing only the C calls.

    Returns ``(seconds, compressed_bytes, blocks)`` where ``blocks`` holds ``(kind, payload)`` per
    block (kind 0 raw, 1 single symbol, 2 FSE) and ``compressed_bytes`` counts raw blocks at their
    length and single-symbol blocks as 1 byte.
    """
    import time  # noqa: PLC0415

    lib = load()
    src_all = np.frombuffer(bytes(data), np.uint8)
    count = np.zeros(256, np.uint32)
    norm = np.zeros(256, np.int16)
    ct = np.zeros(1 + (1 << 11) + 2 * 256 + 8, np.uint32)
    wk = np.zeros(1 << 14, np.uint32)
    dst = np.zeros(block_size + block_size // 128 + 1024, np.uint8)
    msv = ctypes.c_uint(255)
    pm = ctypes.addressof(msv)
    clock = time.perf_counter
    spent = 0.0
    total = 0
    blocks = []
    for i in range(0, len(src_all), block_size):
        src = src_all[i:i + block_size]
        n = len(src)
        ps = _p(src)
        t0 = clock()
        msv.value = 255
        maxc = lib.HIST_count(_p(count), pm, ps, n) if n > 1 else 1
        kind = 0
        if n <= 1:
            kind = 0
        elif maxc == n:
            kind = 1
        elif maxc > 1 and maxc >= (n >> 7):
            m = msv.value
            tl = lib.FSE_optimalTableLog(table_log, n, m)
            lib.FSE_normalizeCount(_p(norm), tl, _p(count), n, m, 1)
            h = lib.FSE_writeNCount(_p(dst), len(dst), _p(norm), m, tl)
            lib.FSE_buildCTable_wksp(_p(ct), _p(norm), m, tl, _p(wk), wk.nbytes)
            c = lib.FSE_compress_usingCTable(dst[h:].ctypes.data, len(dst) - h, ps, n, _p(ct))
            if c and not _err(c) and h + c < n - 1:
                kind = 2
        spent += clock() - t0
        if kind == 2:
            blocks.append((2, dst[:h + c].tobytes()))
            total += h + c
        else:
            blocks.append((kind, b""))
            total += n if kind == 0 else 1
    return spent, total, blocks


def timed_decode(blocks: list, data_len: int, block_size: int = 32 << 10) -> float:
    """Seconds the reference decoder's C calls take over the FSE blocks of ``timed_encode``."""
    import time  # noqa: PLC0415

    lib = load()
    dst = np.zeros(block_size, np.uint8)
    wk = np.zeros(1 << 15, np.uint32)
    spent = 0.0
    for i, (kind, payload) in enumerate(blocks):
        if kind != 2:
            continue
        n = min(block_size, data_len - i * block_size)
        src = np.frombuffer(payload, np.uint8)
        t0 = time.perf_counter()
        r = lib.FSE_decompress_wksp_bmi2(_p(dst), n, _p(src), len(src), 12, _p(wk), wk.nbytes, 0)
        spent += time.perf_counter() - t0
        if _err(r) or r != n:
            raise ValueError("reference decoder failed")
    return spent
