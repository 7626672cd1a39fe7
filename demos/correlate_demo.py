"""Filter bank on a 3-D volume: 8 kernels of 7^3 (Gaussian smoothing and derivatives) in one call.

Builds a uint8 volume of random balls, runs ``pp.correlate(volume, kernels, "nearest")``,
checks one kernel against scipy.ndimage, prints the GPU time and TFLOP/s, and writes
``out/correlate_demo.png``: the middle slice of the volume and of each of the 8 responses.
"""

from __future__ import annotations

import struct
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pywgpuprims as pp  # noqa: E402


def balls(n: int, count: int, rng) -> np.ndarray:
    z, y, x = np.mgrid[:n, :n, :n]
    v = np.zeros((n, n, n), np.float32)
    for _ in range(count):
        c = rng.uniform(0, n, 3)
        r = rng.uniform(n / 20, n / 6)
        v[(z - c[0]) ** 2 + (y - c[1]) ** 2 + (x - c[2]) ** 2 < r * r] = rng.uniform(80, 255)
    return (v + rng.normal(0, 12, v.shape)).clip(0, 255).astype(np.uint8)


def filter_bank(size: int = 7, sigma: float = 1.5) -> np.ndarray:
    t = np.arange(size) - (size - 1) / 2
    g = np.exp(-t * t / (2 * sigma * sigma))
    g /= g.sum()
    d = -t / (sigma * sigma) * g
    dd = (t * t / sigma ** 4 - 1 / sigma ** 2) * g
    sep = [(g, g, g), (d, g, g), (g, d, g), (g, g, d), (dd, g, g), (g, dd, g), (g, g, dd), (d, d, g)]
    return np.stack([np.einsum("i,j,k->ijk", a, b, c) for a, b, c in sep]).astype(np.float32)


def write_png(path: Path, img: np.ndarray) -> None:
    h, w = img.shape
    raw = b"".join(b"\0" + img[i].tobytes() for i in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def main() -> int:
    dev = pp.device()
    cpu = dev.info.get("adapter_type") == "CPU"
    n = 48 if cpu else 256
    print(f"adapter: {dev.adapter_summary}; volume {n}^3 uint8, 8 kernels of 7^3, 'same' / nearest")
    rng = np.random.default_rng(7)
    vol = balls(n, 12, rng)
    kernels = filter_bank()
    g = pp.asarray(vol)
    out = pp.correlate(g, kernels, "nearest")  # compile and warm up
    dev.sync()
    t0 = time.perf_counter()
    out = pp.correlate(g, kernels, "nearest", out=out)
    dev.sync()
    wall = time.perf_counter() - t0
    gpu_ns = None
    if dev.has_timestamps:
        with dev.timer() as t:
            pp.correlate(g, kernels, "nearest", out=out)
        gpu_ns = t.ns
    flop = 2.0 * kernels.size * vol.size
    secs = gpu_ns / 1e9 if gpu_ns else wall
    print(f"time {secs * 1e3:.2f} ms ({'GPU timestamps' if gpu_ns else 'wall'}): {flop / secs / 1e12:.3f} TFLOP/s")
    res = out.numpy()
    import scipy.ndimage as ndi  # noqa: PLC0415

    ref = ndi.correlate(vol, kernels[1], mode="nearest", output=np.float64)
    err = float(np.abs(res[1] - ref).max())
    print(f"kernel 1 against scipy.ndimage.correlate: max abs difference {err:.2e}")
    tiles = [vol[n // 2].astype(np.float32)] + [res[k, n // 2] for k in range(len(kernels))]
    tiles = [((t - t.min()) / (np.ptp(t) or 1) * 255).astype(np.uint8) for t in tiles]
    montage = np.concatenate([np.concatenate(tiles[:3], 1), np.concatenate(tiles[3:6], 1),
                              np.concatenate(tiles[6:9], 1)], 0)
    path = Path("out")
    path.mkdir(exist_ok=True)
    write_png(path / "correlate_demo.png", montage)
    print(f"wrote {path / 'correlate_demo.png'}")
    return 0 if err < 1e-2 else 1


if __name__ == "__main__":
    sys.exit(main())
