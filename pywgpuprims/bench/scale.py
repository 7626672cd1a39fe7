"""Scale-out benchmark: Dask cumsum on 1 and k GPUs, and zarr codecs, beside the CPU.

``python -m pywgpuprims.bench.scale [--gib 4] [--gpus K] [--zarr-gib 1] [--json F]``

(a) Dask: a cumsum of a ``--gib`` GiB float32 array (chunks of ``--chunk-mib`` MiB, already in the
workers' memory) on a :func:`pywgpuprims.dask.gpu_cluster` of 1 worker, then of ``--gpus``
workers (one per GPU). For each cluster:

- ``gpu-resident``: every worker holds its share of the chunks as GpuArrays and scans them all
  (:func:`pywgpuprims.scan` per chunk, one sync); all workers at once, wall time of the slowest.
  This is the GPU part the scaling target is about.
- ``dask e2e``: ``pywgpuprims.dask.cumsum(x).persist()`` until the result is in the workers'
  memory: uploads, kernels, downloads and Dask's carries, as a user runs it.
- ``dask numpy``: ``dask.array.cumsum(x).persist()`` on the same cluster (numpy per chunk).

Both float32 results are checked against a float64 cumsum (largest error relative to ``max |y|``).

(b) zarr: ``--zarr-gib`` GiB of int32 values with runs (a typical compressible array) written to
and read back from a local store (``--zarr-dir``, default a temporary folder) with
:class:`pywgpuprims.codecs.FSECodec` (interleaved and reference modes; interleaved with 256 KiB
blocks too: more workgroups per 16 MiB chunk) and with zarr's ZstdCodec
(numcodecs' Zstd on the CPU, levels 1 and 3), same data, same run; GB/s of the uncompressed
bytes, compression ratio, read-back checked. Then the codecs alone (``codec alone`` rows: the
numcodecs FSE and Zstd-1 encoding and decoding the same chunks from ``async.concurrency``
threads, no store), which tells the codec's cost from zarr's.

Nothing is imported by ``import pywgpuprims``; needs the ``dask`` and ``zarr`` extras.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time

import numpy as np


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- (a) dask
def _resident_worker(n: int, chunk: int, repeats: int, seed: int) -> dict:
    """On a worker: ``n`` float32 elements as GpuArray chunks, scanned ``repeats`` times."""
    import pywgpuprims as pp

    dev = pp.device()
    rng = np.random.default_rng(seed)
    srcs, dsts = [], []
    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        srcs.append(pp.asarray(rng.random(m, dtype=np.float32)))
        dsts.append(pp.GpuArray.empty((m,), np.float32))
    for g, d in zip(srcs, dsts, strict=True):  # warm-up: kernels compiled, plans built
        pp.scan(g, out=d)
    dev.sync()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for g, d in zip(srcs, dsts, strict=True):
            pp.scan(g, out=d)
        dev.sync()
        best = min(best, time.perf_counter() - t)
    return {"s": best, "n": n, "device": dev.adapter_summary}


def _dask_rows(k: int, n: int, chunk: int, repeats: int, threads: int) -> list[dict]:
    import dask.array as da
    from distributed import Client, wait

    from .. import dask as ppd

    rows = []
    cluster = ppd.gpu_cluster(k, threads_per_worker=threads, memory_limit=0, silence_logs=logging.WARNING)
    with cluster, Client(cluster) as client:
        client.wait_for_workers(k)
        workers = sorted(client.scheduler_info()["workers"])
        # GPU-resident: each worker scans its share of the chunks, all at once
        nchunks = -(-n // chunk)
        share = [(nchunks // k + (i < nchunks % k)) * chunk for i in range(k)]
        share[-1] -= nchunks * chunk - n
        futs = [client.submit(_resident_worker, share[i], chunk, repeats, i, workers=[w], pure=False)
                for i, w in enumerate(workers)]
        res = client.gather(futs)
        s = max(r["s"] for r in res)
        rows.append({"part": "gpu-resident", "gpus": k, "s": s, "Gel/s": n / s / 1e9, "GB/s": 8 * n / s / 1e9,
                     "devices": sorted({r["device"] for r in res})})
        # end to end, beside numpy: x already in the workers' memory
        x = da.random.default_rng(0).random(n, dtype=np.float32, chunks=chunk).persist()
        wait(x)
        for part, fn in (("dask e2e (ours)", ppd.cumsum), ("dask numpy", da.cumsum)):
            best = float("inf")
            for _ in range(repeats):
                t = time.perf_counter()
                y = fn(x).persist()
                wait(y)
                best = min(best, time.perf_counter() - t)
                # Dask names results by their graph: a repeat would find this one still held and
                # take no time, so it is released first.
                client.cancel(y)
                del y
                time.sleep(0.5)
            rows.append({"part": part, "gpus": k, "s": best, "Gel/s": n / best / 1e9, "GB/s": 8 * n / best / 1e9})
        # Both float32 cumsums against a float64 one: numpy's sequential float32 sum drifts by much more
        # than a tree-shaped scan's, so the check is each one's error, not their difference.
        ref = da.cumsum(x.astype(np.float64)).persist()
        scale = float(abs(ref).max().compute())
        for row, fn in ((rows[-2], ppd.cumsum), (rows[-1], da.cumsum)):
            row["rel_err_vs_float64"] = float(abs(fn(x).astype(np.float64) - ref).max().compute()) / scale
        errs = rows[-2]["rel_err_vs_float64"], rows[-1]["rel_err_vs_float64"]
        rows[-2]["check"] = "ok" if errs[0] <= max(1e-4, 2 * errs[1]) else "WRONG"
    return rows


# ----------------------------------------------------------------------------- (b) zarr
def _zarr_rows(nbytes: int, chunk_bytes: int, path: str, repeats: int) -> list[dict]:
    import zarr
    from zarr.codecs import ZstdCodec

    from ..codecs import FSECodec

    n = nbytes // 4
    rng = np.random.default_rng(1)
    runs = rng.integers(1, 12, n // 4 + 1)
    vals = (rng.geometric(0.05, runs.size) % 1000).astype(np.int32)
    data = np.resize(np.repeat(vals, runs), n)
    chunks = (max(1, chunk_bytes // 4),)
    rows = []
    for label, comp in (("fse interleaved (GPU)", FSECodec()), ("fse reference (GPU)", FSECodec(mode="reference")),
                        ("fse interleaved, 256 KiB blocks (GPU)", FSECodec(block_size=256 << 10)),
                        ("zstd level 1 (CPU, numcodecs)", ZstdCodec(level=1)),
                        ("zstd level 3 (CPU, numcodecs)", ZstdCodec(level=3))):
        w = r = float("inf")
        for _ in range(repeats):
            store_path = os.path.join(path, "bench.zarr")
            shutil.rmtree(store_path, ignore_errors=True)
            z = zarr.create_array(zarr.storage.LocalStore(store_path), shape=data.shape, chunks=chunks,
                                  dtype=data.dtype, compressors=[comp], fill_value=0)
            t = time.perf_counter()
            z[:] = data
            w = min(w, time.perf_counter() - t)
            t = time.perf_counter()
            back = zarr.open_array(zarr.storage.LocalStore(store_path))[:]
            r = min(r, time.perf_counter() - t)
            ok = bool(np.array_equal(back, data))
            del back
        stored = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(store_path) for f in fs)
        rows.append({"codec": label, "write_GB/s": nbytes / w / 1e9, "read_GB/s": nbytes / r / 1e9,
                     "ratio": nbytes / stored, "check": "ok" if ok else "WRONG"})
        shutil.rmtree(store_path, ignore_errors=True)
    rows += _codec_rows(data, chunks[0], repeats)
    return rows


def _codec_rows(data: np.ndarray, chunk: int, repeats: int) -> list[dict]:
    """The codecs alone (numcodecs API, no store): every chunk encoded, then decoded, by as many
    threads as zarr keeps chunks in flight (``async.concurrency``): what zarr's rows cost beyond
    the codec."""
    from concurrent.futures import ThreadPoolExecutor

    import zarr
    from numcodecs import Zstd

    from ..codecs import FSE

    parts = [data[i:i + chunk] for i in range(0, data.size, chunk)]
    threads = int(zarr.config.get("async.concurrency"))
    rows = []
    with ThreadPoolExecutor(threads) as pool:
        for label, codec in ((f"fse interleaved, codec alone ({threads} threads)", FSE()),
                             (f"zstd level 1, codec alone ({threads} threads)", Zstd(level=1))):
            w = r = float("inf")
            for _ in range(repeats):
                t = time.perf_counter()
                blobs = list(pool.map(codec.encode, parts))
                w = min(w, time.perf_counter() - t)
                t = time.perf_counter()
                back = list(pool.map(codec.decode, blobs))
                r = min(r, time.perf_counter() - t)
            ok = all(np.array_equal(np.frombuffer(bytes(b), data.dtype), p) for b, p in zip(back, parts, strict=True))
            rows.append({"codec": label, "write_GB/s": data.nbytes / w / 1e9, "read_GB/s": data.nbytes / r / 1e9,
                         "ratio": data.nbytes / sum(len(b) for b in blobs), "check": "ok" if ok else "WRONG"})
            del blobs, back
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pywgpuprims.bench.scale", description=__doc__.split("\n\n")[0])
    p.add_argument("--gib", type=float, default=4.0, help="size of the dask cumsum's float32 array (GiB)")
    p.add_argument("--gpus", type=int, default=None, help="GPUs (workers) of the scaled run; default: all")
    p.add_argument("--chunk-mib", type=float, default=256.0, help="dask chunk size (MiB)")
    p.add_argument("--threads", type=int, default=4, help="threads per worker (host work; GPU calls take turns)")
    p.add_argument("--zarr-gib", type=float, default=1.0, help="size of the zarr benchmark's array (GiB)")
    p.add_argument("--zarr-chunk-mib", type=float, default=16.0, help="zarr chunk size (MiB)")
    p.add_argument("--zarr-dir", default=None, help="folder for the zarr store (default: a temporary one)")
    p.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    p.add_argument("--skip-dask", action="store_true")
    p.add_argument("--skip-zarr", action="store_true")
    p.add_argument("--json", default=None, help="write the rows to this file")
    a = p.parse_args(argv)

    out: dict = {"args": vars(a)}
    if not a.skip_dask:
        from .._device import _ranked_adapters

        k = a.gpus or len(_ranked_adapters())
        chunk = max(1, int(a.chunk_mib * 2**20) // 4)
        n = int(a.gib * 2**30) // 4
        rows = []
        for g in sorted({1, k}):
            _log(f"dask cumsum of {n} float32 on {g} GPU(s) ...")
            rows += _dask_rows(g, n, chunk, a.repeats, a.threads)
        one = next(r["s"] for r in rows if r["part"] == "gpu-resident" and r["gpus"] == 1)
        for r in rows:
            if r["part"] == "gpu-resident":
                r["speedup_vs_1"] = one / r["s"]
        out["dask"] = rows
        print(f"\nDask cumsum, {a.gib:g} GiB float32, chunks of {a.chunk_mib:g} MiB")
        for r in rows:
            extra = "".join(f"  {key}={r[key]:.3g}" if isinstance(r[key], float) else f"  {key}={r[key]}"
                            for key in ("speedup_vs_1", "rel_err_vs_float64", "check", "devices") if key in r)
            print(f"  {r['part']:<18} gpus={r['gpus']}  {r['s'] * 1e3:9.1f} ms  {r['Gel/s']:7.2f} G el/s{extra}")
    if not a.skip_zarr:
        tmp = a.zarr_dir or tempfile.mkdtemp(prefix="pywgpuprims-zarr-")
        try:
            _log(f"zarr write+read of {a.zarr_gib:g} GiB in {tmp} ...")
            rows = _zarr_rows(int(a.zarr_gib * 2**30), int(a.zarr_chunk_mib * 2**20), tmp, a.repeats)
        finally:
            if a.zarr_dir is None:
                shutil.rmtree(tmp, ignore_errors=True)
        out["zarr"] = rows
        print(f"\nzarr store, {a.zarr_gib:g} GiB int32 with runs, chunks of {a.zarr_chunk_mib:g} MiB "
              "(GB/s of the raw bytes)")
        for r in rows:
            print(f"  {r['codec']:<42} write {r['write_GB/s']:6.2f}  read {r['read_GB/s']:6.2f}  "
                  f"ratio {r['ratio']:5.2f}  {r['check']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    bad = any(r.get("check") == "WRONG" for rows in (out.get("dask", []), out.get("zarr", [])) for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
