"""Benchmark entry ``fse``: ``python -m pywgpuprims.bench fse [--sizes 2^30]``.

Data: skewed bytes of about 4 bits of entropy per byte (geometric, p = 0.15). Rows: interleaved
and reference encode/decode, GPU time of the kernels only at a steady clock (each batch the call submits replayed
untimed for at least 300 ms and 30 times, then the mean of 5 timed replays; timestamp queries over every batch the
call submits: encode = histogram + checksum, table build and coding, compaction; decode = table
build and decoding, raw/single-symbol copy, output checksums; uploads, read-backs and host work
between batches are not included) and end-to-end wall time (GpuArray in -> bytes out for encode, bytes in -> bytes out
for decode), beside the same-run WGSL copy over the input bytes. With the ``zstd`` package
loadable, the reference FSE (single thread, CPU, 32 KiB blocks, time of its C calls through
ctypes, on a sample of up to 64 MiB) gives ``cpu_rate`` and ``size_vs_ref`` (our compressed bytes
over the reference's, same sample); otherwise those columns are left out. On a CPU adapter sizes
above 4 MiB are cut to 4 MiB.
"""

from __future__ import annotations

import numpy as np

from .._array import asarray
from ..fse import _reference as R
from ..fse._codec import compress, decompress
from ._harness import BenchContext, benchmark, median_wall_ns

REF_SAMPLE = 64 << 20
WARM, REPLAY = 30, 5  # replays of each batch before and inside the timed window
WARM_MS = 300  # and at least this long of untimed replays before each timed batch


def _fse_entry(ctx: BenchContext, n: int) -> list[dict]:
    dev = ctx.dev
    if dev.adapter.info.get("adapter_type") == "CPU":
        n = min(n, 4 << 20)
    host = np.empty(n, np.uint8)
    for i in range(0, n, 1 << 24):
        m = min(n, i + (1 << 24)) - i
        host[i:i + m] = np.minimum(ctx.rng.geometric(0.15, m), 255)
    g = asarray(host)
    reps = ctx.repeats if n <= 1 << 26 else min(ctx.repeats, 3)

    def timed_gpu(fn) -> float:
        # Every batch of the call is replayed: WARM untimed copies bring the core clock up, then
        # the mean of REPLAY timed copies. Timed once, an H100 ran these batches at 345 MHz: the
        # host work between them (read-backs, normalisation) leaves it idle long enough to drop.
        fn()
        with dev.timer() as first:   # learns each batch's duration, for warmup_ns
            fn()
        with dev.timer(replays=REPLAY, warmup=WARM, warmup_ns=int(WARM_MS * 1e6), learned=first.durations) as t:
            fn()
        return float(t.ns)

    copy_ns = ctx.copy_ns(n)
    sample = host[:min(n, REF_SAMPLE)].tobytes()
    ref = R.load() is not None and ctx.cpu
    ref_enc_ns = ref_dec_ns = None
    ref_bytes = None
    if ref:
        enc_s, ref_bytes, blocks = R.timed_encode(sample)
        ref_enc_ns = enc_s * 1e9 * n / len(sample)
        ref_dec_ns = R.timed_decode(blocks, len(sample)) * 1e9 * n / len(sample)
    rows = []
    for mode in ("interleaved", "reference"):
        blob = compress(g, mode=mode)
        if decompress(blob)[:len(sample)] != sample:
            raise AssertionError(f"fse {mode}: round trip failed")
        enc_gpu = timed_gpu(lambda m=mode: compress(g, mode=m))
        dec_gpu = timed_gpu(lambda b=blob: decompress(b))
        enc_wall = median_wall_ns(lambda m=mode: compress(g, mode=m), repeats=reps, warmup=0)
        dec_wall = median_wall_ns(lambda b=blob: decompress(b), repeats=reps, warmup=0)
        extra = {"ratio": n / len(blob)}
        if ref_bytes:
            extra["size_vs_ref"] = len(compress(sample, mode=mode)) / ref_bytes
        for what, gpu_ns, wall_ns, cpu_ns in (("encode", enc_gpu, enc_wall, ref_enc_ns),
                                               ("decode", dec_gpu, dec_wall, ref_dec_ns)):
            r = ctx.row("fse", f"{mode} {what}", n, gpu_ns, bytes_moved=n, baseline_ns=copy_ns, unit="GB/s",
                        cpu_ns=cpu_ns, cpu_name="reference FSE, 1 CPU thread")
            r.update(extra)
            r["wall_ms"] = wall_ns / 1e6
            r["wall_GB/s"] = n / wall_ns
            rows.append(r)
    print(f"fse n={n}: " + "; ".join(
        f"{r['variant']}: gpu {r['rate']:.1f} GB/s, wall {r['wall_GB/s']:.2f} GB/s, ratio {r['ratio']:.3f}"
        + (f", size/ref {r['size_vs_ref']:.4f}, ref cpu {r['cpu_rate']:.3f} GB/s" if "size_vs_ref" in r else "")
        for r in rows) + f"; copy {n / copy_ns:.1f} GB/s", flush=True)
    return rows


_fse_entry.default_sizes = [1 << 30]
benchmark("fse")(_fse_entry)
