"""Summed-area tables in numpy's result dtypes: 64-bit integer tables exact through shader-int64
and through pairs of 32-bit words (forced with the hide_shader_int64 hook), float64 through
shader-f64 or its error, narrow inputs read packed, ``dtype=``, tile (32 x 32 for 8-byte sums)
and binding boundaries, poisoned outputs, lavapipe thread counts.

Oracle: ``np.cumsum(np.cumsum(x, axis=0), axis=1)`` (with ``dtype=`` where given).
"""

import contextlib
import textwrap

import numpy as np
import pytest
from conftest import POISON_U32, run_with_lavapipe_threads

import pywgpuprims as pp


@pytest.fixture(autouse=True)
def poison_outputs(monkeypatch):
    """Every array the primitives allocate starts as poison, so unwritten elements show."""
    original = pp.GpuArray.empty

    def empty(shape, dtype, dev=None):
        g = original(shape, dtype, dev)
        words = g.buffer.size // 4
        if words:
            pp.device().write(g.buffer, np.full(words, POISON_U32, np.uint32).tobytes())
        return g

    monkeypatch.setattr(pp.GpuArray, "empty", staticmethod(empty))


def int64_paths():
    paths = [pytest.param("pairs", id="pairs")]
    if "shader-int64" in pp.device().features:
        paths.insert(0, pytest.param("native", id="native"))
    return paths


def path_ctx(path):
    return pp.device().using(hide_shader_int64=True) if path == "pairs" else contextlib.nullcontext()


def has_f64():
    return "shader-f64" in pp.device().features


def rand(rng, shape, dtype):
    """Values spanning the dtype (ints: its whole range, so 64-bit sums wrap; with its extremes)."""
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind == "f":
        return (rng.standard_normal(shape) * 100).astype(d)
    info = np.iinfo(d)
    x = rng.integers(info.min, info.max, shape, dtype=d, endpoint=True)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, min(2, flat.size), replace=False)] = [info.min, info.max][:min(2, flat.size)]
    return x


def ref(x, dtype=None):
    return np.cumsum(np.cumsum(x, axis=0, dtype=dtype), axis=1, dtype=dtype)


def check(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        tol = np.finfo(want.dtype).eps * 8 * np.sqrt(want.shape[0] * want.shape[1])
        np.testing.assert_allclose(got, want, rtol=0, atol=tol * (np.abs(want).max() + 1))
    else:
        np.testing.assert_array_equal(got, want)


# 32 x 32 tiles for 8-byte sums (64 x 64 for 4-byte ones): sides around both; rows a multiple of 4
# long (the vec4 tiles) among them
SHAPES = [(1, 1), (1, 33), (33, 1), (31, 32), (32, 33), (33, 65), (64, 63), (65, 130), (97, 31, 3), (40, 36),
          (65, 128), (129, 68)]


@pytest.mark.parametrize("path", int64_paths())
@pytest.mark.parametrize("method", ["overlapped", "rt"])
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_sat_64bit_inputs(shape, dtype, method, path, rng):
    x = rand(rng, shape, dtype)
    with path_ctx(path):
        got = pp.summed_area_table(x, method=method)
    check(got, ref(x))


@pytest.mark.parametrize("path", int64_paths())
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32"])
@pytest.mark.parametrize("shape", [(33, 65), (64, 64, 2), (5, 7), (65, 132)])
def test_sat_narrow_inputs_widen_to_64(shape, dtype, path, rng):
    """numpy's result dtype (int64 / uint64), read packed on the GPU; sums of int32 / uint32 pass
    2**32, so a 32-bit table would wrap."""
    x = rand(rng, shape, dtype)
    with path_ctx(path):
        got = pp.summed_area_table(x)
        g = pp.summed_area_table(pp.asarray(x))
    want = ref(x)
    assert want.dtype in (np.int64, np.uint64)
    check(got, want)
    check(g.numpy(), want)
    if dtype in ("int32", "uint32") and x.size > 100:
        assert np.abs(want.astype(np.float64)).max() > 2**32


def test_sat_values_past_32_bits(rng):
    """A table of ones times 2**31 + 1: every entry past 32 bits, exact on both paths."""
    x = np.full((70, 70), 2**31 + 1, np.int64)
    for path in int64_paths():
        with path_ctx(path.values[0]):
            check(pp.summed_area_table(x), ref(x))
            check(pp.summed_area_table(x.astype(np.uint32)), ref(x.astype(np.uint32)))


@pytest.mark.parametrize("path", int64_paths())
@pytest.mark.parametrize("dtype, out", [("uint8", "uint32"), ("int16", "int32"), ("int64", "int32"),
                                        ("uint8", "int8"), ("int32", "int16"), ("uint16", "float32"),
                                        ("int8", "uint64"), ("bool", "bool"), ("float32", "int64"),
                                        ("float16", None), ("uint64", "float32")])
def test_sat_dtype_argument(dtype, out, path, rng):
    """``dtype=`` as np.cumsum's: 32-bit tables wrap, 8- and 16-bit ones are packed, casts the
    kernels do not make are numpy's on the host."""
    x = rand(rng, (45, 70) if out != "uint32" else (70, 68), dtype)
    if dtype == "float32":
        x = rng.integers(-1000, 1000, x.shape).astype(np.float32) + np.float32(0.25)
    if dtype == "float16":
        x = rng.integers(-3, 3, x.shape).astype(np.float16)
    with path_ctx(path):
        got = pp.summed_area_table(x, dtype=out)
    want = ref(x, out)
    if dtype == "float16":  # summed in float32, rounded once
        want = ref(x.astype(np.float32)).astype(np.float16)
    if want.dtype == np.float32 and dtype == "uint64":
        want = ref(x.astype(np.float32))
    check(got, want)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("method", ["overlapped", "rt"])
def test_sat_float64(shape, method, rng):
    if not has_f64():
        pytest.skip("adapter has no shader-f64")
    x = rand(rng, shape, "float64")
    got = pp.summed_area_table(x, method=method)
    want = ref(x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * (np.abs(want).max() + 1) * np.sqrt(x.size))


def test_sat_float32_keeps_float32(rng):
    x = rand(rng, (70, 68), "float32")
    g = pp.summed_area_table(pp.asarray(x))
    assert g.dtype == np.float32
    check(g.numpy(), ref(x))


def test_sat_float64_without_shader_f64(rng):
    """Without shader-f64: InputError naming the adapter and dtype=np.float32, which then works."""
    x = rand(rng, (40, 40), "float64")
    with pp.device().using(hide_shader_f64=True):
        with pytest.raises(pp.InputError, match=r"summed_area_table: float64 needs .*shader-f64.*dtype=np.float32"):
            pp.summed_area_table(x)
        with pytest.raises(pp.InputError, match=pp.device().adapter_summary.split(" (")[0]):
            pp.summed_area_table(x)
        with pytest.raises(pp.InputError, match="summed_area_table"):
            pp.summed_area_table(np.ones((3, 3), np.int32), dtype=np.float64)
        got = pp.summed_area_table(x, dtype=np.float32)
    check(got, ref(x, np.float32))
    with pp.device().using(hide_shader_f64=True), pytest.raises(pp.InputError, match="shader-f64"):
        pp.summed_area_table(pp.asarray(x), dtype=np.float32)


def _limits(row_bytes: int) -> list[int]:
    align = pp.device().storage_align
    return [4 * row_bytes + 3, 6 * row_bytes - 1, -(-9 * row_bytes // align) * align, 40 * row_bytes]


@pytest.mark.parametrize("path", int64_paths())
@pytest.mark.parametrize("method", ["overlapped", "rt"])
@pytest.mark.parametrize("dtype", ["int64", "uint8", "int16", "float64"])
@pytest.mark.parametrize("shape", [(37, 29), (67, 65), (64, 33, 3), (130, 7), (70, 36)])
def test_sat_64bit_chunked(shape, dtype, method, path, rng):
    """Past one storage binding (the max_binding hook): bands of rows with the column carry, the
    64-bit table the unchunked one bit for bit."""
    if dtype == "float64" and (not has_f64() or path == "pairs"):
        pytest.skip("float64 needs shader-f64 (and has one path)")
    x = rand(rng, shape, dtype)
    want = ref(x)
    row = 8 * int(np.prod(shape[1:]))
    for lim in _limits(row):
        with path_ctx(path), pp.device().using(max_binding=lim):
            got = pp.summed_area_table(x, method=method)
            g = pp.summed_area_table(pp.asarray(x), method=method)
        check(got, want)
        check(g.numpy(), want)


def test_sat_64bit_row_too_long():
    with pp.device().using(max_binding=8 * 50 - 8), pytest.raises(pp.DeviceLimitError, match="summed_area_table"):
        pp.summed_area_table(np.ones((3, 50), np.int64))


def test_sat_gpuarray_input_cast_refused(rng):
    """Casts the kernels do not make (float to integer) are the host's: a GpuArray input says so."""
    with pytest.raises(pp.InputError, match="summed_area_table: a GpuArray of float32"):
        pp.summed_area_table(pp.asarray(np.ones((3, 3), np.float32)), dtype=np.int64)
    with pytest.raises(pp.InputError, match="dtype=bool"):
        pp.summed_area_table(pp.asarray(np.ones((3, 3), np.uint8)), dtype=bool)


def test_sat_dask_64bit(rng):
    da = pytest.importorskip("dask.array")
    from pywgpuprims import dask as ppd

    for dtype in ("uint8", "int64", "int32"):
        x = rand(rng, (70, 50), dtype)
        got = ppd.summed_area_table(da.from_array(x, chunks=(23, 17))).compute()
        check(got, ref(x))
    x = rand(rng, (40, 30), "int16")
    check(ppd.summed_area_table(da.from_array(x, chunks=(9, 13)), dtype=np.int32).compute(), ref(x, np.int32))


@pytest.mark.parametrize("threads", ["1", "8"])
def test_sat_64bit_lavapipe_threads(threads):
    run_with_lavapipe_threads(textwrap.dedent("""
        import numpy as np, pywgpuprims as pp
        rng = np.random.default_rng()
        for shape in [(97, 131), (64, 65, 2), (33, 31)]:
            for dt in (np.int64, np.uint64, np.uint8):
                info = np.iinfo(dt)
                x = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
                want = np.cumsum(np.cumsum(x, 0), 1)
                for hide in (False, True):
                    with pp.device().using(hide_shader_int64=hide):
                        for m in ("overlapped", "rt"):
                            assert np.array_equal(pp.summed_area_table(x, method=m), want), (shape, dt, hide, m)
                    with pp.device().using(hide_shader_int64=hide, max_binding=8 * 6 * int(np.prod(shape[1:])) - 1):
                        assert np.array_equal(pp.summed_area_table(x), want), (shape, dt, hide, "bands")
            if "shader-f64" not in pp.device().features:
                continue
            x = (rng.standard_normal(shape) * 100)
            want = np.cumsum(np.cumsum(x, 0), 1)
            assert np.allclose(pp.summed_area_table(x), want, rtol=0, atol=1e-9 * np.abs(want).max())
        print("ok")
    """), threads)
