"""pywgpuprims.codecs: numcodecs and zarr v3 codecs (FSE, RLE) against real stores on disk."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pywgpuprims as pp

numcodecs = pytest.importorskip("numcodecs")
zarr = pytest.importorskip("zarr")
codecs = pytest.importorskip("pywgpuprims.codecs")

DTYPES = [np.uint8, np.int16, np.uint32, np.int32, np.float32, np.float64]


def data(rng, shape, dtype, runs: bool):
    """Random values, or random values in runs (what RLE and FSE compress)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind == "f":
        v = rng.standard_normal(max(1, n // 7 + 1) if runs else n).astype(dtype)
    else:
        info = np.iinfo(dtype)
        v = rng.integers(info.min, info.max, max(1, n // 7 + 1) if runs else n, dtype=dtype, endpoint=True)
    if runs:
        v = np.repeat(v[rng.integers(0, min(v.size, 5), v.size)], rng.integers(1, 15, v.size))
        v = np.resize(v, n)
    return v.reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("codec", ["fse", "rle"])
def test_numcodecs_round_trip(rng, dtype, codec):
    c = numcodecs.get_codec({"id": f"pywgpuprims.{codec}"})
    assert c.get_config()["id"] == f"pywgpuprims.{codec}"
    for runs in (True, False):
        x = data(rng, (int(rng.integers(1, 3000)),), dtype, runs)
        blob = c.encode(x)
        assert isinstance(blob, bytes)
        np.testing.assert_array_equal(np.frombuffer(bytes(c.decode(blob)), dtype), x)
        out = np.full(x.shape, 7, dtype)
        c.decode(blob, out=out)
        np.testing.assert_array_equal(out, x)
        with pytest.raises(pp.CorruptDataError, match="expected"):
            c.decode(blob, out=np.empty(x.size + 1, dtype))  # size capped by the chunk's
    assert numcodecs.get_codec(c.get_config()).get_config() == c.get_config()


def test_rle_compresses_runs(rng):
    x = np.repeat(rng.integers(0, 9, 50).astype(np.int32), 100)
    assert len(codecs.RLE().encode(x)) < x.nbytes // 10


def test_empty_chunks():
    for c in (codecs.FSE(), codecs.RLE()):
        assert np.frombuffer(bytes(c.decode(c.encode(np.empty(0, np.float32)))), np.float32).size == 0


@pytest.mark.parametrize("codec", ["fse", "rle"])
def test_corrupt_input_raises(rng, codec):
    c = numcodecs.get_codec({"id": f"pywgpuprims.{codec}"})
    x = data(rng, (2000,), np.int32, True)
    blob = c.encode(x)
    bad = [blob[:n] for n in (0, 5, 27, len(blob) // 2, len(blob) - 1)] + [blob + b"\0\0\0\0"]
    for _ in range(12):
        b = bytearray(blob)
        i = int(rng.integers(0, len(b)))
        b[i] ^= 1 << int(rng.integers(0, 8))
        bad.append(bytes(b))
    bad.append(b"XXXX" + blob[4:])
    for i, b in enumerate(bad):
        if i < 6 or i == len(bad) - 1:  # truncated, trailing bytes, bad magic
            with pytest.raises(pp.CorruptDataError):
                c.decode(b, out=np.empty_like(x))
            continue
        # a flipped bit raises, or (FSE: a bit the format ignores) decodes to the original: never a wrong answer
        try:
            out = c.decode(b, out=np.empty_like(x))
        except pp.CorruptDataError:
            continue
        assert codec == "fse"
        np.testing.assert_array_equal(out, x)


def test_rle_forged_size_is_refused_before_allocating(rng):
    big = codecs.rle_pack(np.zeros(1 << 20, np.uint8))  # a valid container of 1 MiB
    with pytest.raises(pp.CorruptDataError, match="more than"):
        codecs.rle_unpack(big, max_items=1000)
    # a forged header: elements 2**40 with a matching checksum
    import struct
    import zlib
    head = bytearray(big[:24])
    struct.pack_into("<Q", head, 8, 1 << 40)
    body = big[28:]
    forged = bytes(head) + struct.pack("<I", zlib.crc32(body, zlib.crc32(bytes(head)))) + body
    with pytest.raises(pp.CorruptDataError, match="add up"):
        codecs.rle_unpack(forged)
    with pytest.raises(pp.CorruptDataError, match="more than"):
        codecs.rle_unpack(forged, max_items=1 << 20)


# ----------------------------------------------------------------------------- zarr stores on disk
def _make(path, shape, chunks, dtype, which, zarr_format=3):
    if zarr_format == 2:
        comp = codecs.FSE() if which == "fse" else codecs.RLE()
        return zarr.create_array(zarr.storage.LocalStore(path), shape=shape, chunks=chunks, dtype=dtype,
                                 compressors=comp, zarr_format=2, fill_value=0)
    kw = {"fse": {"compressors": [codecs.FSECodec()]},
          "rle": {"serializer": codecs.RLECodec(), "compressors": None},
          "rle+fse": {"serializer": codecs.RLECodec(), "compressors": [codecs.FSECodec(mode="reference")]}}[which]
    return zarr.create_array(zarr.storage.LocalStore(path), shape=shape, chunks=chunks, dtype=dtype, fill_value=0,
                             **kw)


@pytest.mark.parametrize("which", ["fse", "rle", "rle+fse"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32, np.float64])
def test_zarr_v3_store_round_trip(tmp_path, rng, which, dtype):
    shape = (int(rng.integers(10, 70)), int(rng.integers(10, 70)))
    chunks = (int(rng.integers(3, 30)), int(rng.integers(3, 30)))  # partial edge chunks
    x = data(rng, shape, dtype, bool(rng.integers(0, 2)))
    z = _make(tmp_path / "a.zarr", shape, chunks, dtype, which)
    z[:] = x
    np.testing.assert_array_equal(zarr.open_array(zarr.storage.LocalStore(tmp_path / "a.zarr"))[:], x)
    np.testing.assert_array_equal(z[3:9, 1:], x[3:9, 1:])
    meta = (tmp_path / "a.zarr" / "zarr.json").read_text()
    assert all(f"pywgpuprims.{w}" in meta for w in which.split("+"))
    assert any(p.is_file() for p in (tmp_path / "a.zarr" / "c").rglob("*"))  # chunks really on disk


@pytest.mark.parametrize("which", ["fse", "rle"])
def test_zarr_v2_store_with_numcodecs(tmp_path, rng, which):
    x = data(rng, (37, 41), np.int32, True)
    z = _make(tmp_path / "b.zarr", x.shape, (10, 16), np.int32, which, zarr_format=2)
    z[:] = x
    np.testing.assert_array_equal(zarr.open_array(zarr.storage.LocalStore(tmp_path / "b.zarr"))[:], x)


def test_store_read_by_a_fresh_process(tmp_path, rng):
    x = data(rng, (50, 33), np.float32, True)
    y = data(rng, (77,), np.uint32, True)
    _make(tmp_path / "f.zarr", x.shape, (16, 16), np.float32, "fse")[:] = x
    _make(tmp_path / "r.zarr", y.shape, (20,), np.uint32, "rle")[:] = y
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    code = f"""
import importlib.metadata as m, numpy as np, zarr
if "pywgpuprims.fse" not in m.entry_points(group="zarr.codecs").names:
    import pywgpuprims.codecs  # entry points not installed (an older editable install): register by import
p = {str(tmp_path)!r}
assert (zarr.open_array(p + "/f.zarr")[:] == np.load(p + "/x.npy")).all()
assert (zarr.open_array(p + "/r.zarr")[:] == np.load(p + "/y.npy")).all()
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok", out.stderr[-3000:]


@pytest.mark.parametrize("which", ["fse", "rle"])
def test_zarr_corrupt_chunks_raise(tmp_path, rng, which):
    x = data(rng, (40, 40), np.int32, True)
    path = tmp_path / "c.zarr"
    _make(path, x.shape, (16, 16), np.int32, which)[:] = x
    files = sorted(p for p in (path / "c").rglob("*") if p.is_file())
    victim = files[0]
    good = victim.read_bytes()
    # a bit flip, a truncation, and a valid container of a larger chunk (a forged size)
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x10
    big = data(rng, (64, 64), np.int32, True)  # 16 KiB: past FSECodec's cap for a 1 KiB chunk (5 x + 4 KiB)
    larger = codecs.FSE().encode(big) if which == "fse" else codecs.rle_pack(big)
    for bad in (bytes(flipped), good[: len(good) // 2], larger):
        victim.write_bytes(bad)
        z = zarr.open_array(zarr.storage.LocalStore(path))
        with pytest.raises(pp.CorruptDataError):
            z[:]
    victim.write_bytes(good)
    np.testing.assert_array_equal(zarr.open_array(zarr.storage.LocalStore(path))[:], x)


def test_entry_points_declared():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    eps = meta["project"]["entry-points"]
    for group in ("numcodecs.codecs", "zarr.codecs"):
        assert set(eps[group]) == {"pywgpuprims.fse", "pywgpuprims.rle"}
        for target in eps[group].values():
            mod, _, name = target.partition(":")
            assert mod == "pywgpuprims.codecs" and hasattr(codecs, name)


def test_scale_benchmark_zarr_part_runs(tmp_path):
    """python -m pywgpuprims.bench.scale on a tiny size (zarr part; the dask part needs clusters)."""
    import json

    from pywgpuprims.bench import scale

    js = tmp_path / "scale.json"
    assert scale.main(["--skip-dask", "--zarr-gib", "0.0005", "--zarr-chunk-mib", "0.125", "--repeats", "1",
                       "--zarr-dir", str(tmp_path), "--json", str(js)]) == 0
    rows = json.loads(js.read_text())["zarr"]
    assert len(rows) == 7 and all(r["check"] == "ok" and r["ratio"] > 1 for r in rows)


def test_zarr_v3_fse_block_size_is_stored(tmp_path, rng):
    """block_size reaches fse.compress (chunks of several blocks), is written to the metadata and
    read back from it; a size the mode does not take is refused when the codec is made."""
    x = data(rng, (300, 70), np.int32, True)
    z = zarr.create_array(zarr.storage.LocalStore(tmp_path / "b.zarr"), shape=x.shape, chunks=(200, 70),
                          dtype=x.dtype, fill_value=0, compressors=[codecs.FSECodec(block_size=4096)])
    z[:] = x
    back = zarr.open_array(zarr.storage.LocalStore(tmp_path / "b.zarr"))
    assert back.metadata.codecs[-1].block_size == 4096
    np.testing.assert_array_equal(back[:], x)
    chunk = next(p for p in (tmp_path / "b.zarr" / "c").rglob("*") if p.is_file()).read_bytes()
    hdr, _ = pp.fse.parse(chunk)
    assert hdr["block_size"] == 4096 and hdr["blocks"] > 1
    for bad in (100, 1 << 30):
        with pytest.raises(pp.InputError, match="codecs.fse"):
            codecs.FSECodec(block_size=bad)
    assert codecs.FSECodec().to_dict() == {"name": "pywgpuprims.fse",
                                           "configuration": {"mode": "interleaved", "table_log": 11}}


def _runs_bytes(rng, n: int) -> np.ndarray:
    v = rng.geometric(0.1, n // 5 + 2).astype(np.uint8)
    return np.resize(np.repeat(v, rng.integers(1, 9, v.size)), n)


@pytest.mark.parametrize("mode", ["interleaved", "reference"])
def test_fse_calls_in_flight_from_threads(rng, mode):
    """numcodecs calls from several threads meet in the codecs' thread, several in flight on the GPU
    (their steps interleaved): every container is byte-identical to fse.compress's, every decode
    exact, and a corrupt container raises for its own call only, the others unharmed. Sizes around
    the block size and containers of several groups (a small binding limit)."""
    from concurrent.futures import ThreadPoolExecutor

    from pywgpuprims import fse

    bs = 4096
    c = codecs.FSE(mode=mode, block_size=bs)
    sizes = [bs - 1, bs, bs + 1, 3 * bs + 5, 7 * bs, 9 * bs + 4000, 1, 64]
    xs = [_runs_bytes(rng, int(s)) for s in sizes] + [rng.integers(0, 256, 2 * bs + 3, dtype=np.uint8)]
    want = [fse.compress(x, mode=mode, block_size=bs) for x in xs]
    bad = bytearray(want[5])
    bad[-40:] = bytes(v ^ 0x5A for v in bad[-40:])
    dev = pp.device()
    seen: list = []
    step = codecs._Interleaver._step

    def traced(steps, fut):
        seen.append(id(fut))
        return step(steps, fut)

    def job(i: int):
        if i == len(xs):
            with pytest.raises(pp.CorruptDataError, match="block"):
                c.decode(bytes(bad))
            return None
        blob = c.encode(xs[i])
        return blob, bytes(c.decode(blob)), bytes(c.decode(want[i], out=np.empty(xs[i].size, np.uint8)))

    with dev.using(max_binding=3 * 4 * (fse._codec._stage_words(mode, bs, 256, 11) + 64)), \
            pytest.MonkeyPatch.context() as mp:
        mp.setattr(codecs._Interleaver, "_step", staticmethod(traced))
        with ThreadPoolExecutor(6) as pool:
            res = list(pool.map(job, [*range(len(xs)), len(xs)] * 2))
    assert len(set(seen)) > 1
    # interleaved: some call took a step between two steps of another
    first, last = {}, {}
    for k, f in enumerate(seen):
        first.setdefault(f, k)
        last[f] = k
    assert any(first[f] < first[g] < last[f] for f in first for g in first if f != g)
    for i, r in enumerate(res):
        if r is None:
            continue
        x = xs[i % (len(xs) + 1)]
        assert r[0] == want[i % (len(xs) + 1)]
        assert r[1] == x.tobytes() and r[2] == x.tobytes()


def test_zarr_v3_fse_chunks_are_fse_containers(tmp_path, rng):
    """zarr writes its chunks concurrently through the codecs' thread: each chunk file is exactly
    fse.compress of that chunk's bytes (partial last chunk included), and reads back exact."""
    from pywgpuprims import fse

    x = _runs_bytes(rng, 23 * 3000 + 1234).view(np.uint8)
    z = zarr.create_array(zarr.storage.LocalStore(tmp_path / "f.zarr"), shape=x.shape, chunks=(3000,),
                          dtype=np.uint8, fill_value=0, compressors=[codecs.FSECodec(block_size=1024)])
    z[:] = x
    for k in range(24):
        blob = (tmp_path / "f.zarr" / "c" / str(k)).read_bytes()
        chunk = np.zeros(3000, np.uint8)  # zarr pads the last chunk with the fill value
        part = x[k * 3000:(k + 1) * 3000]
        chunk[:part.size] = part
        assert blob == fse.compress(chunk, mode="interleaved", block_size=1024), k
    np.testing.assert_array_equal(zarr.open_array(zarr.storage.LocalStore(tmp_path / "f.zarr"))[:], x)
