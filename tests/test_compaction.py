"""Compaction, nonzero and run-length encoding/decoding against numpy: every dtype, both methods,
both local-scan paths, tile boundaries, forced fallback, forced repair, poisoned allocations,
thread counts and bad input."""

import textwrap

import numpy as np
import pytest
from conftest import POISON_U32, poisoned, run_with_lavapipe_threads

import pywgpuprims as pp
from pywgpuprims import compaction as rle
from pywgpuprims._memory import STORAGE_USAGE
from pywgpuprims.bench import rle_traffic_pass

DTYPES = ["uint8", "uint32", "int32", "float32"]
METHODS = ["fused", "parle"]


def tile_of(dtype) -> int:
    return rle._tile(pp.device(), dtype)  # elements per tile of the fused pass


def sizes_for(dtype):
    t = tile_of(dtype)
    return [0, 1, 2, 3, 5, t - 1, t, t + 1, 3 * t + 7]


def options(**kw):
    return pp.device().using(**kw)


def bits(x):
    return x.view(np.uint32) if x.dtype.itemsize == 4 else x


def ref_rle(x):
    """numpy oracle: runs of equal bits."""
    if x.size == 0:
        return x[:0], np.zeros(0, np.uint32)
    b = bits(x)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(b.astype(np.int64)) != 0) + 1])
    return x[starts], np.diff(np.append(starts, x.size)).astype(np.uint32)


def random_values(rng, n, dtype, high=4):
    v = rng.integers(0, high, n)
    if dtype == "float32":
        return (v.astype(np.float32) - 1.5) * 0.5
    return v.astype(dtype)


def runs_input(rng, n, dtype, max_len=1000, high=4):
    """Random run lengths 1..max_len of values from a small alphabet (neighbours may repeat)."""
    if n == 0:
        return np.zeros(0, dtype)
    lens = rng.integers(1, max_len + 1, n // max(1, max_len // 2) + 2)
    x = np.repeat(random_values(rng, lens.size, dtype, high), lens)
    while x.size < n:
        x = np.concatenate([x, x])
    return np.ascontiguousarray(x[:n])


def distinct_input(rng, n, dtype):
    if dtype == "uint8":
        return (np.arange(n) % 256).astype(np.uint8)
    if dtype == "float32":
        return np.arange(n, dtype=np.float32) * 0.5 - 7
    return (rng.permutation(n) - 5).astype(dtype) if dtype == "int32" else np.arange(n, dtype=np.uint32)


def check_rle(x, got):
    v, c = got
    rv, rc = ref_rle(x)
    assert v.dtype == x.dtype and c.dtype == np.uint32
    assert v.shape == rv.shape, f"{v.size} runs, want {rv.size}"
    np.testing.assert_array_equal(bits(v), bits(rv))
    np.testing.assert_array_equal(c, rc)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rle_encode_sizes(dtype, method, rng):
    for n in sizes_for(dtype):
        for x in (runs_input(rng, n, dtype, max_len=int(rng.integers(1, 1001))), np.full(n, 3, dtype),
                  distinct_input(rng, n, dtype), runs_input(rng, n, dtype, max_len=3, high=2)):
            check_rle(x, pp.rle_encode(x, method=method))


@pytest.mark.parametrize("dtype", DTYPES)
def test_runs_across_tile_boundaries(dtype, rng):
    t = tile_of(dtype)
    n = 6 * t + 3
    x = random_values(rng, n, dtype, high=8)
    # runs that end exactly at, just before and just after tile boundaries, and one over 3 tiles
    for k, b in enumerate((t, 2 * t, 3 * t)):
        x[b - 5 + k:b + k] = 1
        x[b + k:b + k + 4] = 2
    x[3 * t + 10:6 * t - 10] = x[3 * t + 10]
    check_rle(x, pp.rle_encode(x))
    check_rle(x, pp.rle_encode(x, method="parle"))


def test_float_runs_compare_bits():
    nan = np.float32("nan")
    x = np.array([0.0, -0.0, -0.0, nan, nan, 1.0, np.inf, np.inf], np.float32)
    v, c = pp.rle_encode(x)
    np.testing.assert_array_equal(c, [1, 2, 2, 1, 2])
    np.testing.assert_array_equal(v.view(np.uint32), x[[0, 1, 3, 5, 6]].view(np.uint32))
    other_nan = np.array([0x7FC00000, 0x7FC00001], np.uint32).view(np.float32)
    assert pp.rle_encode(other_nan)[1].tolist() == [1, 1]  # different NaN bits, different runs


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_compact_and_nonzero(dtype, method, rng):
    for n in sizes_for(dtype):
        x = distinct_input(rng, n, dtype)
        for mask in (rng.random(n) < 0.5, rng.random(n) < 0.02, np.ones(n, bool), np.zeros(n, bool),
                     rng.integers(0, 3, n).astype(np.uint8) * 7, rng.integers(-1, 2, n).astype(np.int32),
                     (rng.random(n) < 0.5).astype(np.uint32) << 31):
            got = pp.compact(x, mask, method=method)
            want = x[mask != 0]
            assert got.dtype == x.dtype
            np.testing.assert_array_equal(bits(got), bits(want))
            idx = pp.flatnonzero(mask, method=method)
            assert idx.dtype == np.int64  # numpy's intp
            np.testing.assert_array_equal(idx, np.flatnonzero(mask))
            (ix,) = pp.nonzero(mask, dtype=np.uint32, method=method)  # the 32-bit path
            assert ix.dtype == np.uint32
            np.testing.assert_array_equal(ix, np.nonzero(mask)[0])


def test_compact_any_shape(rng):
    x = rng.integers(0, 100, (37, 53)).astype(np.int32)
    m = rng.random((37, 53)) < 0.3
    np.testing.assert_array_equal(pp.compact(x, m), x[m])
    np.testing.assert_array_equal(pp.flatnonzero(m), np.flatnonzero(m))
    got, want = pp.nonzero(m), np.nonzero(m)
    assert len(got) == 2 and all(g.dtype == np.int64 for g in got)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_round_trip(dtype, rng):
    n = 1 << 22
    x = runs_input(rng, n, dtype, max_len=int(rng.integers(2, 40)))
    v, c = pp.rle_encode(x)
    check_rle(x, (v, c))
    np.testing.assert_array_equal(bits(pp.rle_decode(v, c)), bits(x))
    g = pp.rle_decode(pp.rle_encode(pp.asarray(x)))  # all on the GPU
    np.testing.assert_array_equal(bits(g.numpy()), bits(x))
    m = rng.random(n) < 0.5
    np.testing.assert_array_equal(bits(pp.compact(x, m)), bits(x[m]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_decode(dtype, rng):
    for r in [1, 2, 7, 1000, 5003]:
        values = random_values(rng, r, dtype, high=200)
        counts = rng.integers(0, 40, r).astype(np.uint32)  # zero counts allowed
        counts[rng.random(r) < 0.2] = 0
        want = np.repeat(values, counts)
        got = pp.rle_decode(values, counts)
        assert got.dtype == values.dtype
        np.testing.assert_array_equal(bits(got), bits(want))
        gv, gc = pp.asarray(values), pp.asarray(counts)
        np.testing.assert_array_equal(bits(pp.rle_decode(gv, gc).numpy()), bits(want))
        extra = want.size + 9  # size given: no read-back; elements past the sum are 0
        g = pp.rle_decode(gv, gc, size=extra).numpy()
        np.testing.assert_array_equal(bits(g[:want.size]), bits(want))
        assert not g[want.size:].any()
    long_runs = pp.rle_decode(np.array([5, 6], dtype), np.array([70_000, 3], np.int64))
    np.testing.assert_array_equal(long_runs, np.repeat(np.array([5, 6], dtype), [70_000, 3]))
    assert pp.rle_decode(np.zeros(0, dtype), np.zeros(0, np.uint32)).size == 0
    assert pp.rle_decode(np.ones(3, dtype), np.zeros(3, np.uint32)).size == 0


@pytest.fixture
def poison_alloc(monkeypatch):
    """Every storage buffer the primitives allocate (GpuArrays and scratch) starts out poisoned."""
    dev = pp.device()
    pooled = dev.alloc

    def poisoned(nbytes, usage=STORAGE_USAGE, label=""):
        buf = pooled(nbytes, usage, label)
        if usage == STORAGE_USAGE:
            dev.write(buf, np.full(buf.size // 4, 0xDEADBEEF, np.uint32))
        return buf

    monkeypatch.setattr(dev, "alloc", poisoned)
    yield


@pytest.mark.parametrize("method", METHODS)
def test_poisoned_allocations(method, rng, poison_alloc):
    for dtype in DTYPES:
        for n in (1, tile_of(dtype) + 3, 5 * tile_of(dtype) - 1):
            x = runs_input(rng, n, dtype, max_len=50)
            check_rle(x, pp.rle_encode(x, method=method))
            res = pp.rle_encode(pp.asarray(x), method=method)
            check_rle(x, res.numpy())
            np.testing.assert_array_equal(bits(pp.rle_decode(res).numpy()), bits(x))
            m = rng.random(n) < 0.5
            np.testing.assert_array_equal(bits(pp.compact(x, m, method=method)), bits(x[m]))
            c = pp.compact(pp.asarray(x), pp.asarray(m), method=method)
            assert int(c.count.numpy()[0]) == m.sum()
            np.testing.assert_array_equal(bits(c.numpy()), bits(x[m]))
            np.testing.assert_array_equal(pp.flatnonzero(pp.asarray(m), method=method).numpy(), np.flatnonzero(m))


def test_gpuarray_results(rng):
    x = runs_input(rng, 50_000, "int32", max_len=30)
    v, c = ref_rle(x)
    for method in METHODS:
        res = pp.rle_encode(pp.asarray(x), method=method)
        assert isinstance(res, pp.RunLengths) and res.size == x.size
        assert res.values.shape == (x.size,) and res.n_runs.shape == (1,)
        assert int(res.n_runs.numpy()[0]) == v.size
        if method == "parle":
            np.testing.assert_array_equal(res.starts.numpy()[:v.size + 1], np.append(np.cumsum(c) - c, x.size))
        else:
            assert res.starts is None  # fused 32-bit: lengths written directly
        out = pp.rle_decode(res)
        assert isinstance(out, pp.GpuArray)
        np.testing.assert_array_equal(out.numpy(), x)
    empty = pp.rle_encode(pp.asarray(np.zeros(0, np.int32)))
    assert empty.numpy()[0].size == 0 and pp.rle_decode(empty).size == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_chain_round_trip(dtype, rng, poison_alloc):
    """rle_decode(rle_encode(g)) on the GPU: runs longer than tiles, all equal, all distinct."""
    t = tile_of(dtype)
    for n in (1, t, t + 1, 9 * t + 5):
        for x in (np.full(n, 7, dtype), runs_input(rng, n, dtype, max_len=3 * t), distinct_input(rng, n, dtype),
                  runs_input(rng, n, dtype, max_len=40)):
            for method in METHODS:
                res = pp.rle_encode(pp.asarray(x), method=method)
                np.testing.assert_array_equal(bits(pp.rle_decode(res).numpy()), bits(x))


@pytest.mark.parametrize("vpt,stage", [(1, 4096), (4, 4096), (12, 4096), (16, 4096), (8, 256), (3, 1000)])
def test_other_tile_sizes(vpt, stage, rng):
    """Tiles larger than the staging buffer store their items in rounds."""
    stats = pp.GpuArray.empty((16,), np.uint32)
    with options(rle_vec4_per_thread=vpt, rle_stage=stage, rle_withhold_period=3, rle_stats_buffer=stats.buffer):
        tile = 256 * vpt * 4
        for n in (tile - 1, tile + 1, 11 * tile + 5):
            x = runs_input(rng, n, "int32", max_len=int(rng.integers(1, 3 * tile)))
            check_rle(x, pp.rle_encode(x))
            y = distinct_input(rng, n, "float32")
            check_rle(y, pp.rle_encode(y))
            np.testing.assert_array_equal(pp.rle_decode(pp.rle_encode(pp.asarray(x))).numpy(), x)
            m = rng.random(n) < 0.5
            np.testing.assert_array_equal(pp.compact(x, m), x[m])
            np.testing.assert_array_equal(pp.compact(y, m), y[m])
            np.testing.assert_array_equal(pp.flatnonzero(m), np.flatnonzero(m))
        check_rle(x, pp.rle_encode(x))
        assert stats.numpy()[2] > 0  # the withholding tiles were re-counted by their successors


@pytest.mark.parametrize("opts", [
    {"rle_subgroups": False},
    {"rle_subgroups": False, "rle_vec4_per_thread": 16, "rle_wg": 128},
    {"rle_compact_vec4_per_thread": 5, "rle_vec4_per_thread": 5},
    {"rle_compact_vec4_per_thread": 16, "rle_vec4_per_thread": 12},
    {"rle_vec4_per_thread": 3},
    {"rle_decode_cap": 8, "rle_decode_vec4_per_thread": 8},
    {"rle_decode_vec4_per_thread": 3},
    {"rle_decode_vec4_per_thread": 1, "rle_subgroups": False},
    {"rle_wg": 128, "rle_vec4_per_thread": 3, "rle_compact_vec4_per_thread": 3},
], ids=["staged", "staged-16-wg128", "vpt-5", "vpt-16-12", "bitmask-3", "decode-search", "decode-3", "decode-1-wgmem",
        "workgroup-128"])
def test_store_and_decode_switches(opts, rng):
    """Both encoders of rle/compact.wgsl (the bitmask, and the staged stores in rounds without
    subgroups), compaction at other tile sizes, and the decode expand (rle/expand.wgsl with tiles
    whose range holds more runs than it scatters, and zero-length runs)."""
    stats = pp.GpuArray.empty((16,), np.uint32)
    with options(rle_withhold_period=3, rle_stats_buffer=stats.buffer, **opts):
        for n in (1, 4095, 3 * 12288 + 7, 70_001):
            for keep in (0.0, 0.5, 1.0):
                x = distinct_input(rng, n, "int32")
                m = rng.random(n) < keep
                np.testing.assert_array_equal(pp.compact(x, m), x[m])
                np.testing.assert_array_equal(pp.compact(pp.asarray(x), pp.asarray(m.astype(np.uint32))).numpy(),
                                              x[m])
            for max_len in (1, 3, 40, 5000):
                y = runs_input(rng, n, "float32", max_len=max_len)
                check_rle(y, pp.rle_encode(y))
                np.testing.assert_array_equal(bits(pp.rle_decode(pp.rle_encode(pp.asarray(y))).numpy()), bits(y))
            values = random_values(rng, 3000, "int32", high=100)
            counts = rng.integers(0, 9, 3000).astype(np.uint32)
            counts[rng.random(3000) < 0.5] = 0
            np.testing.assert_array_equal(pp.rle_decode(values, counts), np.repeat(values, counts))
        assert stats.numpy()[2] > 0  # the withholding tiles were re-counted by their successors


def test_encoding_with_subgroups_takes_the_bitmask(rng):
    """With subgroups, 32-bit encoding finds its runs through the run-start bitmask (no staging),
    without them through staged stores; both agree with numpy on a tile of dense runs."""
    dev = pp.device()
    if not dev.has_subgroups:
        pytest.skip("the bitmask path needs subgroups")
    x = runs_input(rng, 5 * tile_of("int32") + 3, "int32", max_len=2)
    for subgroups in (True, False):
        with options(rle_subgroups=subgroups):
            check_rle(x, pp.rle_encode(x))
            keys = [dict(k[2]) for k in dev._kernels if k[0] == "rle/compact.wgsl"]
            assert any(k.get("BITMASK") and k.get("RLE") for k in keys)
            assert subgroups or any(k.get("RLE") and k.get("STAGED") and not k.get("BITMASK") for k in keys)


@pytest.mark.parametrize("method", METHODS)
def test_two_dimensional_grids(method, rng, monkeypatch):
    """Grids past the per-dimension limit are split over x and y (a small limit stands in for 65,535)."""
    monkeypatch.setattr(pp.device(), "max_groups", 20 if method == "parle" else 7)
    for dtype in ("int32", "uint8"):
        n = 23 * 4096 + 77
        x = runs_input(rng, n, dtype, max_len=3)
        v, c = pp.rle_encode(x, method=method)
        check_rle(x, (v, c))
        np.testing.assert_array_equal(pp.rle_decode(v, c), x)
        np.testing.assert_array_equal(pp.rle_decode(pp.rle_encode(pp.asarray(x), method=method)).numpy(), x)
        m = rng.random(n) < 0.7
        np.testing.assert_array_equal(pp.compact(x, m, method=method), x[m])
        np.testing.assert_array_equal(pp.flatnonzero(m, method=method), np.flatnonzero(m))


PATHS = [{"rle_subgroups": True}, {"rle_subgroups": False}]


@pytest.mark.parametrize("path", PATHS, ids=["subgroups", "wgmem"])
@pytest.mark.parametrize("period", [1, 2, 3])
def test_forced_fallback(period, path, rng):
    """Withholding tiles publish nothing: successors must re-count them themselves."""
    if path["rle_subgroups"] and not pp.device().has_subgroups:
        pytest.skip("adapter has no subgroup feature")
    stats = pp.GpuArray.empty((16,), np.uint32)
    with options(rle_withhold_period=period, rle_stats_buffer=stats.buffer, **path):
        for dtype in ("int32", "uint8"):
            n = 30 * tile_of(dtype) + 11
            x = runs_input(rng, n, dtype, max_len=int(rng.integers(1, 100)))
            check_rle(x, pp.rle_encode(x))
            s = stats.numpy()
            assert s[1] == 0, "lookback gave up"
            assert s[2] >= 30 // period - 1, f"only {s[2]} fallbacks taken"
            m = rng.random(n) < 0.5
            np.testing.assert_array_equal(pp.compact(x, m), x[m])
            np.testing.assert_array_equal(pp.flatnonzero(m), np.flatnonzero(m))


@pytest.mark.parametrize("steps", [0, 1])
def test_lookback_past_its_step_budget(steps, rng):
    # No tile publishes and the step budget is (nearly) nil: each lookback walks on tile by tile,
    # recounting silent predecessors itself; it never gives up and no repair is recorded.
    stats = pp.GpuArray.empty((16,), np.uint32)
    with options(rle_max_steps=steps, rle_withhold_period=1, rle_stats_buffer=stats.buffer):
        for dtype in ("int32", "float32", "uint8"):
            n = 12 * tile_of(dtype) + 3
            x = runs_input(rng, n, dtype, max_len=20)
            check_rle(x, pp.rle_encode(x))
            assert stats.numpy()[1] == 0, "a lookback gave up"
            check_rle(x, pp.rle_encode(pp.asarray(x)).numpy())
            m = rng.random(n) < 0.3
            np.testing.assert_array_equal(bits(pp.compact(x, m)), bits(x[m]))
            np.testing.assert_array_equal(pp.flatnonzero(m), np.flatnonzero(m))


@pytest.mark.parametrize("steps", [0, 1])
def test_repair_when_lookback_gives_up(steps, rng):
    # rle_max_self 0: no walk past the step budget either, so tiles give up and arm the repair.
    stats = pp.GpuArray.empty((16,), np.uint32)
    with options(rle_max_steps=steps, rle_max_self=0, rle_withhold_period=1, rle_stats_buffer=stats.buffer):
        for dtype in ("float32", "uint8"):
            n = 12 * tile_of(dtype) + 3
            x = runs_input(rng, n, dtype, max_len=20)
            check_rle(x, pp.rle_encode(x))
            assert stats.numpy()[1] == 1, "the single pass should have reported failure"
            res = pp.rle_encode(pp.asarray(x))  # GpuArray results are repaired too, with no read-back
            check_rle(x, res.numpy())
            m = rng.random(n) < 0.3
            np.testing.assert_array_equal(bits(pp.compact(pp.asarray(x), pp.asarray(m)).numpy()), bits(x[m]))


def test_errors(rng):
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(pp.InputError, match="compact: mask has shape"):
        pp.compact(x, np.ones(9, bool))
    with pytest.raises(pp.InputError, match="mask has shape"):
        pp.compact(pp.asarray(x), pp.asarray(np.ones(11, np.uint8)))
    fmask = np.array([0, 1, np.nan, 0, -2, 0, 0, 1, 0, 0], np.float32)  # any dtype: mask != 0, as numpy
    np.testing.assert_array_equal(pp.compact(x, fmask), x[fmask != 0])
    with pytest.raises(pp.InputError, match="numpy arrays or both GpuArrays"):
        pp.compact(pp.asarray(x), np.ones(10, bool))
    with pytest.raises(pp.InputError, match="dtype complex128"):
        pp.rle_encode(np.ones(4, complex))
    with pytest.raises(pp.InputError, match="dimensions"):
        pp.rle_encode(np.ones((2, 2), np.int32))
    with pytest.raises(pp.InputError, match="method"):
        pp.rle_encode(x, method="cub")
    np.testing.assert_array_equal(pp.flatnonzero(fmask), np.flatnonzero(fmask))
    with pytest.raises(pp.InputError, match="nonzero: dtype complex128"):
        pp.nonzero(np.ones(3, complex))
    with pytest.raises(pp.InputError, match="rle_decode: values has shape"):
        pp.rle_decode(x, np.ones(9, np.uint32))
    with pytest.raises(pp.InputError, match="values has shape"):
        pp.rle_decode(pp.asarray(x), pp.asarray(np.ones(9, np.uint32)))
    with pytest.raises(pp.InputError, match="non-negative"):
        pp.rle_decode(x, -np.ones(10, np.int64))
    with pytest.raises(pp.InputError, match="non-negative integers"):
        pp.rle_decode(x, np.ones(10, np.float32))
    big = np.full(10, 1 << 29, np.uint32)
    with pytest.raises(pp.InputError, match="overflow"):
        pp.rle_decode(x, big)
    with pytest.raises(pp.InputError, match="overflow"):
        pp.rle_decode(pp.asarray(x), pp.asarray(big))
    with pytest.raises(pp.InputError, match="counts is missing"):
        pp.rle_decode(x)


_THREAD_SCRIPT = textwrap.dedent("""
    import numpy as np, pywgpuprims as pp
    rng = np.random.default_rng()
    dev = pp.device()
    for opts in ({}, {"rle_subgroups": False}, {"rle_withhold_period": 2}, {"rle_withhold_period": 1}):
        with dev.using(**opts):
            for n in (4096 * 50 + 7, 1 << 20):
                for _ in range(2):
                    x = np.repeat(rng.integers(0, 5, n), rng.integers(1, 30, n))[:n].astype(np.int32)
                    v, c = pp.rle_encode(x)
                    st = np.concatenate([[0], np.flatnonzero(np.diff(x)) + 1])
                    assert (v == x[st]).all() and (c == np.diff(np.append(st, n))).all(), (opts, n)
                    m = rng.random(n) < 0.5
                    assert (pp.compact(x, m) == x[m]).all(), (opts, n)
                    assert (pp.rle_decode(v, c) == x).all(), (opts, n)
                    b = (x % 256).astype(np.uint8)
                    v8, c8 = pp.rle_encode(b)
                    assert (np.repeat(v8, c8) == b).all(), (opts, n)
    with dev.using(max_binding=4096):  # chunks past a binding, and 64-bit values
        for n in (3000, 10_000):
            x = np.repeat(rng.integers(0, 3, n), rng.integers(1, 900, n))[:n].astype(np.int32)
            v, c = pp.rle_encode(x)
            assert (np.repeat(v, c) == x).all() and (v[1:] != v[:-1]).all(), n
            assert (pp.rle_decode(v, c) == x).all(), n
            m = rng.random(n) < 0.5
            assert (pp.compact(x, m) == x[m]).all() and (pp.flatnonzero(m) == np.flatnonzero(m)).all(), n
            w = x.astype(np.int64) << 35
            v, c = pp.rle_encode(w)
            assert (np.repeat(v, c) == w).all() and (v[1:] != v[:-1]).all(), n
            assert (pp.compact(pp.asarray(w), pp.asarray(m)).numpy() == w[m]).all(), n
    print("ok")
""")


@pytest.mark.parametrize("vec4,round_words,lookback", [(False, 0, {}), (True, 0, {}), (True, 64, {}),
                                                       (True, 64, {"lookback": True}),
                                                       (False, 0, {"lookback": True, "hold": True})])
def test_traffic_ceiling_kernel_writes_the_encoders_ranges(vec4, round_words, lookback, rng):
    # The benchmark's ceiling for rle_encode (bench/rle_traffic.wgsl) must move exactly the
    # encoder's bytes: every word of each tile's range, nothing past the last; with the lookback,
    # from offsets that it found itself.
    n = 1024 * 37 + 300  # partial last tile at one vec4 per invocation
    x = rng.integers(0, 3, n).astype(np.int32)
    starts = np.concatenate([[True], x[1:] != x[:-1]])
    ends = np.cumsum(np.add.reduceat(starts.astype(np.int64), np.arange(0, n, 1024))).astype(np.uint32)
    vals, cnts = poisoned((n,), np.uint32), poisoned((n,), np.uint32)
    wrong = rle_traffic_pass(pp.device(), pp.asarray(x), pp.asarray(ends), vals, cnts, n // 4, vpt=1, vec4=vec4,
                             round_words=round_words, check=True, **lookback)
    assert wrong == 0
    tile_start = np.repeat(np.concatenate([[0], ends[:-1]]), np.diff(np.concatenate([[0], ends])))
    got = cnts.numpy()
    np.testing.assert_array_equal(got[: ends[-1]], np.arange(ends[-1]) - tile_start)
    assert (got[ends[-1]:] == POISON_U32).all()


@pytest.mark.parametrize("vec4", [False, True])
def test_traffic_ceiling_stream_writes_nine_tenths(vec4, rng):
    n = 10240 * 3
    x = pp.asarray(rng.integers(0, 2**31, n).astype(np.int32))
    vals, cnts = poisoned((n,), np.uint32), poisoned((n,), np.uint32)
    rle_traffic_pass(pp.device(), x, pp.asarray(np.zeros(1, np.uint32)), vals, cnts, n // 4, vec4=vec4,
                     stream=True)
    for out in (vals.numpy(), cnts.numpy()):
        assert (out[: n * 9 // 10] != POISON_U32).all() and (out[n * 9 // 10:] == POISON_U32).all()


@pytest.mark.parametrize("threads", ["1", "2", "8"])
def test_lavapipe_thread_counts(threads):
    run_with_lavapipe_threads(_THREAD_SCRIPT, threads)


def test_poisoned_helper_is_used():
    # the conftest helper is what poison_alloc mimics; keep them in step
    g = poisoned((3,), np.uint32)
    assert (g.numpy() == 0xDEADBEEF).all()


@pytest.mark.slow
def test_stress(rng):
    for i in range(40):
        n = int(rng.integers(1, 1 << 22))
        dtype = DTYPES[i % 4]
        x = runs_input(rng, n, dtype, max_len=int(rng.integers(1, 2000)))
        with options(rle_withhold_period=int(i % 3)):
            check_rle(x, pp.rle_encode(x))


# ------------------------------------------------------------------------- past one binding
CHUNK_LIMITS = [256, 1000, 4096]  # bytes per binding (the max_binding hook); 1000 is no multiple of the alignment


@pytest.fixture
def binding_guard(monkeypatch):
    """Every storage binding a dispatch makes must fit ``dev.binding_limit`` (the hook in force)."""
    dev = pp.device()
    inner = dev._bind_group
    seen = []

    def checked(d, pbuf):
        for _, name, storage in d.kernel._storage:
            res = d.bindings[name]
            if res.__class__ is pp._device.Binding:
                size = res.size if res.size is not None else res.buffer.size - res.offset
            else:
                buf = getattr(res, "buffer", res)
                size = getattr(buf, "buffer", buf).size - getattr(res, "byte_offset", 0)
            seen.append(d.kernel.path)
            if d.kernel.path == "rle/place.wgsl" and name in ("rec", "args"):
                continue  # 32 bytes per chunk and 16 per chunk and window: tiny at real limits
            assert not storage or size <= dev.binding_limit, (d.kernel.path, name, size, dev.binding_limit)
        return inner(d, pbuf)

    monkeypatch.setattr(dev, "_bind_group", checked)
    yield seen


def chunk_sizes(limit, itemsize=4):
    """Element counts around the chunk boundaries of a call at ``limit`` bytes per binding: the
    largest in one binding, one past it, and one, two and three chunks and a bit (of the placed
    chunks, then of the chained ones, which are shorter)."""
    with options(max_binding=limit):
        per = rle._chunk_len(pp.device(), itemsize)
        chained = rle._chain(pp.device()).per
    return [limit // itemsize - 1, limit // itemsize + 1, per + 1, 2 * per, 3 * per + 5, 2 * chained,
            3 * chained + 1]


def chunk_ends(limit, n):
    """Every chunk boundary below ``n`` (placed and chained chunks) at ``limit`` bytes per binding."""
    with options(max_binding=limit):
        pers = (rle._chunk_len(pp.device(), 4), rle._chain(pp.device()).per)
    return sorted({b for per in pers for b in range(per, n, per)})


@pytest.mark.parametrize("limit", CHUNK_LIMITS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_chunked_compact_and_nonzero(dtype, limit, rng, poison_alloc, binding_guard):
    for i, n in enumerate(chunk_sizes(limit)):
        x = distinct_input(rng, n, dtype)
        sparse = np.zeros(n, bool)
        sparse[rng.integers(0, n, 3)] = True  # most chunks keep nothing
        masks = [rng.random(n) < 0.5, sparse] + ([np.ones(n, bool), np.zeros(n, bool),
                                                  rng.integers(0, 3, n).astype(np.uint8) * 7] if i in (3, 5) else [])
        method = METHODS[i % 2] if i < 5 else "fused"
        for mask in masks:
            with options(max_binding=limit):
                got = pp.compact(x, mask, method=method)
                res = pp.compact(pp.asarray(x), pp.asarray(mask), method=method)
                gidx = pp.flatnonzero(pp.asarray(mask), method=method)
                gidx32 = pp.flatnonzero(pp.asarray(mask), dtype=np.uint32, method=method)
            want = x[mask != 0]
            np.testing.assert_array_equal(bits(got), bits(want))
            assert int(res.count.numpy()[0]) == want.size
            np.testing.assert_array_equal(bits(res.numpy()), bits(want))
            assert gidx.data.dtype == np.int64 and gidx32.data.dtype == np.uint32
            np.testing.assert_array_equal(gidx.numpy(), np.flatnonzero(mask))
            np.testing.assert_array_equal(gidx32.numpy(), np.flatnonzero(mask))
    assert "rle/place.wgsl" in binding_guard


@pytest.mark.parametrize("limit", CHUNK_LIMITS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_chunked_rle_round_trip(dtype, limit, rng, poison_alloc, binding_guard):
    for i, n in enumerate(chunk_sizes(limit)):
        with options(max_binding=limit):
            per = rle._chunk_len(pp.device(), 4)
        across = random_values(rng, n, dtype, high=50)
        for b in chunk_ends(limit, n):  # runs ending at, just before and just after each chunk boundary
            across[max(0, b - 3):b] = across[max(0, b - 4)]
            across[b:b + 2] = across[b - 1]
        inputs = [across, runs_input(rng, n, dtype, max_len=2 * per)]
        if i in (3, 5):
            inputs += [np.full(n, 3, dtype), distinct_input(rng, n, dtype), runs_input(rng, n, dtype, 3, high=2)]
        method = METHODS[i % 2] if i < 5 else "fused"
        for x in inputs:
            with options(max_binding=limit):
                got = pp.rle_encode(x, method=method)
                res = pp.rle_encode(pp.asarray(x), method=method)
                back = pp.rle_decode(res).numpy()
            check_rle(x, got)
            check_rle(x, res.numpy())
            np.testing.assert_array_equal(bits(back), bits(x))


@pytest.mark.parametrize("limit", CHUNK_LIMITS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_chunked_decode(dtype, limit, rng, poison_alloc, binding_guard, monkeypatch):
    windows = []
    inner = rle._record_decode
    monkeypatch.setattr(rle, "_record_decode", lambda *a, **k: windows.append(k.get("window")) or inner(*a, **k))
    max_runs = limit // 4 - 4  # runs that fit one binding
    for r, high in ((7, 3 * limit), (max_runs, 3), (max_runs + 5, limit // 16), (3 * max_runs, 3), (50, 0)):
        values = random_values(rng, r, dtype, high=200)
        counts = rng.integers(0, high + 1, r).astype(np.uint32)
        counts[rng.random(r) < 0.2] = 0
        want = np.repeat(values, counts)
        gv, gc = pp.asarray(values), pp.asarray(counts)
        with options(max_binding=limit):
            got = pp.rle_decode(values, counts)
            g = pp.rle_decode(gv, gc).numpy()
            extra = pp.rle_decode(gv, gc, size=want.size + 41).numpy()
        np.testing.assert_array_equal(bits(got), bits(want))
        np.testing.assert_array_equal(bits(g), bits(want))
        np.testing.assert_array_equal(bits(extra[:want.size]), bits(want))
        assert not extra[want.size:].any()
    assert any(w is not None and w[0] > 0 for w in windows)  # decoded window by window, ends clamped on the fly


def test_one_chunk_records_no_placement(rng, monkeypatch):
    """Within one binding the unchunked kernels run alone (no placement or window pass)."""
    dev = pp.device()
    paths = []
    inner = dev.kernel
    monkeypatch.setattr(dev, "kernel", lambda path, *a, **k: paths.append(path) or inner(path, *a, **k))
    n = 4096
    x = runs_input(rng, n, "int32", max_len=20)
    with options(max_binding=4 * n + 16):
        pp.compact(x, rng.random(n) < 0.5)
        pp.flatnonzero(x, dtype=np.uint32)
        pp.rle_decode(*pp.rle_encode(x))
        pp.rle_decode(pp.rle_encode(pp.asarray(x)))
    with options(max_binding=8 * n + 16):  # int64 indices and 64-bit values: 8 bytes an element
        pp.nonzero(x)
        x64 = x.astype(np.int64)
        pp.compact(x64, rng.random(n) < 0.5)
        pp.rle_decode(pp.rle_encode(pp.asarray(x64)))
    assert "rle/place.wgsl" not in paths
    assert "rle/route.wgsl" not in paths
    with options(max_binding=4 * n - 32):
        pp.compact(x, rng.random(n) < 0.5)
    assert "rle/route.wgsl" in paths and "rle/place.wgsl" not in paths  # chained: no placement
    with options(max_binding=4 * n - 32):
        pp.compact(x, rng.random(n) < 0.5, method="parle")
    assert "rle/place.wgsl" in paths


# Chained chunks with several tiles each (small tiles): the lookback within a chunk, withheld
# states, the staged encoder and the forced repair (recorded for every candidate window).
CHAIN_TILES = dict(max_binding=16384, rle_wg=128, rle_vec4_per_thread=1, rle_compact_vec4_per_thread=1)


@pytest.mark.parametrize("hooks", [{}, {"rle_withhold_period": 2}, {"rle_subgroups": False},
                                   {"rle_max_steps": 0, "rle_max_self": 0, "rle_withhold_period": 1}])
def test_chained_chunks_of_several_tiles(hooks, rng, poison_alloc, binding_guard, monkeypatch):
    dev = pp.device()
    paths = []
    inner = dev.kernel
    monkeypatch.setattr(dev, "kernel", lambda path, *a, **k: paths.append(path) or inner(path, *a, **k))
    with options(**CHAIN_TILES):
        per = rle._chain(dev).per
        assert per >= 4 * rle._tile(dev, np.int32)
    for n in (2 * per, 3 * per + 77):
        across = runs_input(rng, n, "int32", max_len=50, high=3)
        for b in range(per, n, per):  # a run across each boundary, one ending at it
            across[b - 20:b + 30] = 7
            across[b:] += 1
        x = rng.integers(-9, 9, n).astype(np.int32)
        m = rng.random(n) < 0.5
        for xs in (across, x, np.full(n, 5, np.int32), runs_input(rng, n, "int32", max_len=3 * per)):
            with options(**CHAIN_TILES, **hooks):
                got = pp.rle_encode(xs)
                res = pp.rle_encode(pp.asarray(xs))
            check_rle(xs, got)
            check_rle(xs, res.numpy())
        with options(**CHAIN_TILES, **hooks):
            kept = pp.compact(x, m)
            gkept = pp.compact(pp.asarray(x), pp.asarray(m))
            idx = pp.flatnonzero(m)
            idx32 = pp.flatnonzero(pp.asarray(m.astype(np.uint32)), dtype=np.uint32)
        np.testing.assert_array_equal(kept, x[m])
        np.testing.assert_array_equal(gkept.numpy(), x[m])
        np.testing.assert_array_equal(idx, np.flatnonzero(m))
        np.testing.assert_array_equal(idx32.numpy(), np.flatnonzero(m))
    assert "rle/route.wgsl" in paths and "rle/place.wgsl" not in paths


def chunk_patterns(rng, n, per, kinds):
    """A mask of ``n`` whose chunks of ``per`` are, in turn, all kept, none kept, half kept,
    kept at the ends alone (following ``kinds``, 'a' / 'n' / 'h' / 'e')."""
    m = np.zeros(n, bool)
    for j, e0 in enumerate(range(0, n, per)):
        ne = min(per, n - e0)
        kind = kinds[j % len(kinds)]
        if kind == "a":
            m[e0:e0 + ne] = True
        elif kind == "h":
            m[e0:e0 + ne] = rng.random(ne) < 0.5
        elif kind == "e":
            m[[e0, e0 + ne - 1]] = True
    return m


@pytest.mark.parametrize("limit", [256, 1000, 16 + 4 * 256])  # the last: chunks exactly a window long
def test_chained_window_pairs(limit, rng, poison_alloc, binding_guard, monkeypatch):
    """Chained chunks a window long, each bound as two adjacent output windows: items that start
    in one window and run on into the next, a chunk whose items start exactly at a window start
    (every item before kept: the pair before holds them), at the last window (no next one),
    chunks all kept / none kept, 2 to 5 chunks (the route pass from the third), sizes at the
    chunk ends +-1; compact, nonzero and rle_encode (runs across every boundary, a chunk that is
    one run, one of all distinct values) against numpy, outputs poisoned."""
    dev = pp.device()
    paths = []
    inner = dev.kernel
    monkeypatch.setattr(dev, "kernel", lambda path, *a, **k: paths.append(path) or inner(path, *a, **k))
    with options(max_binding=limit):
        c = rle._chain(dev)
    per = c.per
    assert c.window - 4 * dev.storage_align < per <= c.window
    sizes = [per + 1, 2 * per - 1, 2 * per, 2 * per + 1, 3 * per + 7, 5 * per - 1]
    for n in sizes:
        x = distinct_input(rng, n, "int32")
        for kinds in ("a", "n", "an", "na", "ah", "ha", "eah", "hna"):
            m = chunk_patterns(rng, n, per, kinds)
            with options(max_binding=limit):
                got = pp.compact(x, m)
                idx = pp.flatnonzero(pp.asarray(m.view(np.uint8)), dtype=np.uint32)
            np.testing.assert_array_equal(got, x[m])
            np.testing.assert_array_equal(idx.numpy(), np.flatnonzero(m))
        runs = runs_input(rng, n, "float32", max_len=max(2, per // 3), high=3)
        for b in range(per, n, per):  # a run across each boundary, one ending at it
            runs[b - 3:b + 4] = 9.5
            runs[b:] += 0.25
        chunky = np.repeat(rng.permutation(n // per + 1).astype(np.int32), per)[:n]  # a run a chunk
        chunky[per:2 * per] = distinct_input(rng, n, "int32")[per:2 * per]  # all distinct
        for xs in (runs, chunky):
            with options(max_binding=limit):
                res = pp.rle_encode(pp.asarray(xs))
                host = pp.rle_encode(xs)
            check_rle(xs, res.numpy())
            check_rle(xs, host)
    assert "rle/route.wgsl" in paths and "rle/place.wgsl" not in paths


# ------------------------------------------------------------------------- 64-bit values
DTYPES64 = ["int64", "uint64", "float64"]


def values64(rng, n, dtype, max_len=9):
    """Runs of 64-bit values that differ in the high word only, or in the low word only."""
    base = rng.integers(-2, 3, n) * (1 << 40) + rng.integers(0, 2, n)
    x = np.repeat(base, rng.integers(1, max_len + 1, n))[:n]
    return x.astype(dtype) if dtype != "float64" else x.view(np.float64).copy()


def check_rle64(x, got):
    v, c = got
    b = x.view(np.uint64)
    st = np.concatenate([[0], np.flatnonzero(b[1:] != b[:-1]) + 1]) if x.size else np.zeros(0, int)
    assert v.dtype == x.dtype and c.dtype == np.uint32
    np.testing.assert_array_equal(v.view(np.uint64), b[st])
    np.testing.assert_array_equal(c, np.diff(np.append(st, x.size)))


@pytest.mark.parametrize("hooks", [{}, {"hide_shader_int64": True}, {"max_binding": 256}, {"max_binding": 1000}])
@pytest.mark.parametrize("dtype", DTYPES64)
def test_64bit_values(dtype, hooks, rng, poison_alloc, binding_guard):
    for i, n in enumerate([0, 1, 2, 33, 127, 1500]):
        x = values64(rng, n, dtype, max_len=int(rng.integers(1, 300)))
        m = rng.random(n) < 0.5
        method = METHODS[i % 2]
        with options(**hooks):
            got = pp.rle_encode(x, method=method)
            res = pp.rle_encode(pp.asarray(x), method=method)
            back = pp.rle_decode(res).numpy()
            dec = pp.rle_decode(*got)
            gdec = pp.rle_decode(pp.asarray(got[0]), pp.asarray(got[1])).numpy()
            comp = pp.compact(pp.asarray(x), pp.asarray(m), method=method)
            hcomp = pp.compact(x, m, method=method)
        check_rle64(x, got)
        check_rle64(x, res.numpy())
        for y in (back, dec, gdec):
            assert y.dtype == x.dtype
            np.testing.assert_array_equal(y.view(np.uint64), x.view(np.uint64))
        assert int(comp.count.numpy()[0]) == m.sum()
        np.testing.assert_array_equal(comp.numpy().view(np.uint64), x[m].view(np.uint64))
        np.testing.assert_array_equal(hcomp.view(np.uint64), x[m].view(np.uint64))
    nan = np.array([np.nan, np.nan, -0.0, 0.0, 0.0], np.float64)  # equal bits make a run
    if dtype == "float64":
        np.testing.assert_array_equal(pp.rle_encode(nan)[1], [2, 1, 2])
    assert pp.rle_encode([5, 5, 7])[1].tolist() == [2, 1]  # a list of Python ints is int64


# ------------------------------------------------------------------------- 64-bit compaction, fused
def tile64() -> int:
    return rle._wg(pp.device()) * rle._compact_vpt(pp.device()) * 2  # 64-bit elements per compact tile


def random64(rng, n, dtype):
    """Fresh 64-bit values over every bit pattern (high words used; float64: NaN payloads, -0.0)."""
    x = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    if n > 3:
        x[:3] = [0x7FF8_0000_DEAD_BEEF, 0x8000_0000_0000_0000, 0xFFF0_0000_0000_0001]  # NaN payload, -0.0, sNaN
    return x.view(dtype)


@pytest.mark.parametrize("hooks", [{}, {"rle_subgroups": False}, {"rle_withhold_period": 2},
                                   {"rle_max_steps": 0, "rle_max_self": 0}, {"rle_compact_vec4_per_thread": 1},
                                   {"max_binding": 1000}])
@pytest.mark.parametrize("dtype", DTYPES64)
def test_compact64_fused(dtype, hooks, rng, poison_alloc, binding_guard):
    t = tile64() if "rle_compact_vec4_per_thread" not in hooks else rle._wg(pp.device()) * 2
    mdts = [np.bool_, np.uint32, np.int32, np.uint8]
    for i, n in enumerate([1, 2, 3, 5, t - 1, t, t + 1, 3 * t + 7]):
        x = random64(rng, n, dtype)
        m = rng.random(n) < rng.choice([0.02, 0.5, 0.98])
        m = (m * (1 if i % 4 == 0 else int(rng.integers(1, 200)))).astype(mdts[i % 4])
        with options(**hooks):
            comp = pp.compact(pp.asarray(x), pp.asarray(m))
            host = pp.compact(x, m)
        want = x[m != 0].view(np.uint64)
        assert int(comp.count.numpy()[0]) == want.size
        assert comp.data.dtype == x.dtype and host.dtype == x.dtype
        np.testing.assert_array_equal(comp.numpy().view(np.uint64), want)
        np.testing.assert_array_equal(host.view(np.uint64), want)


@pytest.mark.parametrize("hooks", [{}, {"rle_subgroups": False}, {"rle_withhold_period": 2},
                                   {"rle_max_steps": 0, "rle_max_self": 0}, {"rle_vec4_per_thread": 1},
                                   {"max_binding": 1000}])
@pytest.mark.parametrize("dtype", DTYPES64)
def test_rle64_fused(dtype, hooks, rng, poison_alloc, binding_guard):
    # fused.wgsl PAIRS: tiles of WG * vec4 per thread * 2 elements
    t = rle._wg(pp.device()) * _or1(hooks.get("rle_vec4_per_thread"), rle.VEC4_PER_THREAD) * 2
    for i, n in enumerate([1, 2, 3, 5, t - 1, t, t + 1, 3 * t + 7]):
        pool = random64(rng, 40, dtype).view(np.uint64)
        lens = rng.integers(1, [2, 9, 300][i % 3], n)
        x = np.repeat(pool[rng.integers(0, 40, n)], lens)[:n]
        if i % 2:  # runs that differ in one word only
            x[rng.random(n) < 0.3] ^= np.uint64(1 << int(rng.choice([0, 31, 32, 63])))
        x = x.view(dtype)
        with options(**hooks):
            got = pp.rle_encode(x)
            res = pp.rle_encode(pp.asarray(x))
        check_rle64(x, got)
        check_rle64(x, res.numpy())
    if dtype == "float64":  # bits compared: equal NaNs make a run, -0.0 and 0.0 do not
        nan = np.array([np.nan, np.nan, -0.0, 0.0, 0.0], np.float64)
        np.testing.assert_array_equal(pp.rle_encode(nan)[1], [2, 1, 2])


def _or1(v, d):
    return d if v is None else v


def test_compact64_fused_is_one_pass(rng, monkeypatch):
    # one pass of rle/compact.wgsl over the word pairs: no nonzero, no gather (rle/pairs.wgsl)
    dev = pp.device()
    paths = []
    inner = dev.kernel
    monkeypatch.setattr(dev, "kernel", lambda path, *a, **k: paths.append(path) or inner(path, *a, **k))
    x = random64(rng, 3001, np.int64)  # a size no other test plans
    m = rng.random(3001) < 0.5
    np.testing.assert_array_equal(pp.compact(pp.asarray(x), pp.asarray(m)).numpy(), x[m])
    assert "rle/compact.wgsl" in paths and "rle/pairs.wgsl" not in paths and "rle/fused.wgsl" not in paths


@pytest.mark.parametrize("limit", [512, 1000, 16 + 8 * 256])  # the last: chunks exactly a window long
def test_chained_64bit_window_pairs(limit, rng, poison_alloc, binding_guard, monkeypatch):
    """Window pairs with the geometry in 8-byte items (``_chain(dev, 8)``): 64-bit compact (window
    start and length in words), int64 nonzero (word-pair indices) and 64-bit rle_encode (values
    and lengths in the one pass) whose items run from one window into the next, start exactly at a
    window start, lie in the last window; chunks all / none kept, runs across every boundary or
    ending at it in the high word only; against numpy, outputs poisoned."""
    dev = pp.device()
    paths = []
    inner = dev.kernel
    monkeypatch.setattr(dev, "kernel", lambda path, *a, **k: paths.append(path) or inner(path, *a, **k))
    with options(max_binding=limit):
        c = rle._chain(dev, 8)
    per = c.per
    assert c.window - dev.storage_align < per <= c.window
    for n in [per + 1, 2 * per - 1, 2 * per, 2 * per + 1, 3 * per + 7, 5 * per - 1]:
        x = random64(rng, n, "float64")
        for kinds in ("a", "n", "an", "na", "ah", "ha", "eah", "hna"):
            m = chunk_patterns(rng, n, per, kinds)
            with options(max_binding=limit):
                kept = pp.compact(pp.asarray(x), pp.asarray(m))
                idx = pp.flatnonzero(pp.asarray(m.view(np.uint8)))
            np.testing.assert_array_equal(kept.numpy().view(np.uint64), x[m].view(np.uint64))
            assert idx.data.dtype == np.int64
            np.testing.assert_array_equal(idx.numpy(), np.flatnonzero(m))
        runs = values64(rng, n, "uint64", max_len=max(2, per // 3))
        for j, b in enumerate(range(per, n, per)):
            if j % 2:  # a run across the boundary
                runs[b - 3:b + 4] = runs[b - 3]
            else:  # one ending at it, the next differing in the high word only
                runs[b - 3:b + 4] = runs[b - 3]
                runs[b:b + 4] ^= np.uint64(1 << 32)
        chunky = np.repeat(random64(rng, n // per + 1, "uint64"), per)[:n]  # a run a chunk
        distinct = random64(rng, n, "uint64")
        chunky[:per // 2] = distinct[:per // 2]  # chunk 0 half distinct: chunk 1's runs cross windows
        chunky[per:2 * per] = distinct[per:2 * per]  # all distinct
        for xs in (runs.view(np.int64), chunky):
            with options(max_binding=limit):
                res = pp.rle_encode(pp.asarray(xs))
                host = pp.rle_encode(xs)
            check_rle64(xs, res.numpy())
            check_rle64(xs, host)
    assert "rle/route.wgsl" in paths and "rle/place.wgsl" not in paths and "rle/pairs.wgsl" not in paths


# ------------------------------------------------------------------------- int64 indices
@pytest.mark.parametrize("hooks", [{}, {"hide_shader_int64": True}, {"max_binding": 1000}, {"max_binding": 4096},
                                   {"rle_withhold_period": 2}, {"rle_max_steps": 0, "rle_max_self": 0}])
def test_nonzero_int64_matches_numpy(hooks, rng, poison_alloc, binding_guard):
    """Default int64 indices (word pairs from the fused pass; chained past one binding), the
    uint32 path, numpy's per-axis tuple (host and GPU), against np.nonzero / np.flatnonzero."""
    for i, n in enumerate([1, 2, 33, 4095, 4097, 9001]):
        p = rng.choice([0.02, 0.5, 0.98])
        masks = [rng.random(n) < p, (rng.random(n) < p).astype(np.uint32) * rng.integers(1, 2**32, n, np.uint32),
                 (rng.random(n) < p).astype(np.int32) * -3, np.where(rng.random(n) < p, np.nan, 0.0)]
        m = masks[i % 4]
        method = METHODS[i % 2]
        with options(**hooks):
            flat = pp.flatnonzero(m, method=method)
            flat32 = pp.flatnonzero(m, dtype=np.uint32, method=method)
            gm = pp.asarray(m if m.dtype != np.float64 else m != 0)
            gflat = pp.flatnonzero(gm, method=method)
            shape = (n // 3, 3) if n % 3 == 0 and n > 3 else (1, n)
            tup = pp.nonzero(m.reshape(shape), method=method)
            gtup = pp.nonzero(gm.reshape(shape), method=method)
        want = np.flatnonzero(m)
        assert flat.dtype == np.int64 and flat32.dtype == np.uint32 and gflat.data.dtype == np.int64
        np.testing.assert_array_equal(flat, want)
        np.testing.assert_array_equal(flat32, want)
        assert int(gflat.count.numpy()[0]) == want.size
        np.testing.assert_array_equal(gflat.numpy(), want)
        wt = np.nonzero(m.reshape(shape))
        assert len(tup) == len(gtup) == 2
        for got, ggot, w in zip(tup, gtup, wt, strict=True):
            assert got.dtype == np.int64 and ggot.data.dtype == np.int64
            np.testing.assert_array_equal(got, w)
            np.testing.assert_array_equal(ggot.numpy(), w)


@pytest.mark.parametrize("hooks", [{}, {"max_binding": 1000}, {"max_binding": 4096}])
@pytest.mark.parametrize("method", METHODS)
def test_nonzero_int64_base_carries_into_the_high_word(method, hooks, rng, poison_alloc):
    """A chunk's 64-bit base (pywgpuprims.stream / dask) is added by the pass that writes the
    indices, with its carry: indices past 2^32 are exact."""
    for n, base in ((5000, 2**32 - 2500), (777, 2**40 + 2**32 - 1), (3, 2**33)):
        m = rng.random(n) < 0.5
        with options(**hooks):
            got = rle._flatnonzero(m, np.int64, method, "flatnonzero", base=base)
        np.testing.assert_array_equal(got, np.flatnonzero(m) + base)


def test_nonzero_dtypes_refused():
    with pytest.raises(pp.InputError, match="flatnonzero: dtype int32: expected int64"):
        pp.flatnonzero(np.ones(3), dtype=np.int32)
    with pytest.raises(pp.InputError, match="nonzero: dtype 'nope' is not a dtype"):
        pp.nonzero(np.ones(3), dtype="nope")
    with pytest.raises(pp.InputError, match="nonzero: a 0-d array"):
        pp.nonzero(np.array(3))
    assert pp.nonzero(np.zeros((2, 0, 3))) == () or all(a.size == 0 for a in pp.nonzero(np.zeros((2, 0, 3))))
    assert pp.flatnonzero(np.zeros(0)).dtype == np.int64


def test_64bit_fused_passes(rng, monkeypatch):
    """64-bit rle_encode is one fused pass (and the tile fix-up), no gather; past one binding
    64-bit compact / rle_encode and int64 nonzero chain their chunks (a route pass, no placement)."""
    dev = pp.device()
    paths = []
    inner = dev.kernel
    monkeypatch.setattr(dev, "kernel", lambda path, *a, **k: paths.append(path) or inner(path, *a, **k))
    n = 3003
    x = values64(rng, n, "int64", max_len=30)
    m = rng.random(n) < 0.5
    check_rle64(x, pp.rle_encode(x))
    np.testing.assert_array_equal(pp.flatnonzero(m), np.flatnonzero(m))
    assert "rle/fused.wgsl" in paths and "rle/fixup.wgsl" in paths and "rle/pairs.wgsl" not in paths
    paths.clear()
    with options(max_binding=4096):
        check_rle64(x, pp.rle_encode(x))
        np.testing.assert_array_equal(pp.compact(pp.asarray(x), pp.asarray(m)).numpy(), x[m])
        np.testing.assert_array_equal(pp.flatnonzero(m), np.flatnonzero(m))
    assert "rle/route.wgsl" in paths and "rle/place.wgsl" not in paths and "rle/pairs.wgsl" not in paths


@pytest.mark.parametrize("hooks", [{}, {"rle_withhold_period": 2}, {"rle_max_steps": 0, "rle_max_self": 0,
                                                                  "rle_withhold_period": 1}])
def test_chained_64bit_chunks_of_several_tiles(hooks, rng, poison_alloc, binding_guard):
    """Chained chunks of 64-bit values / int64 indices with several tiles each, runs across
    every chunk boundary (values equal, or differing in one word only)."""
    dev = pp.device()
    with options(**CHAIN_TILES):
        per = rle._chain64(dev, 1 << 14).per
        assert per >= 4 * rle._pairs_tile(dev)
    for n in (2 * per, 3 * per + 77):
        x = values64(rng, n, "uint64", max_len=40)
        for b in range(per, n, per):
            x[b - 20:b + 30] = x[b - 20]  # a run across the boundary
            x[b + 40:] ^= np.uint64(1 << 32)  # and one that ends just past it in the high word
        m = rng.random(n) < 0.5
        with options(**CHAIN_TILES, **hooks):
            got = pp.rle_encode(x)
            res = pp.rle_encode(pp.asarray(x))
            kept = pp.compact(pp.asarray(x), pp.asarray(m))
            idx = pp.flatnonzero(m)
        check_rle64(x, got)
        check_rle64(x, res.numpy())
        np.testing.assert_array_equal(pp.rle_decode(res).numpy(), x)
        np.testing.assert_array_equal(kept.numpy(), x[m])
        np.testing.assert_array_equal(idx, np.flatnonzero(m))


_THREAD_SCRIPT64 = textwrap.dedent("""
    import numpy as np, pywgpuprims as pp
    rng = np.random.default_rng()
    for sg in (True, False):
        for n in (4095, 4097, 20001):
            x = rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64)
            m = rng.random(n) < 0.5
            with pp.device().using(rle_subgroups=sg):
                got = pp.compact(pp.asarray(x), pp.asarray(m)).numpy()
            assert np.array_equal(got.view(np.uint64), x[m].view(np.uint64))
            y = x.view(np.uint64)[rng.integers(0, 5, n)].view(np.float64)
            with pp.device().using(rle_subgroups=sg):
                v, c = pp.rle_encode(y)
            b = y.view(np.uint64)
            st = np.concatenate([[0], np.flatnonzero(b[1:] != b[:-1]) + 1])
            assert np.array_equal(v.view(np.uint64), b[st]) and np.array_equal(c, np.diff(np.append(st, n)))
            with pp.device().using(rle_subgroups=sg, max_binding=16384):  # chained chunks
                v, c = pp.rle_encode(y)
                idx = pp.flatnonzero(m)
            assert np.array_equal(v.view(np.uint64), b[st]) and np.array_equal(c, np.diff(np.append(st, n)))
            assert np.array_equal(idx, np.flatnonzero(m))
    print("ok")
""")


@pytest.mark.parametrize("threads", ["1", "8"])
def test_compact64_lavapipe_thread_counts(threads):
    run_with_lavapipe_threads(_THREAD_SCRIPT64, threads)
