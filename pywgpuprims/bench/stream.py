"""Out-of-core benchmark: ``python -m pywgpuprims.bench --stream [--size 6GiB] [--chunks 64MiB ...] [--fse MODE]``.

Scans an ``np.memmap`` larger than the device's largest storage binding into another memmap
with :func:`pywgpuprims.stream.scan` and reports the end-to-end rate (input bytes per second of
wall time) beside, in the same run, the host's memcpy bandwidth (``np.copyto`` between two
arrays in memory) and a memmap-to-memmap ``np.copyto`` over the same bytes (the floor a stream
cannot beat on this host). Issue 41's target: >= 70% of host memcpy bandwidth.

The input is written first (small random integers, or uniform floats), in the folder ``--dir``;
the files are removed at the end. Each stream is run once to warm up (kernels, pools, the
output file's pages) and then ``--repeats`` times (the best and the median reported), and every
result is checked: uint32 exactly (the last element against the input's sum, and random windows
against numpy's cumsum), float32 to rounding. ``stream.reduce`` of the same memmap is timed too,
and with ``--fse`` :func:`pywgpuprims.stream.fse_compress` of its bytes into a file and
:func:`~pywgpuprims.stream.fse_decompress` of that file into the output memmap (every byte checked;
rates in input bytes per second).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence

import numpy as np

from .. import stream
from .._device import device
from .._memory import parse_bytes

PIECE = 64 << 20  # bytes the input is written and checked in


def _fill(path: str, n: int, dtype: np.dtype, rng: np.random.Generator) -> np.memmap:
    x = np.memmap(path, mode="w+", dtype=dtype, shape=(n,))
    per = PIECE // dtype.itemsize
    for s in range(0, n, per):
        c = min(per, n - s)
        x[s:s + c] = rng.integers(0, 8, c, dtype=np.uint32) if dtype.kind == "u" else rng.random(c, np.float32)
    x.flush()
    return x


def _check(x: np.ndarray, out: np.ndarray, rng: np.random.Generator) -> None:
    """The last element and random windows against numpy (uint32 exact, float32 to rounding)."""
    n = x.size
    if x.dtype.kind == "u":
        total = np.uint32(0)
        for s in range(0, n, PIECE // 4):
            total = np.uint32((int(total) + int(x[s:s + PIECE // 4].sum(dtype=np.uint64))) % (1 << 32))
        assert out[-1] == total, f"last element {out[-1]}, the input's sum {total}"
    for s in rng.integers(0, max(1, n - 4096), 16):
        s = int(s)
        win = x[s + 1:s + 4096]
        if x.dtype.kind == "u":
            want = (np.cumsum(win, dtype=np.uint64) + int(out[s])) % (1 << 32)
            assert np.array_equal(out[s + 1:s + 4096], want), f"window at {s} differs"
        else:
            want = np.cumsum(win, dtype=np.float64) + float(out[s])
            err = np.abs(out[s + 1:s + 4096] - want).max()
            assert err <= 1e-6 * (s + 4096), f"window at {s}: error {err}"


def _timed(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def _memcpy_s(nbytes: int, repeats: int) -> float:
    """Best seconds of one ``np.copyto`` of ``nbytes`` between two arrays in memory (pages touched)."""
    src = np.ones(nbytes, np.uint8)
    dst = np.zeros(nbytes, np.uint8)
    np.copyto(dst, src)
    return min(_timed(lambda: np.copyto(dst, src), max(3, repeats)))


def run(size: int, dtype: str, chunks: Sequence[int | None], repeats: int, folder: str,
        fse_mode: str | None = None) -> list[dict]:
    dev = device()
    dt = np.dtype(dtype)
    n = size // dt.itemsize
    nbytes = n * dt.itemsize
    rng = np.random.default_rng(1)
    rows: list[dict] = []

    def row(name: str, times: list[float], bytes_moved: int, **extra) -> dict:
        best, med = min(times), statistics.median(times)
        r = {"what": name, "GiB": bytes_moved / 2**30, "best_s": best, "median_s": med,
             "GB/s": bytes_moved / best / 1e9, "median GB/s": bytes_moved / med / 1e9, **extra}
        rows.append(r)
        print(_fmt([r], header=len(rows) == 1), flush=True)
        return r

    fd_in, path_in = tempfile.mkstemp(prefix="pp-stream-in-", suffix=".bin", dir=folder)
    fd_out, path_out = tempfile.mkstemp(prefix="pp-stream-out-", suffix=".bin", dir=folder)
    fd_c, path_c = tempfile.mkstemp(prefix="pp-stream-fse-", suffix=".fse", dir=folder)
    for fd in (fd_in, fd_out, fd_c):
        os.close(fd)
    try:
        t0 = time.perf_counter()
        x = _fill(path_in, n, dt, rng)
        out = np.memmap(path_out, mode="w+", dtype=dt, shape=(n,))
        print(f"input: {nbytes / 2**30:.2f} GiB of {dt} in {path_in} (written in {time.perf_counter() - t0:.1f} s); "
              f"device binding limit {dev.max_binding / 2**30:.2f} GiB, buffer limit {dev.max_buffer / 2**30:.2f} GiB",
              flush=True)
        mem_bytes = min(nbytes, 1 << 30)
        memcpy_gbs = mem_bytes / _memcpy_s(mem_bytes, repeats) / 1e9
        row("host memcpy (np.copyto, in memory)", [mem_bytes / memcpy_gbs / 1e9], mem_bytes)
        mm = row("memmap -> memmap np.copyto", _timed(lambda: np.copyto(out, x), repeats), nbytes)
        for chunk in chunks:
            elems = None if chunk is None else max(1, chunk // dt.itemsize)
            label = "default" if chunk is None else f"{chunk / 2**20:.0f} MiB"
            stream.scan(x, out=out, chunk=elems)  # warm-up: kernels, pool, the output's pages
            times = _timed(lambda e=elems: stream.scan(x, out=out, chunk=e), repeats)
            _check(x, out, rng)
            row(f"stream.scan memmap -> memmap, chunk {label}", times, nbytes,
                **{"x memcpy": nbytes / min(times) / 1e9 / memcpy_gbs,
                   "x memmap copy": nbytes / min(times) / 1e9 / mm["GB/s"]})
            stream.reduce(x, chunk=elems, dtype=x.dtype)
            times = _timed(lambda e=elems: stream.reduce(x, chunk=e, dtype=x.dtype), repeats)
            row(f"stream.reduce memmap, chunk {label}", times, nbytes,
                **{"x memcpy": nbytes / min(times) / 1e9 / memcpy_gbs})
            if fse_mode is None:
                continue
            xb, ob = x.view(np.uint8), out.view(np.uint8)
            stream.fse_compress(xb, path_c, chunk=chunk, mode=fse_mode)
            times = _timed(lambda c=chunk, a=xb: stream.fse_compress(a, path_c, chunk=c, mode=fse_mode), repeats)
            row(f"stream.fse_compress {fse_mode[:3]} -> file, {label}", times, nbytes,
                **{"x memcpy": nbytes / min(times) / 1e9 / memcpy_gbs, "ratio": nbytes / os.path.getsize(path_c)})
            blob = np.memmap(path_c, mode="r", dtype=np.uint8)
            times = _timed(lambda c=chunk, b=blob, o=ob: stream.fse_decompress(b, out=o, chunk=c), repeats)
            del blob
            for s in range(0, nbytes, PIECE):  # every byte back
                assert np.array_equal(ob[s:s + PIECE], xb[s:s + PIECE]), f"fse round trip differs at {s}"
            row(f"stream.fse_decompress {fse_mode[:3]} -> memmap, {label}", times, nbytes,
                **{"x memcpy": nbytes / min(times) / 1e9 / memcpy_gbs})
    finally:
        for p in (path_in, path_out, path_c):
            if os.path.exists(p):
                os.remove(p)
    return rows


def _fmt(rows: list[dict], header: bool = True) -> str:
    cols = ["what", "GiB", "best_s", "median_s", "GB/s", "median GB/s", "x memcpy", "x memmap copy"]
    lines = [f"{'what':<48} {'GiB':>6} {'best s':>8} {'med s':>8} {'GB/s':>7} {'med GB/s':>8} {'x memcpy':>8} "
             f"{'x mm copy':>9}"] if header else []
    for r in rows:
        cells = [f"{r['what']:<48}"]
        for c, w in zip(cols[1:], (6, 8, 8, 7, 8, 8, 9), strict=True):
            v = r.get(c)
            cells.append(f"{v:>{w}.3g}" if v is not None else " " * w)
        lines.append(" ".join(cells))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pywgpuprims.bench --stream", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default=None,
                    help="input bytes, e.g. 6GiB (default: twice the device's largest storage binding, at least 1 GiB)")
    ap.add_argument("--dtype", default="uint32", choices=["uint32", "float32"])
    ap.add_argument("--chunks", nargs="+", default=None,
                    help="chunk sizes in bytes to compare, e.g. 64MiB 256MiB (default: the library's)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per row, after one warm-up")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="folder for the two memmap files")
    ap.add_argument("--json", help="write the rows as JSON to this file")
    ap.add_argument("--fse", choices=["interleaved", "reference"], default=None,
                    help="also stream.fse_compress the input memmap into a file and fse_decompress it back "
                         "(checked), in this mode")
    args = ap.parse_args(argv)
    dev = device()
    size = parse_bytes(args.size) if args.size else max(2 * dev.max_binding, 1 << 30)
    chunks = [parse_bytes(c) for c in args.chunks] if args.chunks else [None]
    print(f"device: {dev.adapter_summary}", flush=True)
    rows = run(size, args.dtype, chunks, max(1, args.repeats), args.dir, args.fse)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev.adapter_summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
