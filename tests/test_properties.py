"""Property tests (hypothesis): random dtypes, shapes, axes, strides and values (NaN, inf, the
dtype's extremes) against numpy, for scan, reduce, compact, nonzero, rle_encode and rle_decode.

Kept small for lavapipe (25 examples each, no deadline; ``PYWGPUPRIMS_HYPOTHESIS_EXAMPLES=500`` for
a longer hunt); a failure prints the falsifying example and a ``@reproduce_failure`` blob."""

import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import pywgpuprims as pp  # noqa: E402
from pywgpuprims._dtypes import exclusive_identity  # noqa: E402

SETTINGS = settings(max_examples=int(os.environ.get("PYWGPUPRIMS_HYPOTHESIS_EXAMPLES", 25)), deadline=None,
                    print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
HAS_F64 = "shader-f64" in pp.device().features
INT_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOAT_DTYPES = ["float16", "float32"] + (["float64"] if HAS_F64 else [])
UFUNC = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
         "xor": np.bitwise_xor, "fmin": np.fmin, "fmax": np.fmax}


@st.composite
def arrays(draw, dtypes, max_dims=3, max_side=40, min_size=0):
    """An array of a drawn dtype and shape, values from the whole range (NaN and inf for floats),
    sometimes a non-contiguous view (reversed, strided or transposed)."""
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=max_dims, min_side=min_size, max_side=max_side))
    if dtype.kind == "f":
        elems = st.floats(width=8 * dtype.itemsize, allow_nan=True, allow_infinity=True)
        if dtype != np.float16 and draw(st.booleans()):  # mostly moderate values keep sums comparable
            elems = st.floats(-1e3, 1e3, width=8 * dtype.itemsize)
    else:
        elems = None
    x = draw(hnp.arrays(dtype, shape, elements=elems))
    view = draw(st.sampled_from(["c", "reversed", "strided", "transposed"]))
    if view == "reversed":
        x = x[::-1]
    elif view == "strided" and x.shape[0] > 1:
        x = x[::2]
    elif view == "transposed":
        x = x.T
    return x


def _finite_abs_sum(x) -> float:
    a = np.abs(x.astype(np.float64))
    return float(a[np.isfinite(a)].sum())


@SETTINGS
@given(x=arrays(INT_DTYPES + FLOAT_DTYPES), data=st.data())
def test_scan_matches_numpy(x, data):
    kind = x.dtype.kind
    op = data.draw(st.sampled_from(["add", "min", "max"] + (["fmin", "fmax"] if kind == "f" else
                                                          ["and", "or", "xor"])))
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    exclusive = data.draw(st.booleans()) and op != "add"
    got = pp.scan(x, op=op, axis=axis, exclusive=exclusive)
    xs = x.ravel() if axis is None else x
    ax = 0 if axis is None else axis
    if op == "add":
        ref = np.cumsum(xs.astype(np.float64) if kind == "f" else xs, axis=ax)
        assert got.dtype == np.cumsum(x[:0] if x.size else x).dtype
        if kind == "f":
            # inf - inf and overflow orders differ from numpy's sequential sum: compare where finite
            ref = ref.astype(x.dtype) if x.dtype == np.float64 else ref
            finite = np.isfinite(np.cumsum(np.abs(xs.astype(np.float64)), axis=ax))
            got64 = got.astype(np.float64)
            np.testing.assert_allclose(got64[finite], np.asarray(ref, np.float64)[finite],
                                       rtol=1e-2 if x.dtype == np.float16 else 1e-4,
                                       atol=(_finite_abs_sum(xs) + 1) * 1e-3)
            return
    else:
        ref = UFUNC[op].accumulate(xs, axis=ax, dtype=x.dtype)
        assert got.dtype == x.dtype
        if exclusive and ref.size:
            ref = np.roll(ref, 1, axis=ax)
            idx = [slice(None)] * ref.ndim
            idx[ax] = 0
            ref[tuple(idx)] = exclusive_identity(op, x.dtype)
    np.testing.assert_array_equal(got, ref)  # min / max / bitwise: exact, NaN where numpy has NaN


@SETTINGS
@given(x=arrays(INT_DTYPES + FLOAT_DTYPES, min_size=1), data=st.data())
def test_reduce_matches_numpy(x, data):
    kind = x.dtype.kind
    op = data.draw(st.sampled_from(["add", "min", "max"] + (["fmin", "fmax"] if kind == "f" else
                                                          ["and", "or", "xor"])))
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    got = np.asarray(pp.reduce(x, op=op, axis=axis))
    if op == "add":
        ref = np.sum(x, axis=axis)
        assert got.dtype == ref.dtype
        if kind == "f":
            ref64 = np.sum(x.astype(np.float64), axis=axis)
            finite = np.isfinite(np.sum(np.abs(x.astype(np.float64)), axis=axis)) & np.isfinite(ref)
            np.testing.assert_allclose(got.astype(np.float64)[finite], np.asarray(ref64)[finite],
                                       rtol=1e-2 if x.dtype == np.float16 else 1e-4,
                                       atol=(_finite_abs_sum(x) + 1) * 1e-3)
            return
    else:
        ref = UFUNC[op].reduce(x, axis=axis, dtype=x.dtype)
    assert got.dtype == np.asarray(ref).dtype
    np.testing.assert_array_equal(got, ref)


@SETTINGS
@given(x=arrays(INT_DTYPES + ["float16", "float32", "float64"], max_dims=2, max_side=3000), data=st.data())
def test_compact_and_nonzero_match_numpy(x, data):
    mask = data.draw(hnp.arrays(np.bool_, x.shape))
    got = pp.compact(x, mask)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got.view(np.uint8), x[mask].view(np.uint8))  # bits: NaNs too
    np.testing.assert_array_equal(pp.flatnonzero(mask), np.flatnonzero(mask))
    got, want = pp.nonzero(mask), np.nonzero(mask)  # numpy's int64, one array per axis
    assert len(got) == len(want) and all(g.dtype == np.int64 for g in got)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(pp.flatnonzero(x), np.flatnonzero(x))  # any dtype as a mask: x != 0


@SETTINGS
@given(x=arrays(["bool", "int8", "uint8", "int16", "uint16", "float16", "int32", "uint32", "float32"], max_dims=1,
                max_side=5000), data=st.data())
def test_rle_round_trip_matches_numpy(x, data):
    if data.draw(st.booleans()):  # long runs
        x = np.repeat(x[: max(1, x.size // 50)], 50)[: x.size]
    v, c = pp.rle_encode(x)
    bits = x.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[x.dtype.itemsize])
    starts = np.flatnonzero(np.r_[True, bits[1:] != bits[:-1]]) if x.size else np.zeros(0, int)
    np.testing.assert_array_equal(v.view(bits.dtype), bits[starts])
    np.testing.assert_array_equal(c, np.diff(np.r_[starts, x.size]))
    np.testing.assert_array_equal(pp.rle_decode(v, c).view(bits.dtype), bits)
