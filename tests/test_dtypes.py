"""scan / reduce over every numpy dtype against numpy: result dtypes, 64-bit integers exact through
shader-int64 and through word pairs (forced), float64 or its error, narrow inputs and results, NaN
with min / max / fmin / fmax, axes, out=, tile and chunk boundaries, thread counts, determinism."""

import contextlib
import textwrap

import numpy as np
import pytest
from conftest import poisoned, run_with_lavapipe_threads

import pywgpuprims as pp
from pywgpuprims._typed import ITEMS, RITEMS, WG

TILE = WG * ITEMS      # the typed scan's tile
RTILE = WG * RITEMS    # the typed reduction's
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]
UFUNC = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
         "xor": np.bitwise_xor, "fmin": np.fmin, "fmax": np.fmax}


def int64_paths():
    dev = pp.device()
    paths = [pytest.param("pairs", id="pairs")]
    if "shader-int64" in dev.features:
        paths.insert(0, pytest.param("native", id="native"))
    return paths


def path_ctx(path):
    return pp.device().using(hide_shader_int64=True) if path == "pairs" else contextlib.nullcontext()


def needs_f64(dtype):
    if np.dtype(dtype) == np.float64 and "shader-f64" not in pp.device().features:
        pytest.skip("adapter has no shader-f64")


def values(rng, n, dtype):
    """Random values spanning the dtype, with its extremes, and (ints) numbers near 2^31, 2^32,
    2^63 where they fit."""
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(n) < 0.5
    if d.kind == "f":
        return (rng.standard_normal(n) * 100).astype(d)
    info = np.iinfo(d)
    x = rng.integers(info.min, info.max, n, dtype=d, endpoint=True)
    special = np.array([info.min, info.max, 0, 1, -1 if info.min else 2] +
                       ([2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1] if info.max >= 2**32 else []) +
                       ([2**63 - 1, -(2**63)] if d == np.int64 else [2**63, 2**64 - 1] if d == np.uint64 else []),
                       dtype=object).astype(d)
    flat = x.reshape(-1)
    k = min(flat.size, special.size)
    flat[rng.choice(flat.size, k, replace=False)] = special[:k]
    return x


def assert_scan(got, x, op, exclusive=False, dtype=None, axis=-1):
    rd = np.cumsum(x[:0] if x.ndim else x, dtype=dtype).dtype if op == "add" else np.dtype(dtype or x.dtype)
    assert got.dtype == rd, (got.dtype, rd)
    if op == "add" and rd.kind == "f":
        ref = np.cumsum(x.astype(np.float64), axis=axis)
        tol = x.shape[axis] * np.finfo(rd).eps * np.cumsum(np.abs(x.astype(np.float64)), axis=axis) + 1e-30
        if rd == np.float16:  # accumulated in float32, rounded once per element
            tol = tol + np.abs(ref) * 2.0**-10
        assert np.all(np.abs(got.astype(np.float64) - ref) <= tol)
        return
    ref = UFUNC[op].accumulate(x, axis=axis, dtype=rd)
    if exclusive:
        ref = np.roll(ref, 1, axis=axis)
        from pywgpuprims._dtypes import exclusive_identity
        idx = [slice(None)] * ref.ndim
        idx[axis] = 0
        ref[tuple(idx)] = exclusive_identity(op, rd)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("path", int64_paths())
@pytest.mark.parametrize("dtype", ["bool"] + INTS)
def test_integer_scan_and_reduce_all_ops(dtype, path, rng):
    ops = ["add", "min", "max", "and", "or", "xor"]
    with path_ctx(path):
        for n in [1, 3, TILE - 1, TILE + 1, 2 * RTILE + 5]:
            x = values(rng, n, dtype)
            for op in ops:
                exclusive = op in ("add", "min", "xor") and n % 2 == 1
                assert_scan(pp.scan(x, op=op, exclusive=exclusive), x, op, exclusive)
                got = pp.reduce(x, op=op)
                want = UFUNC[op].reduce(x, dtype=np.sum(x[:1]).dtype if op == "add" else x.dtype)
                assert got == want and np.asarray(got).dtype == np.asarray(want).dtype, (op, n, got, want)


@pytest.mark.parametrize("path", int64_paths())
def test_64_bit_sums_wrap_as_numpy(path, rng):
    """Sums past 2^32 and 2^63, negative numbers, wrap-around: numpy's int64 / uint64 exactly."""
    with path_ctx(path):
        big = np.full(TILE * 3 + 17, 2**62 + 12345, np.int64)
        big[::7] = -(2**63) + 3
        assert_scan(pp.scan(big), big, "add")
        assert pp.reduce(big) == big.sum()
        u = np.full(RTILE * 2 + 1, 2**32 - 1, np.uint32)
        assert_scan(pp.scan(u), u, "add")
        assert pp.reduce(u) == u.sum() == (2**32 - 1) * u.size
        assert int(pp.reduce(np.full(2_000_000, 4000, np.uint32))) == 8_000_000_000
        neg = values(rng, 50_001, np.int32)
        assert_scan(pp.scan(neg), neg, "add")
        assert_scan(pp.scan(neg, dtype=np.uint64), neg, "add", dtype=np.uint64)  # sign-extended, then wraps


@pytest.mark.parametrize("path", int64_paths())
def test_chunks_past_the_binding_limit(path, rng, dev):
    """Pieces of a long segment carry their totals; rows of a batch split at aligned rows."""
    with path_ctx(path), dev.using(max_binding=64 * 1024):
        for dtype in ["int64", "uint8", "int32"]:
            x = values(rng, 3 * 8192 + 77, dtype)
            assert_scan(pp.scan(x), x, "add")
            assert_scan(pp.scan(x, op="max", exclusive=True), x, "max", True)
            assert pp.reduce(x) == np.sum(x)
            rows = values(rng, (37, 1001), dtype)
            assert_scan(pp.scan(rows), rows, "add")
            np.testing.assert_array_equal(pp.reduce(rows, axis=-1), rows.sum(axis=-1))


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_scan_and_reduce(dtype, rng):
    needs_f64(dtype)
    for n in [1, TILE - 1, TILE + 1, RTILE * 3 + 2]:
        x = values(rng, n, dtype)
        assert_scan(pp.scan(x), x, "add")
        for op in ["min", "max", "fmin", "fmax"]:
            assert_scan(pp.scan(x, op=op), x, op)
            assert pp.reduce(x, op=op) == UFUNC[op].reduce(x)
        ref = np.sum(x.astype(np.float64))
        tol = n * np.finfo(dtype).eps * np.sum(np.abs(x.astype(np.float64))) + abs(ref) * np.finfo(dtype).eps
        assert abs(float(pp.reduce(x)) - ref) <= tol


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_propagates_through_min_max_and_fmin_fmax_ignore_it(dtype, rng):
    needs_f64(dtype)
    x = values(rng, TILE * 2 + 3, dtype)
    x[[5, TILE + 1]] = np.nan
    x[7] = np.inf
    x[9] = -np.inf
    for op in ["min", "max", "fmin", "fmax"]:
        assert_scan(pp.scan(x, op=op), x, op)
        np.testing.assert_array_equal(pp.reduce(x, op=op), UFUNC[op].reduce(x))
    allnan = np.full(5, np.nan, dtype)
    assert np.isnan(pp.reduce(allnan, op="fmin")) and np.isnan(pp.reduce(allnan, op="max"))
    assert np.isnan(pp.reduce(x)) and np.isnan(pp.scan(x)[-1])


def test_float64_without_shader_f64_raises_naming_the_choice(rng):
    x = rng.standard_normal(100)
    with pp.device().using(hide_shader_f64=True):
        with pytest.raises(pp.InputError, match=r"scan: float64 needs the adapter's shader-f64.*dtype=np.float32"):
            pp.scan(x)
        with pytest.raises(pp.InputError, match="reduce: float64 needs"):
            pp.reduce(x)
        got = pp.scan(x, dtype=np.float32)  # the choice it names: computed in float32 (host conversion)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, np.cumsum(x), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "float16"])
def test_narrow_results(dtype, rng):
    """Results of 8 and 16 bits (dtype= or the op keeps the input's): computed in 32 bits, packed."""
    for n in [1, 2, 3, 5, TILE + 3]:
        x = values(rng, n, dtype)
        for op in ["max", "min"] + (["xor", "and"] if dtype != "float16" else []):
            assert_scan(pp.scan(x, op=op), x, op)
            assert pp.reduce(x, op=op) == UFUNC[op].reduce(x)
        if dtype != "float16":
            assert_scan(pp.scan(x, dtype=dtype), x, "add", dtype=dtype)  # wraps as numpy
        g = pp.scan(pp.asarray(x.astype(np.uint8) if dtype == "bool" else x), op="max")
        assert isinstance(g, pp.GpuArray)


def test_lists_scalars_and_dtype_argument():
    np.testing.assert_array_equal(pp.scan([1, 2, 3]), np.cumsum([1, 2, 3]))
    assert pp.scan([1, 2, 3]).dtype == np.int64
    np.testing.assert_array_equal(pp.scan(5), np.cumsum(5))
    assert pp.reduce(7) == 7
    if "shader-f64" in pp.device().features:
        assert pp.reduce([1.5, 2.5]) == 4.0
    else:
        with pytest.raises(pp.InputError, match="shader-f64"):
            pp.reduce([1.5, 2.5])
    np.testing.assert_array_equal(pp.scan(np.arange(10)), np.cumsum(np.arange(10)))
    np.testing.assert_array_equal(pp.scan(np.array([1.7, 2.2]), dtype=np.int32), np.cumsum([1.7, 2.2], dtype=np.int32))
    np.testing.assert_array_equal(pp.cumsum(np.ones((2, 3), np.int8)), np.cumsum(np.ones((2, 3), np.int8)))
    assert pp.count_nonzero(np.array([0, 2, 0, 3, 4])) == 3
    np.testing.assert_array_equal(pp.count_nonzero(np.eye(3, dtype=bool), axis=0), [1, 1, 1])


@pytest.mark.parametrize("shape,axis", [((5, 6, 7), None), ((5, 6, 7), 0), ((5, 6, 7), 1), ((5, 6, 7), -1),
                                        ((4, 1, 3000), -1), ((3000, 1), 0), ((2, 3, 1, 1), 1)])
def test_axes(shape, axis, rng):
    x = values(rng, shape, "int16")
    np.testing.assert_array_equal(pp.scan(x, axis=axis), np.cumsum(x, axis=axis))
    np.testing.assert_array_equal(pp.reduce(x, axis=axis), np.sum(x, axis=axis))
    np.testing.assert_array_equal(pp.reduce(x, op="max", axis=axis), np.max(x, axis=axis))
    f = x.astype(np.float32)
    np.testing.assert_array_equal(pp.scan(f, op="max", axis=axis), np.maximum.accumulate(
        f.ravel() if axis is None else f, axis=0 if axis is None else axis))
    g = pp.asarray(x)
    if axis is None or all(s == 1 for s in shape[(axis % len(shape)) + 1:]):
        np.testing.assert_array_equal(pp.scan(g, axis=axis).numpy(), np.cumsum(x, axis=axis))
        np.testing.assert_array_equal(np.asarray(pp.reduce(g, axis=axis).numpy()), np.sum(x, axis=axis))
    else:
        with pytest.raises(pp.InputError, match="move the axis on the host"):
            pp.scan(g, axis=axis)


def test_non_contiguous_views(rng):
    x = values(rng, (300, 41), "int64")
    for view in (x[::-1], x[:, ::2], x.T, x[::3, 5:]):
        np.testing.assert_array_equal(pp.scan(view), np.cumsum(view, axis=-1))
        np.testing.assert_array_equal(pp.scan(view, axis=0), np.cumsum(view, axis=0))
        np.testing.assert_array_equal(pp.reduce(view, axis=0), view.sum(axis=0))


def test_out_for_numpy_and_gpuarray(rng):
    x = values(rng, 10_001, "uint32")
    g = pp.asarray(x)
    host_out = np.zeros(10_001, np.uint64)
    assert pp.scan(g, out=host_out) is host_out  # scan(GpuArray, out=ndarray) writes out
    np.testing.assert_array_equal(host_out, np.cumsum(x))
    o32 = np.zeros(10_001, np.uint32)
    assert pp.scan(g, out=o32) is o32  # without dtype=, out's dtype is the one computed in (numpy's rule)
    np.testing.assert_array_equal(o32, np.cumsum(x, dtype=np.uint32))
    gout = poisoned((10_001,), np.uint64)
    assert pp.scan(x, out=gout) is gout
    np.testing.assert_array_equal(gout.numpy(), np.cumsum(x))
    gout = poisoned((10_001,), np.uint64)
    assert pp.scan(g, out=gout) is gout
    np.testing.assert_array_equal(gout.numpy(), np.cumsum(x))
    x3 = values(rng, (4, 5, 6), "int32")
    o3 = np.zeros((4, 5, 6), np.int64)
    assert pp.scan(x3, axis=1, out=o3) is o3
    np.testing.assert_array_equal(o3, np.cumsum(x3, axis=1))
    with pytest.raises(pp.InputError, match="out has shape"):
        pp.scan(g, out=np.zeros(3, np.uint64))
    with pytest.raises(pp.InputError, match="out has dtype"):
        pp.scan(g, out=pp.GpuArray.empty((10_001,), np.int32), dtype=np.uint64)
    with pytest.raises(pp.InputError, match="out must be"):
        pp.scan(g, out=[0] * 10_001)


def test_errors():
    with pytest.raises(pp.InputError, match="needs an integer or bool dtype"):
        pp.scan(np.ones(3, np.float32), op="and")
    with pytest.raises(pp.InputError, match="no identity"):
        pp.reduce(np.zeros(0, np.int64), op="max")
    with pytest.raises(pp.InputError, match="is not a dtype|not supported"):
        pp.scan(np.ones(3), dtype="complex64")
    with pytest.raises(pp.InputError, match="axis"):
        pp.reduce(np.ones((2, 2)), axis=3)
    assert pp.reduce(np.zeros((0, 3), np.int8), axis=0).tolist() == [0, 0, 0]


_DETERMINISM = textwrap.dedent("""
    import numpy as np, pywgpuprims as pp
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(13312 * 40 + 5) * 1e3).astype(np.float32)
    for kw in ({"deterministic": True}, {"op": "max"}):
        first = pp.scan(x, **kw)
        for _ in range(6):
            assert np.array_equal(pp.scan(x, **kw).view(np.uint32), first.view(np.uint32)), kw
    y = rng.integers(-2**62, 2**62, 13312 * 9 + 1)
    with pp.device().using(hide_shader_int64=True):
        assert np.array_equal(pp.scan(y), np.cumsum(y)) and pp.reduce(y) == y.sum()
    assert np.array_equal(pp.scan(y), np.cumsum(y))
    print("ok")
""")


@pytest.mark.parametrize("threads", ["1", "2", "8"])
def test_deterministic_and_typed_kernels_at_thread_counts(threads):
    """deterministic=True float32 sums (and every typed scan) repeat bit for bit, and the typed
    kernels stay right, at lavapipe's thread counts."""
    run_with_lavapipe_threads(_DETERMINISM, threads)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "uint16", "float16", "int64", "uint64", "float64"])
def test_compaction_and_rle_take_other_dtypes(dtype, rng):
    """Carried as uint8 views, widened 16-bit words or (compaction) 64-bit word pairs."""
    from pywgpuprims.compaction import TILE as RLE_TILE
    for n in [1, 5, RLE_TILE - 1, RLE_TILE + 1, 3 * RLE_TILE + 7]:
        x = values(rng, n, dtype)
        m = rng.random(n) < 0.4
        got = pp.compact(x, m)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, x[m])
        got_nz, want_nz = pp.nonzero(x), np.nonzero(x)  # x itself as a mask: x != 0
        assert len(got_nz) == len(want_nz) == 1 and got_nz[0].dtype == want_nz[0].dtype
        np.testing.assert_array_equal(got_nz[0], want_nz[0])
        np.testing.assert_array_equal(pp.flatnonzero(x), np.flatnonzero(x))
        r = np.repeat(x[: -(-n // 4)], 4)[:n]
        v, c = pp.rle_encode(r)
        starts = np.flatnonzero(np.r_[True, r.view(f"u{r.itemsize}")[1:] != r.view(f"u{r.itemsize}")[:-1]])
        assert v.dtype == r.dtype
        np.testing.assert_array_equal(v, r[starts])
        np.testing.assert_array_equal(c, np.diff(np.r_[starts, r.size]))
        np.testing.assert_array_equal(pp.rle_decode(v, c), r)
    if dtype in ("bool", "int8"):
        g = pp.GpuArray.empty((5,), dtype)
        pp.device().upload(g.buffer, np.array([1, 0, 1, 1, 0], dtype))
        res = pp.compact(g, pp.asarray(np.array([1, 1, 0, 1, 0], np.uint8)))
        assert res.data.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(res.numpy(), np.array([1, 0, 1], dtype))
    elif np.dtype(dtype).itemsize == 8:  # GpuArray compaction of 64-bit values: word pairs
        x = values(rng, 1000, dtype)
        m = rng.random(1000) < 0.4
        res = pp.compact(pp.asarray(x), pp.asarray(m.astype(np.uint8)))
        np.testing.assert_array_equal(res.numpy(), x[m])


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "uint16", "float16"])
def test_sat_and_bracket_match_take_narrow_dtypes(dtype, rng):
    x = values(rng, (70, 90), dtype)
    if np.dtype(dtype).kind == "f":
        x = rng.integers(-3, 3, (70, 90)).astype(dtype)
    ref = x.astype(np.float64).cumsum(0).cumsum(1)
    got = pp.summed_area_table(x)
    assert got.dtype == np.cumsum(x[:0]).dtype  # numpy's: int64 / uint64, float16 for float16
    if np.dtype(dtype).kind in "iuf" and np.dtype(dtype) != np.bool_:
        np.testing.assert_array_equal(got, ref.astype(got.dtype))  # float16: summed in float32, rounded once
    else:
        np.testing.assert_allclose(got, ref)
    if dtype == "float16":
        return  # bracket_match takes integer and bool flags only
    opens = values(rng, 3000, dtype)
    link, depth = pp.bracket_match(opens)
    link_ref, depth_ref = pp.bracket_match((opens != 0).astype(np.uint8))
    np.testing.assert_array_equal(link, link_ref)
    np.testing.assert_array_equal(depth, depth_ref)


@pytest.mark.parametrize("path", int64_paths())
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32", "float64"])
def test_count_nonzero_reads_any_dtype_on_the_gpu(dtype, path, rng):
    """One reading pass (no host-side bool array); float64 is read as words, so no shader-f64."""
    x = values(rng, (7, RTILE + 3), dtype)
    x.reshape(-1)[rng.random(x.size) < 0.5] = 0
    if x.dtype.kind == "f":
        x[0, :3] = np.nan
        x[1, :3] = -0.0
    with path_ctx(path), pp.device().using(hide_shader_f64=True) if path == "pairs" else contextlib.nullcontext():
        assert pp.count_nonzero(x) == np.count_nonzero(x)
        for axis in (0, 1, -1):
            np.testing.assert_array_equal(pp.count_nonzero(x, axis=axis), np.count_nonzero(x, axis=axis))
