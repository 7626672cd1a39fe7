"""Out-of-core primitives (pywgpuprims.stream): numpy arrays and np.memmap streamed through the GPU
chunk by chunk, checked against numpy (and the in-memory calls) at sizes around the chunk
boundaries, into poisoned outputs, with GPU memory bounded by a pool limit a few chunks large and
host memory by tracemalloc."""

import tracemalloc

import numpy as np
import pytest

import pywgpuprims as pp

M = 1000  # elements per chunk in most tests
SIZES = [1, M - 1, M, M + 1, 3 * M - 1, 3 * M, 3 * M + 1, 7 * M + 13]
POISON = {np.dtype(np.uint32): 0xDEADBEEF, np.dtype(np.int32): -0x21524111, np.dtype(np.float32): np.nan,
          np.dtype(np.int64): -0x2152411021524111, np.dtype(np.uint8): 0xAB, np.dtype(np.uint64): 0xDEADBEEFDEADBEEF}


def _rand(rng, n, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _poisoned(shape, dtype):
    return np.full(shape, POISON[np.dtype(dtype)], dtype)


def _numpy_scan(x, op, exclusive, rd):
    """numpy's scan of ``x`` in the result dtype ``rd`` (float sums in float64)."""
    ufunc = {"add": np.add, "min": np.minimum, "max": np.maximum, "xor": np.bitwise_xor,
             "or": np.bitwise_or, "and": np.bitwise_and}[op]
    float_add = rd.kind == "f" and op == "add"
    inc = ufunc.accumulate(x.astype(np.float64 if float_add else rd))
    inc = inc.astype(rd) if not float_add else inc
    if not exclusive:
        return inc
    ident = {"add": 0, "xor": 0, "or": 0, "and": -1,
             "min": np.inf if rd.kind == "f" else np.iinfo(rd).max,
             "max": -np.inf if rd.kind == "f" else np.iinfo(rd).min}[op]
    return np.concatenate([np.array([ident]).astype(inc.dtype), inc[:-1]])


# ----------------------------------------------------------------------------- scan
@pytest.mark.parametrize("dtype", ["uint32", "int32", "float32"])
@pytest.mark.parametrize("n", SIZES)
def test_scan_across_chunks(dtype, n, rng):
    x = _rand(rng, n, dtype) if dtype != "float32" else rng.uniform(-1, 1, n).astype(dtype)
    ops = [("add", False), ("add", True), ("max", False), ("min", True)] + (
        [("xor", False)] if dtype != "float32" else [])
    # numpy's result dtype (np.cumsum's: 64-bit sums of 32-bit integers), chosen by dtype= or by
    # out's dtype; and the input's own (the 32-bit single-pass path)
    for (op, exclusive), how in ((o, h) for o in ops for h in ("default", "out", "own")):
        rd = x.dtype if how == "own" else np.dtype(pp.scan(x[:1], op).dtype)
        out = _poisoned(n, rd)
        got = pp.stream.scan(x, op, exclusive, out=out, dtype=None if how == "out" else rd, chunk=M)
        assert got is out
        if how == "default":
            got = pp.stream.scan(x, op, exclusive, chunk=M)
            assert got.dtype == (np.cumsum(x[:1]).dtype if op == "add" else x.dtype)
        want = _numpy_scan(x, op, exclusive, rd)
        mem = pp.scan(x, op, exclusive, dtype=rd)
        assert got.dtype == rd == mem.dtype
        if dtype == "float32" and op == "add":
            np.testing.assert_allclose(got, want, rtol=0, atol=4 * n * 6e-8 * np.abs(x).sum() / max(n, 1) + 1e-6)
            np.testing.assert_allclose(got, mem, rtol=0, atol=1e-5 * max(1.0, np.abs(want).max()))
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{op} exclusive={exclusive} {how}")
            np.testing.assert_array_equal(got, mem)  # identical to the in-memory call


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "uint64", "float16", "float64"])
def test_scan_reduce_other_dtypes(dtype, rng):
    """Every dtype pp.scan takes, in np.cumsum's / np.sum's result dtype, across chunk boundaries."""
    if dtype == "float64" and "shader-f64" not in pp.device().features:
        pytest.skip("float64 needs shader-f64 (tests/test_dtypes.py checks the error)")
    n = 3 * M + 1
    x = rng.random(n) < 0.5 if dtype == "bool" else (
        rng.uniform(-1, 1, n).astype(dtype) if np.dtype(dtype).kind == "f" else _rand(rng, n, dtype))
    for op in ("add", "max"):
        got = pp.stream.scan(x, op, chunk=M)
        want = np.cumsum(x) if op == "add" else np.maximum.accumulate(x)
        assert got.dtype == want.dtype, op
        r = pp.stream.reduce(x, op, chunk=M)
        rw = np.sum(x) if op == "add" else np.max(x)
        assert r.dtype == rw.dtype, op
        if x.dtype.kind == "f" and op == "add":
            tol = 2e-3 * n if dtype == "float16" else 1e-9 * n
            np.testing.assert_allclose(got, np.cumsum(x, dtype=np.float64), atol=tol)
            assert abs(float(r) - float(np.sum(x, dtype=np.float64))) <= tol
        else:
            np.testing.assert_array_equal(got, want, err_msg=op)
            assert r == rw, op


def test_scan_memmap_in_and_out(tmp_path, rng):
    n = 11 * M + 7
    x = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", dtype=np.int32, shape=(n,))
    x[:] = rng.integers(-1000, 1000, n)
    x.flush()
    src = np.load(tmp_path / "x.npy", mmap_mode="r")
    out = np.memmap(tmp_path / "out.bin", mode="w+", dtype=np.int32, shape=(n,))
    out[:] = POISON[np.dtype(np.int32)]
    got = pp.stream.scan(src, out=out, chunk=M)
    assert got is out
    out.flush()
    np.testing.assert_array_equal(np.fromfile(tmp_path / "out.bin", np.int32), np.cumsum(src, dtype=np.int32))
    # in place: each chunk is read before its result is written
    inplace = np.memmap(tmp_path / "x2.bin", mode="w+", dtype=np.int32, shape=(n,))
    inplace[:] = src
    pp.stream.scan(inplace, out=inplace, chunk=M)
    np.testing.assert_array_equal(inplace, np.cumsum(src, dtype=np.int32))


def test_scan_keeps_shape_and_flattens(rng):
    x = rng.integers(0, 9, (37, 53)).astype(np.uint32)
    got = pp.stream.scan(x, chunk=100)
    assert got.shape == x.shape and got.dtype == np.uint64
    np.testing.assert_array_equal(got.reshape(-1), np.cumsum(x))


def test_scan_gpu_memory_is_bounded_by_the_chunk(rng):
    chunk = 1 << 16  # 256 KiB of uint32: uploads through the queue's own writes
    dev = pp.Device(adapter=pp.device().adapter, memory_limit=16 * 4 * chunk)
    x = rng.integers(0, 100, 40 * chunk).astype(np.uint32)  # 10 MiB: 2.5x the limit
    np.testing.assert_array_equal(pp.stream.scan(x, chunk=chunk, device=dev, dtype=np.uint32),
                                  np.cumsum(x, dtype=np.uint32))
    np.testing.assert_array_equal(pp.stream.scan(x, chunk=chunk, device=dev), np.cumsum(x))  # uint64 chunks
    assert pp.stream.reduce(x, chunk=chunk, device=dev) == x.sum()
    np.testing.assert_array_equal(pp.stream.nonzero(x % 7 == 0, chunk=chunk, device=dev), np.flatnonzero(x % 7 == 0))
    v, c = pp.stream.rle_encode(x // 90, chunk=chunk, device=dev)
    np.testing.assert_array_equal(np.repeat(v, c), x // 90)
    with pytest.raises(pp.DeviceLimitError):
        pp.scan(x, device=dev)  # the in-memory call does not fit: the bound is real


def test_scan_host_memory_is_bounded_by_the_chunk(tmp_path, rng):
    n = 1 << 21  # 8 MiB in, 8 MiB out, both memmaps
    x = np.memmap(tmp_path / "x.bin", mode="w+", dtype=np.float32, shape=(n,))
    x[:] = rng.uniform(0, 1, n)
    out = np.memmap(tmp_path / "y.bin", mode="w+", dtype=np.float32, shape=(n,))
    chunk = 1 << 16
    pp.stream.scan(x, out=out, chunk=chunk)  # warm: kernels, pool
    tracemalloc.start()
    try:
        pp.stream.scan(x, out=out, chunk=chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 4 * chunk, f"host peak {peak} bytes for chunks of {4 * chunk}"
    np.testing.assert_allclose(out[-10:], np.cumsum(x, dtype=np.float64)[-10:], rtol=1e-4)


# ----------------------------------------------------------------------------- reduce
@pytest.mark.parametrize("dtype", ["uint32", "int32", "float32"])
@pytest.mark.parametrize("n", [1, M, M + 1, 5 * M + 3])
def test_reduce_across_chunks(dtype, n, rng):
    x = _rand(rng, n, dtype) if dtype != "float32" else rng.uniform(-1, 1, n).astype(dtype)
    for op, dt in (("add", None), ("add", x.dtype), ("min", None), ("max", None)):
        got = pp.stream.reduce(x, op, dt, chunk=M)
        mem = pp.reduce(x, op, dtype=dt)
        assert got.dtype == mem.dtype == (np.sum(x[:1], dtype=dt).dtype if op == "add" else x.dtype)
        if dtype == "float32" and op == "add":
            assert abs(float(got) - float(np.sum(x, dtype=np.float64))) <= 1e-6 * n + 1e-5
        else:
            assert got == mem, (op, got, mem)  # identical to the in-memory call
            ufunc = {"add": np.add, "min": np.minimum, "max": np.maximum}[op]
            assert got == ufunc.reduce(x, dtype=np.asarray(mem).dtype)  # numpy's, in the in-memory call's dtype


# ----------------------------------------------------------------------------- compaction
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_compact_and_nonzero_across_chunks(n, p, rng):
    x = rng.standard_normal(n).astype(np.float32)
    mask = rng.random(n) < p
    np.testing.assert_array_equal(pp.stream.compact(x, mask, chunk=M), x[mask])
    idx = pp.stream.nonzero(mask, chunk=M)
    assert idx.dtype == np.int64
    np.testing.assert_array_equal(idx, np.flatnonzero(mask))
    out = _poisoned(n, np.int64)
    got = pp.stream.nonzero(mask.astype(np.uint32), out=out, chunk=M)
    assert got.base is out or got is out or np.shares_memory(got, out)
    np.testing.assert_array_equal(got, np.flatnonzero(mask))


def test_compact_into_a_memmap(tmp_path, rng):
    n = 9 * M + 5
    x = rng.integers(0, 2**31, n).astype(np.int32)
    mask = np.memmap(tmp_path / "m.bin", mode="w+", dtype=np.uint8, shape=(n,))
    mask[:] = rng.random(n) < 0.5
    out = np.memmap(tmp_path / "o.bin", mode="w+", dtype=np.int32, shape=(n,))
    out[:] = POISON[np.dtype(np.int32)]
    got = pp.stream.compact(x, mask, out=out, chunk=M)
    np.testing.assert_array_equal(got, x[mask != 0])
    assert (out[got.size:] == POISON[np.dtype(np.int32)]).all()
    with pytest.raises(pp.InputError, match="stream.compact: out has 3 elements"):
        pp.stream.compact(x, np.ones(n, bool), out=np.empty(3, np.int32), chunk=M)
    # the chunks in flight when it raised left no staging buffer mapped for later calls
    for _ in range(3):
        np.testing.assert_array_equal(pp.stream.compact(x, mask, chunk=M), x[mask != 0])
        np.testing.assert_array_equal(pp.compact(x[:M], mask[:M]), x[:M][mask[:M] != 0])


# ----------------------------------------------------------------------------- RLE
@pytest.mark.parametrize("dtype", ["uint8", "int32", "float32"])
@pytest.mark.parametrize("longest", [1, 3, M + 7, 4 * M])
def test_rle_encode_joins_runs_across_chunks(dtype, longest, rng):
    lens = rng.integers(1, longest + 1, 200)
    vals = rng.integers(0, 3, 200).astype(dtype)
    x = np.repeat(vals, lens)
    v, c = pp.stream.rle_encode(x, chunk=M)
    starts = np.concatenate([[0], np.flatnonzero(x[1:] != x[:-1]) + 1])
    np.testing.assert_array_equal(v, x[starts])
    np.testing.assert_array_equal(c, np.diff(np.concatenate([starts, [x.size]])))
    assert v.dtype == x.dtype and c.dtype == np.uint32
    mv, mc = pp.rle_encode(x)
    np.testing.assert_array_equal(v, mv)
    np.testing.assert_array_equal(c, mc)


def test_rle_encode_into_memmaps(tmp_path, rng):
    x = np.repeat(rng.integers(0, 3, 500).astype(np.int32), rng.integers(1, 2 * M, 500))
    vo = np.memmap(tmp_path / "v.bin", mode="w+", dtype=np.int32, shape=(x.size,))
    co = np.memmap(tmp_path / "c.bin", mode="w+", dtype=np.uint32, shape=(x.size,))
    vo[:], co[:] = POISON[np.dtype(np.int32)], 0xDEADBEEF
    v, c = pp.stream.rle_encode(x, out=(vo, co), chunk=M)
    mv, mc = pp.rle_encode(x)
    np.testing.assert_array_equal(v, mv)
    np.testing.assert_array_equal(c, mc)
    assert np.shares_memory(v, vo) and np.shares_memory(c, co)
    assert (co[c.size:] == 0xDEADBEEF).all()
    with pytest.raises(pp.InputError, match="stream.rle_encode: out has room for 3 runs"):
        pp.stream.rle_encode(x, out=(np.empty(3, np.int32), np.empty(3, np.uint32)), chunk=M)
    with pytest.raises(pp.InputError, match="stream.rle_encode: out must be"):
        pp.stream.rle_encode(x, out=(np.empty(x.size, np.int32), np.empty(x.size, np.int64)), chunk=M)
    v, c = pp.stream.rle_encode(x[:M], out=(vo, co), chunk=M)  # one chunk: still into out
    np.testing.assert_array_equal(np.repeat(v, c), x[:M])


def test_rle_encode_one_run_over_every_chunk():
    x = np.full(10 * M + 1, 7, np.int32)
    v, c = pp.stream.rle_encode(x, chunk=M)
    assert v.tolist() == [7] and c.tolist() == [x.size]


def test_rle_joins_by_bits_as_the_kernel_does():
    x = np.array([0.0] * M + [-0.0] * M + [np.nan] * 3, np.float32)  # 0.0 and -0.0 are different runs
    v, c = pp.stream.rle_encode(x, chunk=M)
    mv, mc = pp.rle_encode(x)
    np.testing.assert_array_equal(v.view(np.uint32), mv.view(np.uint32))
    np.testing.assert_array_equal(c, mc)


# ----------------------------------------------------------------------------- FSE
@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_fse_stream_is_the_whole_container(mode, rng, tmp_path):
    bs = 1 << 12 if mode == "reference" else 1 << 14
    n = 9 * bs + 777
    data = rng.choice(np.frombuffer(b"abcdefgh", np.uint8), n, p=[.5, .2, .1, .1, .04, .03, .02, .01])
    data[bs:2 * bs] = 3  # a single-symbol block
    data[5 * bs:6 * bs] = rng.integers(0, 256, bs)  # a raw block
    whole = pp.fse.compress(data, block_size=bs, mode=mode)
    blob = pp.stream.fse_compress(data, chunk=3 * bs, block_size=bs, mode=mode)
    assert blob == whole  # the same bytes as compressing it whole
    assert pp.stream.fse_compress(data, tmp_path / "c.fse", chunk=2 * bs, block_size=bs, mode=mode) == len(whole)
    assert (tmp_path / "c.fse").read_bytes() == whole
    src = np.memmap(tmp_path / "c.fse", mode="r", dtype=np.uint8)
    out = np.memmap(tmp_path / "d.bin", mode="w+", dtype=np.uint8, shape=(n,))
    out[:] = 0xAB
    got = pp.stream.fse_decompress(src, out=out, chunk=2 * bs)
    assert got is out
    np.testing.assert_array_equal(out, data)
    np.testing.assert_array_equal(pp.stream.fse_decompress(whole, chunk=bs), data)


def test_fse_stream_detects_corruption(rng):
    data = rng.choice(np.frombuffer(b"abcd", np.uint8), 40_000, p=[.7, .1, .1, .1])
    blob = bytearray(pp.fse.compress(data, block_size=4096))
    blob[-100] ^= 0x5A  # inside the last block's payload
    with pytest.raises(pp.CorruptDataError):
        pp.stream.fse_decompress(bytes(blob), chunk=8192)
    with pytest.raises(pp.CorruptDataError):
        pp.stream.fse_decompress(b"nonsense" * 8)


def test_fse_empty_input():
    assert pp.fse.decompress(pp.stream.fse_compress(b"")) == b""
    assert pp.stream.fse_decompress(pp.fse.compress(b"")).size == 0


# ----------------------------------------------------------------------------- devices, errors
def test_streams_run_on_the_device_asked_for(rng):
    ds = pp.devices()
    x = rng.integers(0, 50, 4 * M + 1).astype(np.uint32)
    for d in ds:
        np.testing.assert_array_equal(pp.stream.scan(x, chunk=M, device=d), np.cumsum(x, dtype=np.uint32))
        with pp.use_device(d):
            np.testing.assert_array_equal(pp.stream.compact(x, x > 25, chunk=M), x[x > 25])


@pytest.mark.parametrize("call", [
    lambda x: pp.stream.scan(x, chunk=0),
    lambda x: pp.stream.scan(x, chunk=2.5),
    lambda x: pp.stream.scan(x[::2]),
    lambda x: pp.stream.scan(pp.asarray(x)),
    lambda x: pp.stream.scan(x, out=np.empty(3, np.uint32)),
    lambda x: pp.stream.scan(x, out=np.empty(x.size, np.complex64)),
    lambda x: pp.stream.scan(x, dtype=np.uint32, out=np.empty(x.size, np.uint64)),
    lambda x: pp.stream.scan(x.astype(np.complex64)),
    lambda x: pp.stream.reduce(x, dtype="S4"),
    lambda x: pp.stream.scan(x, op="mul"),
    lambda x: pp.stream.reduce(x, chunk=-1),
    lambda x: pp.stream.compact(x, np.ones(3, bool)),
    lambda x: pp.stream.nonzero(x, out=np.empty(x.size, np.float32)),
    lambda x: pp.stream.rle_encode(x, chunk=True),
    lambda x: pp.stream.fse_compress(x),
    lambda x: pp.stream.fse_compress(x.view(np.uint8), mode="fast"),
    lambda x: pp.stream.scan(x, chunk=1 << 40),
])
def test_bad_arguments_raise_the_library_error(call):
    x = np.arange(100, dtype=np.uint32)
    with pytest.raises(pp.InputError, match=r"^stream\.\w+: "):
        call(x)


# ----------------------------------------------------------------------------- benchmark
@pytest.mark.parametrize("dtype", ["uint32", "float32"])
def test_stream_benchmark_runs_checked_and_cleans_up(dtype, tmp_path):
    from pywgpuprims.bench import stream as bench

    js = tmp_path / "s.json"
    fse = ["--fse", "interleaved"] if dtype == "uint32" else []
    assert bench.main(["--size", "3MiB", "--chunks", "256KiB", "1MiB", "--repeats", "1", "--dtype", dtype,
                       "--dir", str(tmp_path), "--json", str(js)] + fse) == 0
    import json

    rows = json.loads(js.read_text())["rows"]
    scans = [r for r in rows if r["what"].startswith("stream.scan")]
    assert len(scans) == 2 and all(r["GB/s"] > 0 and r["x memcpy"] > 0 for r in scans)
    fses = [r for r in rows if r["what"].startswith("stream.fse")]
    assert len(fses) == (4 if fse else 0) and all(r["GB/s"] > 0 for r in fses)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]  # the memmaps are gone


def test_scan_submits_the_next_chunk_before_copying_this_one_out(monkeypatch, rng):
    """The overlap the module promises: chunk k+1's upload and scan are submitted before chunk
    k's result is copied out (each copy-out then waits only for its own chunk's work)."""
    from pywgpuprims import _device

    dev = pp.device()
    events = []
    upload, into = dev.upload, _device.Readback.into

    def logged_upload(dst, data, offset=0):
        events.append(("up", data.size))
        return upload(dst, data, offset)

    def logged_into(self, *outs, **kw):
        events.append(("out", outs[0].size))
        return into(self, *outs, **kw)

    monkeypatch.setattr(dev, "upload", logged_upload)
    monkeypatch.setattr(_device.Readback, "into", logged_into)
    x = rng.integers(0, 9, 4 * M + 5).astype(np.uint32)
    np.testing.assert_array_equal(pp.stream.scan(x, chunk=M), np.cumsum(x, dtype=np.uint32))
    kinds = [k for k, n in events if n > 1]  # not the identity constant
    assert kinds == ["up", "up", "out", "up", "out", "up", "out", "up", "out", "out"], events


@pytest.mark.parametrize("exclusive", [False, True])
def test_float_scan_is_the_in_memory_chunked_scan_bit_for_bit(exclusive, rng):
    """float32: the carry enters each chunk as the in-memory scan passes it between its
    binding-sized chunks, so with the same chunks (and the fixed-order kernels) the results are
    identical, not only close."""
    import importlib

    S = importlib.import_module("pywgpuprims.scan")  # the module (pp.scan is the function)
    dev = pp.device()
    n0 = 3 * 4096 + 77
    tile = S._wg(dev) * S._vpt(dev, n0) * 4
    for n in (tile - 1, 2 * tile, 3 * tile + 77):
        x = (rng.standard_normal(n) * 10).astype(np.float32)
        per = tile * max(1, 4096 // tile)
        got = pp.stream.scan(x, exclusive=exclusive, out=_poisoned(n, np.float32), chunk=per, deterministic=True)
        with dev.using(max_binding=4 * per):
            mem = pp.scan(x, exclusive=exclusive, deterministic=True)
        np.testing.assert_array_equal(got, mem)
        single = pp.stream.scan(x, exclusive=exclusive, dtype=np.float32, chunk=per)
        np.testing.assert_allclose(single, _numpy_scan(x, "add", exclusive, np.dtype(np.float32)),
                                   rtol=0, atol=1e-4 * np.abs(x).sum())


@pytest.mark.parametrize("hooks", [{"scan_withhold_period": 3}, {"scan_max_steps": 0, "scan_max_self": 0}])
def test_scan_carry_through_fallbacks_and_repairs(hooks, rng):
    """The carry a chunk starts from reaches tiles whose lookback falls back or gives up (the
    reduce-then-scan repair seeds its spine with it)."""
    x = rng.integers(-1000, 1000, 200_003).astype(np.int32)
    with pp.device().using(**hooks):
        for exclusive in (False, True):
            got = pp.stream.scan(x, exclusive=exclusive, dtype=np.int32, out=_poisoned(x.size, np.int32),
                                 chunk=50_000)
            np.testing.assert_array_equal(got, _numpy_scan(x, "add", exclusive, np.dtype(np.int32)))


@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_fse_stream_overlaps_chunks(mode, monkeypatch, rng):
    """As stream.scan: chunk k+1's input is uploaded (and its work submitted) before chunk k's
    result is copied out, in both directions."""
    from pywgpuprims import _device
    from pywgpuprims.fse import _codec as _fc

    bs = 4096
    data = np.minimum(rng.geometric(0.2, 5 * bs + 99), 255).astype(np.uint8)
    whole = pp.fse.compress(data, block_size=bs, mode=mode)
    dev = pp.device()
    events = []
    upload, into = dev.upload, _device.Readback.into

    def logged_upload(dst, d, offset=0):
        if d.dtype == np.uint8 and d.size > 64:
            events.append("up")
        return upload(dst, d, offset)

    def logged_into(self, *outs, **kw):
        if outs[-1].dtype == np.uint8:
            events.append("out")
        return into(self, *outs, **kw)

    def logged_mapped(rb):
        events.append("out")
        return mapped(rb)

    mapped = _fc._mapped
    monkeypatch.setattr(dev, "upload", logged_upload)
    monkeypatch.setattr(_device.Readback, "into", logged_into)
    monkeypatch.setattr(_fc, "_mapped", logged_mapped)
    assert pp.stream.fse_compress(data, chunk=bs, block_size=bs, mode=mode) == whole
    assert events[:4] == ["up", "up", "out", "up"], events  # a group's record and payload: one mapping
    events.clear()
    np.testing.assert_array_equal(pp.stream.fse_decompress(whole, chunk=bs), data)
    assert events[:4] == ["up", "up", "out", "up"], events
