"""A table of bad arguments per public function (wrong types, negative sizes, NaN, huge values,
empty arrays, wrong ndim): each call either raises the library's own error (a PrimitiveError
subclass) or, for a value that is in fact valid, returns the oracle's result."""

import math
import warnings

import numpy as np
import pytest
import scipy.ndimage as ndi

import pywgpuprims as pp
from pywgpuprims import fse

BAD = ["x", None, {}, object(), -1, 0, 1e39, float("nan"), float("inf"), 2**70, True, [], np.zeros(0),
       np.zeros((2, 2, 2, 2)), 2.5, -3.0, (1, 2, 3), np.complex64(1), np.float32(np.nan), b"\x00"]

RNG = np.random.default_rng(1234)
IMG = RNG.random((9, 11), dtype=np.float32)
V = RNG.integers(0, 9, 50).astype(np.int32)
BLOB = fse.compress(b"abcab" * 100)
K3 = np.ones((1, 3, 3), np.float32)
ONES64 = np.ones(50, np.int64)
Z10 = np.zeros(10, np.uint8)
REF3 = ndi.correlate(IMG.astype(float), np.ones((3, 3)))[None, 1:-1, 1:-1]


def _real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _close(tol):
    def cmp(got, want):
        want = np.asarray(want, np.float64)
        scale = float(np.abs(want).max(initial=1.0))  # float32 work: errors relative to the largest value
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol * scale)
    return cmp


def _int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _axis(v) -> bool:
    return _int(v) and v in (-1, 0)


def _is_none(v) -> bool:
    return v is None


def _bytes_or_empty(v) -> bool:
    return isinstance(v, bytes) or (isinstance(v, np.ndarray) and v.size == 0)


def _f32_or_none(v) -> bool:
    return v is None or _dtype_like(v) and np.dtype(v) == np.float32


def _no_axes(v) -> bool:
    return isinstance(v, (list, tuple, np.ndarray)) and len(v) == 0


def _lfilter_ref(cval):
    """recursive_filter(IMG, 0.5, (-0.5,), mode="constant", cval=cval) in float64 (scipy.signal)."""
    from scipy.signal import lfilter

    y = IMG.astype(np.float64)
    for ax in (0, 1):
        y = np.moveaxis(y, ax, -1)
        p = np.pad(y, [(0, 0), (200, 200)], constant_values=cval)
        p = lfilter([0.5], [1, -0.5], p, axis=-1)
        p = lfilter([0.5], [1, -0.5], p[..., ::-1], axis=-1)[..., ::-1]
        y = np.moveaxis(p[..., 200:-200], -1, ax)
    return y


def _dtype_like(v) -> bool:
    """What numpy itself reads as a dtype numpy and GpuArray hold (``None``: the default)."""
    try:
        return v is None or np.dtype(v) in (np.float32, np.float64)
    except TypeError:
        return False


def _equal(got, want):
    if isinstance(want, (bytes, bytearray)):
        assert bytes(got) == bytes(want)
    else:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _equal_typed(got, want):
    """Equal values of numpy's dtype."""
    assert np.asarray(got).dtype == np.asarray(want).dtype, (np.asarray(got).dtype, np.asarray(want).dtype)
    _equal(got, want)


def _same(got, want):
    assert got == want


def _numpy_accepts(numpy_call):
    """``is_valid`` for a parameter numpy takes too: a value is valid where numpy's own call accepts
    it (the oracle then gives numpy's result); a value numpy refuses must raise the library's error."""
    def accepts(v) -> bool:
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                numpy_call(v)
        except Exception:  # noqa: BLE001 - numpy refuses it: any error
            return False
        return True
    return accepts


def _meta(a) -> tuple:
    """What GpuArray.empty makes, as numpy's empty would: shape and dtype."""
    return tuple(a.shape), np.dtype(a.dtype)


# name: (call(**kw), {param: (is_valid(value), oracle(**kw) or None for "same as the default call")}, compare)
CASES = {
    "summed_area_table": (lambda img=IMG, **k: pp.summed_area_table(img, **k), {"img": None, "method": None},
                          _close(1e-5)),
    "box_filter": (lambda img=IMG, radius=2, **k: pp.box_filter(img, radius, **{"mode": "constant", **k}),
                   {"img": None,
                    "radius": (lambda v: _real(v) and float(v).is_integer() and isinstance(v, int) and 0 <= v,
                               lambda radius: ndi.uniform_filter(IMG.astype(float), 2 * radius + 1, mode="constant")),
                    "mode": None,
                    "cval": (lambda v: _real(v) and math.isfinite(v) and abs(v) < 1e38,
                             lambda cval: ndi.uniform_filter(IMG.astype(float), 5, mode="constant", cval=cval)),
                    "output": (_f32_or_none, lambda output: ndi.uniform_filter(IMG.astype(float), 5, mode="constant"))},
                   _close(1e-4)),
    "gaussian_filter": (lambda img=IMG, sigma=2.0, **k: pp.gaussian_filter(img, sigma, **k),
                        {"img": None,
                         "sigma": (lambda v: _real(v) and (v == 0 or 0.5 <= v <= 1000),
                                   lambda sigma: ndi.gaussian_filter(IMG.astype(float), sigma, truncate=100)),
                         "mode": None,
                         "axes": (lambda v: _axis(v) or v is None or _no_axes(v),
                                  lambda axes: ndi.gaussian_filter(IMG.astype(float), 2.0, axes=axes, truncate=100)),
                         "method": None, "cval": (_real, lambda cval: ndi.gaussian_filter(IMG.astype(float), 2.0)),
                         "order": (lambda v: _real(v) and v == 0 and isinstance(v, int),
                                   lambda order: ndi.gaussian_filter(IMG.astype(float), 2.0)),
                         "output": (_f32_or_none, lambda output: ndi.gaussian_filter(IMG.astype(float), 2.0)),
                         "nan_policy": None},
                        _close(0.02)),
    "recursive_filter": (lambda img=IMG, b0=0.5, a=(-0.5,), **k: pp.recursive_filter(img, b0, a, **k),
                         {"img": None,
                          "b0": (lambda v: _real(v) and abs(v) < 1e9,
                                 lambda b0: pp.recursive_filter(IMG, 0.5, (-0.5,)) * np.float32((b0 / 0.5) ** 4)),
                          "a": (lambda v: _real(v) and abs(v) < 1,
                                lambda a: pp.recursive_filter(IMG, 0.5, (a,))),
                          "axes": (lambda v: _axis(v) or v is None or _no_axes(v),
                                   lambda axes: IMG if _no_axes(axes) else _lfilter_ref(0.0) if axes is None
                                   else pp.recursive_filter(IMG, 0.5, (-0.5,), axes=axes % 2)),
                          "causal": (lambda v: isinstance(v, (int, np.integer)),
                                     lambda causal: pp.recursive_filter(IMG, 0.5, (-0.5,), causal=bool(causal))),
                          "mode": None, "method": None,
                          "cval": (lambda v: _real(v) and abs(v) < 1e38, _lfilter_ref),
                          "output": (_f32_or_none, lambda output: _lfilter_ref(0.0)),
                          "nan_policy": None},
                         _close(1e-4)),
    "bspline_prefilter": (lambda img=IMG, **k: pp.bspline_prefilter(img, **k),
                          {"img": None, "mode": None,
                           "axes": (lambda v: _axis(v) or v is None or _no_axes(v),
                                    lambda axes: IMG if _no_axes(axes)
                                    else ndi.spline_filter(IMG.astype(float), 3, mode="mirror") if axes is None
                                    else ndi.spline_filter1d(IMG.astype(float), 3, axis=axes, mode="mirror")),
                           "method": None,
                           "output": (_f32_or_none,
                                      lambda output: ndi.spline_filter(IMG.astype(float), 3, mode="mirror"))},
                          _close(1e-5)),
    "correlate": (lambda volume=IMG, kernels=K3, **k: pp.correlate(volume, kernels, **{"output_shape": "valid", **k}),
                  {"volume": None, "kernels": None, "mode": None, "output_shape": None,
                   "boundary": (_is_none, lambda boundary: REF3),
                   "origin": (lambda v: _int(v) and v == 0, lambda origin: REF3),
                   "config": (_is_none, lambda config: REF3),
                   "out": (_is_none, lambda out: REF3),
                   "cval": (_real, lambda cval: REF3)},
                  _close(1e-5)),
    "rle_decode": (lambda values=V, counts=ONES64, **k: pp.rle_decode(values, counts, **k),
                   {"values": None, "counts": None,
                    "size": (lambda v: v is None or (_int(v) and v == 50), lambda size: np.repeat(V, 1))}, _equal),
    "compact": (lambda x=V, mask=V > 3: pp.compact(x, mask), {"x": None, "mask": None}, _equal),
    # numpy's int64 indices: a tuple per axis (np.nonzero refuses 0-d input) or flat
    "nonzero": (lambda a=V: pp.nonzero(a), {"a": (_numpy_accepts(np.nonzero), lambda a: np.nonzero(a))},
                _equal_typed),
    "flatnonzero": (lambda a=V: pp.flatnonzero(a),
                    {"a": (_numpy_accepts(np.flatnonzero), lambda a: np.flatnonzero(a))}, _equal_typed),
    # a 1-D sequence of numbers is fine, empty or 64-bit included (np.asarray's dtype)
    "rle_encode": (lambda x=V: _runs(pp.rle_encode(x)),
                   {"x": (lambda v: isinstance(v, (list, tuple, np.ndarray)) and np.asarray(v).ndim == 1
                          and np.asarray(v).dtype.kind in "biuf", lambda x: _runs_ref(np.asarray(x)))}, _equal),
    "fse.compress": (lambda data=b"abcab" * 100, **k: fse.compress(data, **k),
                     {"data": (lambda v: _bytes_or_empty(v),
                               lambda data: fse.compress(bytes(data))),
                      "table_log": None, "block_size": (_is_none, lambda block_size: fse.compress(b"abcab" * 100)),
                      "mode": None, "lanes": None,
                      "progress": (_is_none, lambda progress: fse.compress(b"abcab" * 100))},
                     _equal),
    "fse.decompress": (lambda blob=BLOB, **k: fse.decompress(blob, **k),
                       {"blob": None,
                        "max_output_size": (lambda v: v is None or (_int(v) and v >= 500),
                                            lambda max_output_size: b"abcab" * 100),
                        "progress": (_is_none, lambda progress: b"abcab" * 100)},
                       _equal),
    "fse.histogram": (lambda x=Z10, **k: fse.histogram(x, **k),
                      {"x": (lambda v: isinstance(v, bytes) or v is True or (isinstance(v, np.ndarray) and v.size == 0),
                             lambda x: np.bincount(np.frombuffer(x, np.uint8) if isinstance(x, bytes)
                                                   else np.atleast_1d(np.asarray(x, np.uint8)),
                                                   minlength=256).astype(np.uint64)),
                       "block_size": None}, _equal),
    "GpuArray.empty": (lambda shape=(3,), dtype=np.float32: _meta(pp.GpuArray.empty(shape, dtype)),
                       {"shape": (lambda v: (_int(v) and 0 <= v) or (isinstance(v, (tuple, list, np.ndarray)) and
                                                                      all(_int(s) and s >= 0 for s in v)),
                                  lambda shape: ((shape,) if _int(shape) else tuple(shape), np.dtype(np.float32))),
                        # dtype=None is numpy's default (float64), any dtype numpy reads is numpy's
                        "dtype": (_numpy_accepts(lambda v: np.empty(3, v)), lambda dtype: _meta(np.empty(3, dtype)))},
                       _same),
    # dtype=None keeps the input's dtype; bool stays bool
    "asarray": (lambda a=[1.0], **k: pp.asarray(a, **k).numpy(),
                {"dtype": (_numpy_accepts(lambda v: np.asarray([1.0], dtype=v)),
                           lambda dtype: np.asarray([1.0], dtype=dtype))}, _equal_typed),
}


def _runs(r) -> np.ndarray:
    values, counts = (np.asarray(a) for a in r)
    return np.stack([values.astype(np.float64), counts.astype(np.float64)]) if values.size else np.zeros((2, 0))


def _runs_ref(x: np.ndarray) -> np.ndarray:
    starts = np.flatnonzero(np.r_[True, x[1:] != x[:-1]]) if x.size else np.zeros(0, np.int64)
    return np.stack([x[starts].astype(np.float64), np.diff(np.r_[starts, x.size]).astype(np.float64)])


def _valid(v) -> bool:
    return False


@pytest.mark.parametrize("name", list(CASES))
def test_bad_arguments(name):
    call, params, compare = CASES[name]
    wrong = []
    for param, spec in params.items():
        is_valid, oracle = spec if spec is not None else (_valid, None)
        for value in BAD:
            try:
                with np.errstate(all="ignore"):
                    got = call(**{param: value})
            except pp.PrimitiveError:
                continue
            except Exception as exc:  # noqa: BLE001 - the point: anything else is a defect
                wrong.append(f"{name}({param}={value!r:.40}): {type(exc).__name__}: {exc}")
                continue
            if not is_valid(value):
                wrong.append(f"{name}({param}={value!r:.40}) was accepted")
                continue
            try:
                compare(got.numpy() if isinstance(got, pp.GpuArray) else got, oracle(**{param: value}))
            except AssertionError as exc:
                wrong.append(f"{name}({param}={value!r:.40}): wrong result {str(exc)[:300]}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("call", [
    lambda: pp.gaussian_filter(np.zeros((0, 5), np.float32), 2.0),
    lambda: pp.box_filter(np.zeros((4, 0), np.uint8), 3, "reflect"),
    lambda: pp.recursive_filter(np.zeros((0, 0), np.float32), 0.5, [-0.5]),
    lambda: pp.bspline_prefilter(np.zeros((3, 0, 2), np.float32)),
    lambda: pp.summed_area_table(np.zeros((0, 3), np.float32)),
])
def test_empty_images(call):
    """Empty images give empty results of the same shape (as scipy) or the library's error."""
    try:
        out = call()
    except pp.PrimitiveError:
        return
    assert np.asarray(out).size == 0
