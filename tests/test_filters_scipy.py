"""The image filters against scipy.ndimage itself: its mode names and meanings (aliases
included), cval, per-axis sigma, axes, output dtypes of integer images, nan_policy."""

import numpy as np
import pytest
import scipy.ndimage as ndi
from scipy.signal import lfilter

import pywgpuprims as pp

SCIPY_MODES = ["constant", "grid-constant", "nearest", "reflect", "grid-mirror", "mirror", "wrap", "grid-wrap"]
SHAPES = [(1, 1), (1, 9), (7, 1), (3, 5), (13, 11), (67, 45), (9, 7, 2)]


def _img(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)


# ----------------------------------------------------------------------------- box_filter
@pytest.mark.parametrize("mode", SCIPY_MODES)
def test_box_filter_every_mode(mode, rng):
    for shape in SHAPES:
        for r in (0, 1, 3, max(shape[:2]) + 2):  # radii past the image too
            for dtype in (np.float32, np.uint8, np.int16, np.int32):
                x = _img(rng, shape, dtype)
                cval = float(rng.integers(-3, 4)) if mode.endswith("constant") else 0.0
                got = pp.box_filter(x, r, mode, cval=cval)
                assert got.dtype == x.dtype and got.shape == x.shape
                if dtype == np.float32:
                    want = ndi.uniform_filter(x.astype(np.float64), 2 * r + 1, mode=mode, cval=cval, axes=(0, 1))
                    # a window sum's error is about eps * max |table| (box_filter's notes)
                    tol = 4 * 2.0**-24 * (np.abs(x).sum() + abs(cval) * (x.size + 1e4)) / (2 * r + 1) ** 2
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=tol + 1e-6)
                else:  # scipy's dtype and its truncation after each axis's pass, exactly
                    want = ndi.uniform_filter(x, 2 * r + 1, mode=mode, cval=cval, axes=(0, 1))
                    np.testing.assert_array_equal(got, want, err_msg=f"{shape} r={r} {dtype}")


def test_box_filter_default_mode_is_scipys(rng):
    """scipy.ndimage.uniform_filter's default mode is reflect, and so is box_filter's."""
    x = _img(rng, (23, 19), np.uint8)
    np.testing.assert_array_equal(pp.box_filter(x, 2), ndi.uniform_filter(x, 5, axes=(0, 1)))
    g = pp.box_filter(pp.asarray(x.astype(np.float32)), 1).numpy()
    np.testing.assert_allclose(g, ndi.uniform_filter(x.astype(np.float64), 3), rtol=1e-5, atol=1e-4)


def test_box_filter_output_and_gpuarray(rng):
    x = _img(rng, (31, 17), np.uint8)
    want = ndi.uniform_filter(x.astype(np.float64), 5, mode="reflect")
    np.testing.assert_allclose(pp.box_filter(x, 2, "reflect", output=np.float32), want, rtol=1e-5, atol=1e-4)
    buf = np.empty(x.shape, np.float32)
    assert pp.box_filter(x, 2, "reflect", output=buf) is buf
    np.testing.assert_allclose(buf, want, rtol=1e-5, atol=1e-4)
    g = pp.box_filter(pp.asarray(x.astype(np.float32)), 2, "wrap")
    assert isinstance(g, pp.GpuArray)
    np.testing.assert_allclose(g.numpy(), ndi.uniform_filter(x.astype(np.float64), 5, mode="wrap"), rtol=1e-5,
                               atol=1e-4)
    with pytest.raises(pp.InputError, match="box_filter.*float64"):
        pp.box_filter(x.astype(np.float64), 1)
    with pytest.raises(pp.InputError, match="box_filter.*mode 'bogus'.*constant"):
        pp.box_filter(x, 1, "bogus")


# ----------------------------------------------------------------------------- gaussian_filter
@pytest.mark.parametrize("mode", SCIPY_MODES)
def test_gaussian_every_mode(mode, rng):
    for shape in [(5, 7), (13, 11), (67, 45), (9, 7, 2)]:
        x = _img(rng, shape, np.float32)
        cval = 1.5 if mode.endswith("constant") else 0.0
        for sigma in (2.0, 3.0, 40.0):  # 40: a kernel far wider than the image
            got = pp.gaussian_filter(x, sigma, mode, cval=cval)
            want = ndi.gaussian_filter(x.astype(np.float64), sigma, mode=mode, cval=cval, axes=(0, 1),
                                       truncate=40.0)
            err = np.abs(got - want).max() / (np.abs(x).max() + abs(cval))
            assert err < 0.01, (shape, sigma, err)


def test_gaussian_per_axis_sigma_axes_order(rng):
    x = _img(rng, (41, 53), np.float32)
    for sigma, axes in [((2.0, 5.0), (0, 1)), ((5.0, 2.0), (1, 0)), ((3.0, 0.0), None), (4.0, (-1,)),
                        ([2.5], (0,)), (np.array([2.0, 6.0]), (-2, -1))]:
        got = pp.gaussian_filter(x, sigma, "nearest", axes=axes)
        want = ndi.gaussian_filter(x.astype(np.float64), sigma, mode="nearest", axes=axes)
        assert np.abs(got - want).max() / np.abs(x).max() < 0.01, (sigma, axes)
    with pytest.raises(pp.InputError, match="gaussian_filter.*sigma"):
        pp.gaussian_filter(x, (1.0, 2.0, 3.0))
    with pytest.raises(pp.InputError, match="gaussian_filter.*sigma"):
        pp.gaussian_filter(x, "2")
    with pytest.raises(pp.InputError, match="gaussian_filter.*sigma"):
        pp.gaussian_filter(x, float("nan"))
    with pytest.raises(pp.InputError, match="gaussian_filter.*order"):
        pp.gaussian_filter(x, 2.0, order=1)
    with pytest.raises(pp.InputError, match="gaussian_filter.*axis 2"):
        pp.gaussian_filter(x[..., None], 2.0, axes=(0, 2))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.int32])
def test_gaussian_integer_images(dtype, rng):
    x = _img(rng, (37, 29), dtype)
    got = pp.gaussian_filter(x, 3.0)
    want = ndi.gaussian_filter(x, 3.0)
    assert got.dtype == want.dtype == x.dtype
    # the recursive Gaussian is within 1% of scipy's; scipy also truncates between the passes
    tol = 0.01 * float(np.abs(x.astype(np.float64)).max()) + 2
    assert np.abs(got.astype(np.float64) - want).max() <= tol
    f = pp.gaussian_filter(x, 3.0, output=np.float32)
    assert f.dtype == np.float32
    # integer results are the float32 result truncated toward zero, as scipy's casts
    np.testing.assert_array_equal(got, np.trunc(f).astype(dtype))


def test_gaussian_nan_policy(rng):
    x = rng.random((40, 33), dtype=np.float32) + 1
    x[7, 9] = np.nan
    x[30, 2] = np.inf
    bad = ~np.isfinite(x)
    spread = pp.gaussian_filter(x, 2.0)
    assert np.isnan(spread).mean() > 0.9  # "propagate" (scipy's behaviour): the image goes NaN
    got = pp.gaussian_filter(x, 2.0, nan_policy="omit")
    np.testing.assert_array_equal(np.isfinite(got), ~bad)
    assert np.isnan(got[7, 9]) and got[30, 2] == np.inf
    # normalised convolution: the weighted mean of the finite pixels around each
    m = (~bad).astype(np.float64)
    num = ndi.gaussian_filter(np.where(bad, 0, x).astype(np.float64), 2.0)
    den = ndi.gaussian_filter(m, 2.0)
    assert np.abs(got[~bad] - (num / den)[~bad]).max() < 0.01
    with pytest.raises(pp.InputError, match="gaussian_filter.*nan_policy"):
        pp.gaussian_filter(x, 2.0, nan_policy="raise")
    with pytest.raises(pp.InputError, match="recursive_filter.*nan_policy"):
        pp.recursive_filter(x, 0.5, [-0.5], nan_policy="omit")
    g = pp.gaussian_filter(pp.asarray(x), 2.0, nan_policy="omit")
    assert isinstance(g, pp.GpuArray)
    np.testing.assert_allclose(g.numpy(), got, equal_nan=True)


# ----------------------------------------------------------------------------- recursive_filter, bspline
def _lfilter_ref(x, b0, a, axes, cval):
    """Causal + anticausal recursion per axis on lines extended far by cval (float64)."""
    y = x.astype(np.float64)
    P = 400
    for ax in axes:
        y = np.moveaxis(y, ax, -1)
        p = np.pad(y, [(0, 0)] * (y.ndim - 1) + [(P, P)], constant_values=cval)
        p = lfilter([b0], [1, *a], p, axis=-1)
        p = lfilter([b0], [1, *a], p[..., ::-1], axis=-1)[..., ::-1]
        y = np.moveaxis(p[..., P:-P], -1, ax)
    return y


def test_recursive_filter_cval(rng):
    x = _img(rng, (23, 70), np.float32)
    for b0, a in [(0.3, [-0.6]), (1.0, [-0.5, 0.06])]:  # gains other than 1
        got = pp.recursive_filter(x, b0, a, mode="constant", cval=2.0)
        want = _lfilter_ref(x, b0, a, (0, 1), 2.0)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("mode", SCIPY_MODES)
def test_bspline_every_mode(mode, rng):
    for shape in [(1, 1), (2, 3), (5, 7), (13, 11), (37, 30, 2)]:
        x = _img(rng, shape, np.float32)
        got = pp.bspline_prefilter(x, mode)
        want = x.astype(np.float64)
        for ax in (0, 1):
            want = ndi.spline_filter1d(want, 3, axis=ax, mode=mode)
        if mode in ("reflect", "grid-mirror", "nearest") and min(shape[:2]) < 12:
            continue  # scipy's half-sample initialisation is truncated on very short lines
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max(), err_msg=str(shape))


def test_bspline_wrap_means_scipys_wrap(rng):
    x = _img(rng, (16, 21), np.float32)
    np.testing.assert_allclose(pp.bspline_prefilter(x, "wrap"), ndi.spline_filter(x.astype(np.float64), 3, mode="wrap"),
                               rtol=1e-5, atol=1e-5)
    periodic = ndi.spline_filter(x.astype(np.float64), 3, mode="grid-wrap")
    np.testing.assert_allclose(pp.bspline_prefilter(x, "grid-wrap"), periodic, rtol=1e-5, atol=1e-5)
    assert pp.bspline_prefilter(x.astype(np.uint8)).dtype == np.float32


# ----------------------------------------------------------------------------- correlate
@pytest.mark.parametrize("mode", SCIPY_MODES)
def test_correlate_every_boundary(mode, rng):
    for shape, ks in [((5, 7), (3, 3)), ((1, 9), (4, 5)), ((13, 11), (9, 9)), ((3, 4), (7, 9)), ((4, 5, 6), (3, 2, 5))]:
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal((2, *ks)).astype(np.float32)
        cval = 1.5 if mode.endswith("constant") else 0.0
        got = pp.correlate(x, w, mode, cval=cval)
        for k in range(2):
            want = ndi.correlate(x.astype(np.float64), w[k].astype(np.float64), mode=mode, cval=cval)
            np.testing.assert_allclose(got[k], want, rtol=1e-5, atol=1e-4, err_msg=f"{shape} {ks}")
    g = pp.correlate(pp.asarray(x), w, mode, cval)
    assert isinstance(g, pp.GpuArray)
    np.testing.assert_allclose(g.numpy(), got, rtol=1e-6, atol=1e-6)
