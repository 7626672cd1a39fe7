"""Summed-area tables, box filters, recursive filters, recursive Gaussian, B-spline prefilter.

Oracles: numpy cumsum and skimage.transform.integral_image (SAT), scipy.ndimage.uniform_filter
(box), scipy.signal.lfilter on padded lines (recursive filters, exact for every boundary
extension), scipy.ndimage.gaussian_filter and spline_filter.
"""

import numpy as np
import pytest
import skimage.data
from conftest import POISON_U32, poisoned
from scipy import ndimage
from scipy.signal import lfilter
from skimage.transform import integral_image

import pywgpuprims as pp
from pywgpuprims import recfilter as rf
from pywgpuprims._memory import STORAGE_USAGE
from pywgpuprims.recfilter import _coefs, _gaussian_coefs, _padlen


@pytest.fixture(autouse=True)
def poison_outputs(monkeypatch):
    """Every array the primitives allocate starts as poison, so unwritten elements show."""
    original = pp.GpuArray.empty

    def empty(shape, dtype, dev=None):
        g = original(shape, dtype, dev)
        words = g.buffer.size // 4
        pp.device().write(g.buffer, np.full(words, POISON_U32, np.uint32).tobytes())
        return g

    monkeypatch.setattr(pp.GpuArray, "empty", staticmethod(empty))


def _rand(rng, shape, dtype):
    if dtype == "float32":
        return rng.random(shape, dtype=np.float32)
    hi = {"uint8": 256, "uint32": 2**32, "int32": 2**31}[dtype]
    lo = -(2**31) if dtype == "int32" else 0
    return rng.integers(lo, hi, shape, dtype=np.int64).astype(dtype)


def _sat_ref(a):
    odt = np.cumsum(a[:0]).dtype  # numpy's: uint64 for uint8 and uint32, int64 for int32
    if odt == np.float32:
        return np.cumsum(np.cumsum(a.astype(np.float64), 0), 1)
    return np.cumsum(np.cumsum(a.astype(odt), 0, dtype=odt), 1, dtype=odt)


# ------------------------------------------------------------------------------------------ SAT
SHAPES = [(1, 1), (1, 67), (67, 1), (64, 64), (63, 65), (129, 200), (200, 129), (70, 50, 3), (65, 4), (131, 196)]


@pytest.mark.parametrize("method", ["overlapped", "rt"])
@pytest.mark.parametrize("dtype", ["uint8", "uint32", "int32", "float32"])
@pytest.mark.parametrize("shape", SHAPES)
def test_sat(shape, dtype, method, rng):
    a = _rand(rng, shape, dtype)
    out = pp.summed_area_table(a, method=method)
    ref = _sat_ref(a)
    assert out.shape == a.shape
    assert out.dtype == np.cumsum(a).dtype
    if dtype == "float32":
        np.testing.assert_allclose(out, ref, rtol=0, atol=4e-7 * np.abs(ref).max() * np.sqrt(a.size) + 1e-6)
    else:
        np.testing.assert_array_equal(out, ref)


def test_sat_skimage_camera_and_2048():
    cam = skimage.data.camera()
    np.testing.assert_array_equal(pp.summed_area_table(cam), integral_image(cam).astype(np.uint64))
    big = np.tile(cam, (4, 4))  # 2048 x 2048 uint8: exact
    np.testing.assert_array_equal(pp.summed_area_table(big, dtype=np.uint32), integral_image(big).astype(np.uint32))
    f = big.astype(np.float32) / 255
    ref = integral_image(f.astype(np.float64))
    np.testing.assert_allclose(pp.summed_area_table(f), ref, rtol=2e-6, atol=1e-3)


def test_sat_wraps_and_gpuarray(rng):
    a = rng.integers(2**31, 2**32, (100, 90), dtype=np.uint64).astype(np.uint32)
    g = pp.summed_area_table(pp.asarray(a), dtype=np.uint32)  # the 32-bit table wraps as numpy's
    assert isinstance(g, pp.GpuArray) and g.dtype == np.uint32
    np.testing.assert_array_equal(g.numpy(), np.cumsum(np.cumsum(a, 0, dtype=np.uint32), 1, dtype=np.uint32))
    g = pp.summed_area_table(pp.asarray(a))
    assert g.dtype == np.uint64
    np.testing.assert_array_equal(g.numpy(), _sat_ref(a))


def test_sat_errors():
    with pytest.raises(pp.InputError, match="summed_area_table: dtype"):
        pp.summed_area_table(np.zeros((3, 3), np.complex64))
    with pytest.raises(pp.InputError, match="dimensions"):
        pp.summed_area_table(np.zeros(3, np.float32))
    with pytest.raises(pp.InputError, match="method"):
        pp.summed_area_table(np.zeros((3, 3), np.float32), method="nope")
    assert pp.summed_area_table(np.zeros((0, 5), np.uint8)).shape == (0, 5)


@pytest.mark.parametrize("radius", [0, 1, 4, 40])
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_box_filter(radius, dtype, rng):
    a = _rand(rng, (97, 130), dtype)
    out = pp.box_filter(a, radius, "constant", output=np.float32)
    assert out.dtype == np.float32
    exact = pp.box_filter(a, radius, "constant")  # scipy's dtype and per-axis truncation
    assert exact.dtype == a.dtype
    want = ndimage.uniform_filter(a, 2 * radius + 1, mode="constant")
    if dtype == "uint8":
        np.testing.assert_array_equal(exact, want)
    else:
        np.testing.assert_allclose(exact, want, rtol=1e-6, atol=1e-6 * float(np.abs(a).max()) * a.size)
    ref = ndimage.uniform_filter(a.astype(np.float64), 2 * radius + 1, mode="constant", cval=0.0)
    tol = 1e-6 * float(np.abs(a).max()) * (1 if dtype == "uint8" else a.size)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=tol)
    # "clip": the mean over the part of the window inside the image.
    clip = pp.box_filter(a, radius, mode="clip")
    ones = np.ones(a.shape)
    cnt = ndimage.uniform_filter(ones, 2 * radius + 1, mode="constant") * (2 * radius + 1) ** 2
    np.testing.assert_allclose(clip, ref * (2 * radius + 1) ** 2 / np.round(cnt), rtol=1e-5, atol=tol)


def test_box_filter_channels_and_errors(rng):
    a = _rand(rng, (40, 33, 3), "uint8")
    out = pp.box_filter(a, 2, "constant", output=np.float32)
    for c in range(3):
        ref = ndimage.uniform_filter(a[..., c].astype(np.float64), 5, mode="constant")
        np.testing.assert_allclose(out[..., c], ref, rtol=1e-6, atol=1e-4)
    with pytest.raises(pp.InputError, match="radius"):
        pp.box_filter(a, -1)
    with pytest.raises(pp.InputError, match="mode"):
        pp.box_filter(a, 1, mode="bogus")


# ------------------------------------------------------------------- past one storage binding
def _limits(row_bytes: int, halo: int = 0) -> list[int]:
    """Binding limits that force bands of a few rows (at least 4: uint8 bands start on whole
    words), odd byte counts, a multiple of the storage alignment and 40 rows (bands bound in
    place: offsets of whole alignments), ``halo`` rows on top."""
    align = pp.device().storage_align
    return [(halo + 4) * row_bytes + 3, (halo + 6) * row_bytes - 1,
            -(-(halo + 9) * row_bytes // align) * align, (halo + 40) * row_bytes]


@pytest.mark.parametrize("method", ["overlapped", "rt"])
@pytest.mark.parametrize("dtype", ["uint8", "uint32", "int32", "float32"])
@pytest.mark.parametrize("shape", [(37, 29), (67, 65), (64, 33, 3), (130, 7), (5, 3)])
def test_sat_chunked(shape, dtype, method, rng):
    """Bands of rows with the column carry: integer tables equal numpy's bit for bit, float32
    ones within the unchunked table's rounding bound."""
    dev = pp.device()
    a = _rand(rng, shape, dtype)
    ref = _sat_ref(a)
    row = np.cumsum(a[:0]).dtype.itemsize * int(np.prod(shape[1:]))
    for lim in _limits(row):
        with dev.using(max_binding=lim):
            out = pp.summed_area_table(a, method=method)
            g = pp.summed_area_table(pp.asarray(a), method=method)
        assert isinstance(g, pp.GpuArray)
        for got in (out, g.numpy()):
            if dtype == "float32":
                np.testing.assert_allclose(got, ref, rtol=0, atol=4e-7 * np.abs(ref).max() * np.sqrt(a.size) + 1e-6)
            else:
                np.testing.assert_array_equal(got, ref)


def test_sat_chunked_row_too_long():
    with pp.device().using(max_binding=4 * 50 - 4), pytest.raises(pp.DeviceLimitError, match="summed_area_table"):
        pp.summed_area_table(np.ones((3, 50), np.float32))


def test_box_filter_chunked_window_too_tall(rng):
    a = _rand(rng, (40, 16), "float32")
    with pp.device().using(max_binding=4 * 16 * 12), pytest.raises(pp.DeviceLimitError, match="box_filter.*radius 6"):
        pp.box_filter(a, 6, "constant")  # 13 rows of window do not fit 12 rows
    with pp.device().using(max_binding=4 * 16 * 14):
        np.testing.assert_allclose(pp.box_filter(a, 6, "constant"), ndimage.uniform_filter(
            a.astype(np.float64), 13, mode="constant"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("radius", [0, 1, 4])
@pytest.mark.parametrize("dtype", ["uint8", "int32", "float32"])
@pytest.mark.parametrize("shape", [(37, 29), (70, 33, 3), (130, 7)])
def test_box_filter_chunked(shape, dtype, radius, rng):
    """Bands with ``radius`` rows of overlap: integer images give the unchunked result bit for
    bit, float32 ones scipy's within the unchunked call's documented rounding (eps * max|table|)."""
    dev = pp.device()
    a = _rand(rng, shape, dtype)
    if dtype == "int32":
        a = (a >> 12).astype(np.int32)  # window sums within 2**23: scipy's integer result exactly
    d = 2 * radius + 1
    ax = (0, 1)
    ref = ndimage.uniform_filter(a.astype(np.float64), d, mode="constant", axes=ax)
    unchunked = pp.box_filter(a, radius, mode="constant", output=np.float32)
    clip1 = pp.box_filter(a, radius, mode="clip")
    # the transposed pass of the integer path has rows of H * C: fit the larger row
    row = 4 * max(shape[0], shape[1]) * (shape[2] if len(shape) == 3 else 1)
    for lim in _limits(row, 2 * radius + 3):
        with dev.using(max_binding=lim):
            out = pp.box_filter(a, radius, mode="constant", output=np.float32)
            clip = pp.box_filter(a, radius, mode="clip")
            near = pp.box_filter(a, radius, mode="nearest")
            gpu = pp.box_filter(pp.asarray(a), radius, mode="constant").numpy()
        want_near = ndimage.uniform_filter(a, d, mode="nearest", axes=ax)
        if dtype == "float32":
            tol = 4e-7 * float(np.abs(a).max()) * a.size
            np.testing.assert_allclose(out, ref, rtol=1e-6, atol=tol)
            np.testing.assert_allclose(gpu, ref, rtol=1e-6, atol=tol)
            np.testing.assert_allclose(clip, clip1, rtol=1e-5, atol=tol)
            np.testing.assert_allclose(near, want_near, rtol=1e-5, atol=tol)
        else:
            np.testing.assert_array_equal(out, unchunked)
            np.testing.assert_array_equal(gpu, unchunked)
            np.testing.assert_array_equal(clip, clip1)
            np.testing.assert_array_equal(near, want_near)
            np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-3)


# ------------------------------------------------------------------------------------- recursive
_SP = {"zero": "constant"}  # this file's names for the kernels' boundaries -> scipy's
PAD = {"zero": "constant", "nearest": "edge", "reflect": "symmetric", "mirror": "reflect", "wrap": "wrap"}
FILTERS = [(0.5, (-0.5,)), (0.25, (-1.2, 0.45)), (0.2, (-1.5, 0.9, -0.2))]


def _lfilter_ref(x, b0, a, axes, causal, anti, mode):
    """Filter the (numpy.pad-)extended lines with lfilter: exact for every extension."""
    pad = 2 * _padlen(*_coefs(b0, a, "test")) + 8
    x = x.astype(np.float64)
    for ax in axes:
        n = x.shape[ax]
        m = "edge" if (mode == "mirror" and n == 1) else PAD[mode]
        widths = [(0, 0)] * x.ndim
        widths[ax] = (pad, pad)
        y = np.pad(x, widths, mode=m)
        if causal:
            y = lfilter([b0], [1, *a], y, axis=ax)
        if anti:
            y = np.flip(lfilter([b0], [1, *a], np.flip(y, ax), axis=ax), ax)
        x = np.take(y, np.arange(pad, pad + n), axis=ax)
    return x


def _check(out, ref, rtol=2e-6):
    scale = max(np.abs(ref).max(), 1e-30)
    np.testing.assert_allclose(out, ref, rtol=0, atol=rtol * scale)


@pytest.mark.parametrize("method", ["block", "rt"])
@pytest.mark.parametrize("mode", list(PAD))
@pytest.mark.parametrize("filt", FILTERS, ids=["order1", "order2", "order3"])
def test_recursive_filter_modes(filt, mode, method, rng):
    b0, a = filt
    for shape in [(1, 1), (1, 70), (65, 1), (63, 130), (67, 132)]:  # 132: the vec4 tile path
        x = rng.standard_normal(shape).astype(np.float32)
        out = pp.recursive_filter(x, b0, a, mode=_SP.get(mode, mode), method=method)
        _check(out, _lfilter_ref(x, b0, a, (0, 1), True, True, mode))


@pytest.mark.parametrize("method", ["block", "rt"])
@pytest.mark.parametrize("causal,anti", [(True, False), (False, True)])
@pytest.mark.parametrize("axes", [(0,), (1,), (1, 0), (0, 1)])
def test_recursive_filter_directions_axes(axes, causal, anti, method, rng):
    b0, a = FILTERS[1]
    for mode, shape in (("zero", (70, 129)), ("reflect", (70, 129)), ("zero", (130, 68)), ("reflect", (130, 68))):
        x = rng.standard_normal(shape).astype(np.float32)
        out = pp.recursive_filter(x, b0, a, axes=axes, causal=causal, anticausal=anti, mode=_SP.get(mode, mode),
                                  method=method)
        _check(out, _lfilter_ref(x, b0, a, axes, causal, anti, mode))


def test_recursive_filter_channels_gpuarray(rng):
    b0, a = FILTERS[2]
    x = rng.standard_normal((50, 67, 3)).astype(np.float32)
    g = pp.recursive_filter(pp.asarray(x), b0, a, mode="mirror")
    assert isinstance(g, pp.GpuArray)
    _check(g.numpy(), _lfilter_ref(x, b0, a, (0, 1), True, True, "mirror"))


def test_recursive_filter_2048_camera():
    cam = np.tile(skimage.data.camera().astype(np.float32) / 255, (4, 4))
    b0, a = FILTERS[1]
    out = pp.recursive_filter(cam, b0, a, mode="nearest")
    _check(out, _lfilter_ref(cam, b0, a, (0, 1), True, True, "nearest"))


@pytest.mark.parametrize("a", [(-1.0,), (-1.5,), (0.0, 1.0), (-2.0, 1.0), (-0.5, 0.3, -1.2)])
def test_unstable_filters_are_refused(a):
    x = np.zeros((4, 4), np.float32)
    with pytest.raises(pp.InputError, match="unstable"):
        pp.recursive_filter(x, 1.0, a)


def test_recursive_filter_errors():
    x = np.zeros((4, 4), np.float32)
    with pytest.raises(pp.InputError, match="dtype"):
        pp.recursive_filter(x.astype(np.complex64), 1.0, [-0.5])
    with pytest.raises(pp.InputError, match="mode"):
        pp.recursive_filter(x, 1.0, [-0.5], mode="bogus")
    with pytest.raises(pp.InputError, match="feedback"):
        pp.recursive_filter(x, 1.0, [0.1, 0.1, 0.1, 0.1])
    with pytest.raises(pp.InputError, match="axes"):
        pp.recursive_filter(x, 1.0, [-0.5], axes=(2,))
    with pytest.raises(pp.InputError, match="rt"):
        pp.recursive_filter(np.zeros((1, 40_000), np.float32), 1.0, [-0.5], method="rt")


# ------------------------------------------------------------------------------------- Gaussian
# Largest error against scipy.ndimage.gaussian_filter, relative to max |x| (see the docstring).
GAUSS_TOL = {1.0: 0.03, 2.0: 0.01, 4.0: 0.01, 16.0: 0.01}


@pytest.mark.parametrize("sigma", list(GAUSS_TOL))
def test_gaussian(sigma, rng):
    cam = skimage.data.camera().astype(np.float32) / 255
    for img in (rng.random((150, 211), dtype=np.float32), cam):
        out = pp.gaussian_filter(img, sigma)
        ref = ndimage.gaussian_filter(img.astype(np.float64), sigma, mode="reflect")
        err = np.abs(out - ref).max() / np.abs(img).max()
        assert err < GAUSS_TOL[sigma], err
    out_rt = pp.gaussian_filter(cam, sigma, method="rt")
    np.testing.assert_allclose(out_rt, pp.gaussian_filter(cam, sigma), atol=2e-5)


@pytest.mark.parametrize("mode,scipy_mode", [("wrap", "wrap"), ("mirror", "mirror"), ("nearest", "nearest"),
                                             ("zero", "constant")])
def test_gaussian_modes(mode, scipy_mode, rng):
    img = rng.random((90, 120, 2), dtype=np.float32)
    out = pp.gaussian_filter(img, 3.0, mode=_SP.get(mode, mode))
    for c in range(2):
        ref = ndimage.gaussian_filter(img[..., c].astype(np.float64), 3.0, mode=scipy_mode)
        assert np.abs(out[..., c] - ref).max() < 0.01


def test_gaussian_large_sigma_is_float32_accurate(rng):
    # The same recursion in float64 (lfilter): the float32 block algorithm stays close.
    from pywgpuprims.recfilter import _gaussian_coefs

    img = rng.random((300, 260), dtype=np.float32)
    b0, a = _gaussian_coefs(40.0)
    out = pp.gaussian_filter(img, 40.0)
    _check(out, _lfilter_ref(img, b0, a, (0, 1), True, True, "reflect"), rtol=1e-4)
    with pytest.raises(pp.InputError, match="sigma"):
        pp.gaussian_filter(img, 0.2)


# ------------------------------------------------------------------------------------- B-spline
@pytest.mark.parametrize("mode", ["mirror", "reflect", "grid-wrap"])
def test_bspline_prefilter(mode, rng):
    for shape in [(1, 1), (2, 3), (37, 70), (130, 65, 3)]:
        x = rng.standard_normal(shape).astype(np.float32)
        out = pp.bspline_prefilter(x, mode=mode)
        ref = x.astype(np.float64)
        for ax in (0, 1):
            ref = ndimage.spline_filter1d(ref, 3, axis=ax, mode=mode)
        if mode == "reflect" and min(shape[:2]) < 12:
            # scipy's 'reflect' initialisation is truncated for very short lines; padded lfilter is exact.
            z = np.sqrt(3) - 2
            ref = _lfilter_ref(x, 1 - z, (-z,), (0, 1), True, True, "reflect")
        _check(out, ref, rtol=3e-6)


def test_bspline_camera_roundtrip():
    # Coefficients convolved with the cubic B-spline kernel [1, 4, 1] / 6 give the image back.
    cam = skimage.data.camera().astype(np.float32)
    c = pp.bspline_prefilter(cam).astype(np.float64)
    k = np.array([1.0, 4.0, 1.0]) / 6
    back = ndimage.convolve1d(ndimage.convolve1d(c, k, axis=0, mode="mirror"), k, axis=1, mode="mirror")
    np.testing.assert_allclose(back, cam, atol=2e-3)


@pytest.mark.parametrize("mode", list(PAD))
def test_pole_near_one_folds_the_extension(mode, rng):
    # |pole| = 0.995: the boundary extension (thousands of samples) wraps around short lines many times.
    b0, a = 0.005, (-0.995,)
    x = rng.standard_normal((5, 100)).astype(np.float32)
    ref = _lfilter_ref(x, b0, a, (1,), True, True, mode)
    for method in ("block", "rt"):
        out = pp.recursive_filter(x, b0, a, axes=1, mode=_SP.get(mode, mode), method=method)
        _check(out, ref, rtol=2e-5)


def test_long_rows_block_method(rng):
    # 70,000-sample rows: past the RT baseline's per-thread loop budget; the block method is fine.
    b0, a = FILTERS[2]
    x = rng.standard_normal((3, 70_000)).astype(np.float32)
    out = pp.recursive_filter(x, b0, a, axes=1, mode="reflect")
    _check(out, _lfilter_ref(x, b0, a, (1,), True, True, "reflect"))
    s = pp.summed_area_table(np.ones((2, 70_000), np.uint8))
    assert s[1, -1] == 140_000 and s[0, 12345] == 12346


# Poles near the unit circle: a carry still matters many blocks later, so the fix-up's segment
# chains (and, with both directions, the matrices that take the causal states into the anticausal
# chain) decide the result; with faster poles they hardly show beyond a block.
# The tolerance (of the data's magnitude) grows with the poles' float32 noise gain: over 14 random
# inputs the worst errors were 2.3e-6, 1.2e-5 and 2.1e-5 (float32 scipy lfilter on the same data:
# 3e-6, 1.8e-5, 3.6e-4); a wrong or missing segment matrix Q errs by 4e-3 or more.
SLOW = [(0.02, (-0.98,), 1e-5), (0.001, (-1.94, 0.9604), 5e-5), (0.0005, (-2.8, 2.62, -0.8175), 1e-4)]


@pytest.mark.parametrize("filt", SLOW, ids=["order1", "order2", "order3"])
def test_fixup_chains_slow_poles(filt, rng):
    # Line lengths cut into 16 segments of SL blocks with a last segment of 1 block (K = 17), 2 of
    # 3 (K = 35), full (K = 64), and K = 129 (SL = 9: the looping fix-up); last blocks partial.
    b0, a, tol = filt
    for n, mode, causal, anti in [(17 * 64 - 5, "reflect", True, True), (35 * 64 - 30, "wrap", True, True),
                                  (64 * 64, "zero", True, True), (35 * 64 - 30, "mirror", True, False),
                                  (17 * 64 - 5, "nearest", False, True), (129 * 64 - 7, "reflect", True, True)]:
        x = rng.standard_normal((n, 3)).astype(np.float32)
        out = pp.recursive_filter(x, b0, a, axes=0, mode=_SP.get(mode, mode), causal=causal, anticausal=anti)
        _check(out, _lfilter_ref(x, b0, a, (0,), causal, anti, mode), rtol=tol)
        out = pp.recursive_filter(x.T.copy(), b0, a, axes=1, mode=_SP.get(mode, mode), causal=causal, anticausal=anti)
        _check(out, _lfilter_ref(x.T, b0, a, (1,), causal, anti, mode), rtol=tol)
    x = rng.standard_normal((17 * 64 - 5, 35 * 64 - 30)).astype(np.float32)  # overlapped: rows and columns
    _check(pp.recursive_filter(x, b0, a, mode="reflect"), _lfilter_ref(x, b0, a, (0, 1), True, True, "reflect"),
           rtol=tol)


@pytest.mark.parametrize("fix_seg, reg_max", [((16, 4, 2), 8), ((32, 8, 8), 8), ((32, 16, 4), 0)])
def test_recursive_filter_kernel_variants(fix_seg, reg_max, rng):
    # Other segmentings of the fix-up, or segments looping over their blocks (reg_max 0, as lines
    # past 8192 samples take them), every tile in workgroup memory: the same results as the
    # reference (the defaults run in every other test).
    b0, a = FILTERS[2]
    cases = [((200, 650), (0, 1), "reflect"), ((3, 4100), (1,), "wrap"), ((130, 67), (1, 0), "zero")]
    # every tile through the variants
    with pp.device().using(recfilter_fix_seg=fix_seg, recfilter_fix_reg_max=reg_max, recfilter_regtile=False):
        for shape, axes, mode in cases:
            x = rng.standard_normal(shape).astype(np.float32)
            out = pp.recursive_filter(x, b0, a, axes=axes, mode=_SP.get(mode, mode))
            _check(out, _lfilter_ref(x, b0, a, axes, True, True, mode))


def _poison_scratch(monkeypatch):
    """Fill every storage buffer the pool hands out with NaN; returns the device."""
    dev = pp.device()
    pooled = dev.alloc

    def poisoned(nbytes, usage=STORAGE_USAGE, label=""):
        buf = pooled(nbytes, usage, label)
        if usage == STORAGE_USAGE:
            dev.write(buf, np.full(buf.size // 4, np.nan, np.float32))
        return buf

    monkeypatch.setattr(dev, "alloc", poisoned)
    return dev


@pytest.mark.parametrize("regtile", [True, False])
@pytest.mark.parametrize("filt", FILTERS, ids=["order1", "order2", "order3"])
def test_recursive_filter_scratch_poisoned(filt, regtile, monkeypatch, rng):
    # Carries and boundary parts live in pooled scratch buffers. Filled with NaN first, any element
    # a kernel reads without having written it shows in the output (orders 1 and 2 leave the
    # states' third planes unwritten, so they must not read them either).
    dev = _poison_scratch(monkeypatch)
    b0, a = filt
    cases = [((128, 192), (0, 1), "reflect"), ((130, 67), (0, 1), "wrap"), ((70, 129), (1,), "mirror"),
             ((129, 70), (0,), "nearest")]
    with dev.using(recfilter_regtile=regtile):
        for shape, axes, mode in cases:
            x = rng.standard_normal(shape).astype(np.float32)
            out = pp.recursive_filter(x, b0, a, axes=axes, mode=_SP.get(mode, mode))
            _check(out, _lfilter_ref(x, b0, a, axes, True, True, mode))


@pytest.mark.parametrize("regtile", [True, False])
@pytest.mark.parametrize("filt", FILTERS, ids=["order1", "order2", "order3"])
def test_overlapped_register_tiles(filt, regtile, rng):
    # Full tiles of the overlapped column-row passes run with the tile in registers
    # (wgsl/filters/recfilter_reg.wgsl), the image's edge tiles in recfilter_pass_a/c.wgsl (EDGES); off, every
    # tile runs there. Sizes: exact tiles, edges on either axis or both, channels, one-sided filters.
    b0, a = filt
    cases = [((64, 64), "zero", True, True), ((128, 192), "reflect", True, True), ((129, 64), "wrap", True, True),
             ((64, 191), "nearest", True, True), ((193, 130, 2), "mirror", True, True),
             ((128, 128), "reflect", True, False), ((128, 128), "reflect", False, True)]
    with pp.device().using(recfilter_regtile=regtile):
        for shape, mode, causal, anti in cases:
            x = rng.standard_normal(shape).astype(np.float32)
            out = pp.recursive_filter(x, b0, a, mode=_SP.get(mode, mode), causal=causal, anticausal=anti)
            _check(out, _lfilter_ref(x, b0, a, (0, 1), causal, anti, mode))


@pytest.mark.parametrize("filt", FILTERS, ids=["order1", "order2", "order3"])
def test_overlapped_frame_first(filt, monkeypatch, rng):
    # Pass A launches the tiles that meet the boundary weights first (recfilter_reg.wgsl tile_of:
    # the rows above and below the interior rectangle, the tiles beside it, then the interior). A
    # tile mapped twice or never shows against the reference; the scratch is NaN-poisoned so that
    # unwritten carries show too. Shapes with an interior and a frame on every side.
    import pywgpuprims.recfilter as rf

    _poison_scratch(monkeypatch)
    frames = []
    real_frame = rf._frame

    def spy(full, rows, cols):
        fr = real_frame(full, rows, cols)
        frames.append(fr)
        return fr

    monkeypatch.setattr(rf, "_frame", spy)
    b0, a = filt
    for shape, mode in [((448, 512), "reflect"), ((640, 384), "wrap"), ((384, 448), "mirror"),
                        ((320, 576), "nearest")]:
        frames.clear()
        x = rng.standard_normal(shape).astype(np.float32)
        out = pp.recursive_filter(x, b0, a, mode=_SP.get(mode, mode))
        _check(out, _lfilter_ref(x, b0, a, (0, 1), True, True, mode))
        fr = frames[0]
        iw, ih = fr["fr_lhi"] - fr["fr_llo"], fr["fr_khi"] - fr["fr_klo"]
        assert fr["fr_llo"] > 0 and fr["fr_klo"] > 0 and 0 < iw < fr["fr_w"] - 1 and 0 < ih < fr["fr_h"] - 1, fr


# ----------------------------------------------------------- recursive filters past one binding
@pytest.mark.parametrize("method", ["block", "rt"])
@pytest.mark.parametrize("mode", list(PAD))
@pytest.mark.parametrize("shape", [(150, 37), (131, 33, 3)])
def test_recursive_filters_chunked(shape, mode, method, rng):
    """Bands of rows: along the rows exact, down the columns with ``_padlen`` rows of overlap,
    so the result equals the unchunked one to float32 rounding; both checked against padded
    lfilter (float64) and the chunked against the unchunked call."""
    dev = pp.device()
    x = rng.standard_normal(shape).astype(np.float32)
    smode = _SP.get(mode, mode)
    row = 4 * int(np.prod(shape[1:]))
    b0, a = FILTERS[2]
    sig = 3.0
    gb0, ga = _gaussian_coefs(sig)
    L = max(_padlen(*_coefs(b0, a, "test")), _padlen(*_coefs(gb0, ga, "test")))
    cases = [
        (lambda v: pp.recursive_filter(v, b0, a, mode=smode, method=method),
         _lfilter_ref(x, b0, a, (0, 1), True, True, mode)),
        (lambda v: pp.recursive_filter(v, b0, a, axes=0, anticausal=False, mode=smode, method=method),
         _lfilter_ref(x, b0, a, (0,), True, False, mode)),
        (lambda v: pp.gaussian_filter(v, sig, mode=smode, method=method),
         _lfilter_ref(x, gb0, ga, (0, 1), True, True, mode)),
    ]
    unchunked = [f(x) for f, _ in cases]
    for lim in (row * (2 * L + 1) + 3, row * (2 * L + 40) - 1, row * (shape[0] - 1)):
        with dev.using(max_binding=lim):
            got = [f(x) for f, _ in cases]
            gpu = cases[2][0](pp.asarray(x))
        assert isinstance(gpu, pp.GpuArray)
        for out, ref0, (_, ref) in zip(got + [gpu.numpy()], unchunked + [unchunked[2]], cases + [cases[2]],
                                       strict=True):
            _check(out, ref, rtol=3e-6 if method == "block" else 2e-6)
            _check(out, ref0, rtol=1e-6)


@pytest.mark.parametrize("shape", [(300, 80), (333, 33, 3), (270, 128)])
def test_recursive_filters_bands_in_place(shape, monkeypatch, rng):
    """Down the columns (block method), the tile passes band by band of whole 64-row blocks bound
    in place, the carries chained over the whole image: no copy recorded, every output row
    written (poisoned output), the result the unchunked one bit for bit and lfilter's (float64).
    Cases: the overlapped column-row pair, a column pass alone, rows then columns (two groups,
    the first into a scratch image), wrap; vec4 and scalar tiles, full and cut tiles; bands of
    one block, and limits that are and are not multiples of the alignment."""
    dev = pp.device()
    x = rng.standard_normal(shape).astype(np.float32)
    g = pp.asarray(x)
    row = 4 * int(np.prod(shape[1:]))
    b0, a = FILTERS[2]
    gb0, ga = _gaussian_coefs(3.0)
    f2, gs = _coefs(b0, a, "test"), _coefs(gb0, ga, "test")
    cases = [((*f2, True, True), (0, 1), "reflect", (b0, a)), ((*f2, True, False), (0,), "nearest", (b0, a)),
             ((*gs, True, True), (0, 1), "zero", (gb0, ga)), ((*gs, True, True), (1, 0), "mirror", (gb0, ga)),
             ((*f2, True, True), (0, 1), "wrap", (b0, a))]

    def no_copy(*args, **kw):
        raise AssertionError("a band was copied")

    for ps, axes, mode, (fb0, fa) in cases:
        unchunked = rf._filter_gpu(g, [ps], axes, mode, "block", "test").numpy()
        ref = _lfilter_ref(x, fb0, fa, axes, ps[3], ps[4], mode)
        for lim in (row * 64 + 4, row * 150 - 4, 4 * x.size // 2 + 16):
            with dev.using(max_binding=lim), monkeypatch.context() as m:
                m.setattr(rf._nd, "copy_rows", no_copy)
                out = poisoned(shape, np.float32)
                rf._filter_gpu(g, [ps], axes, mode, "block", "test", out=out)
            got = out.numpy()
            _check(got, ref, rtol=3e-6)
            np.testing.assert_array_equal(got, unchunked)


def test_recursive_filters_bands_frame_first(monkeypatch, rng):
    """Bands down the columns launch each band's tiles that meet the boundary weights first (a
    frame of the band's own blocks, FRAME_FIRST; two bands a dispatch, BANDS2, a frame of both):
    the unchunked result bit for bit, poisoned output."""
    dev = pp.device()
    frames = []
    orig = rf._frame

    def spy(*args):
        fr = orig(*args)
        frames.append((args[0], fr))
        return fr

    monkeypatch.setattr(rf, "_frame", spy)
    x = rng.standard_normal((448, 512)).astype(np.float32)
    g = pp.asarray(x)
    gb0, ga = _gaussian_coefs(3.0)
    ps = (*_coefs(gb0, ga, "test"), True, True)
    unchunked = rf._filter_gpu(g, [ps], (0, 1), "reflect", "block", "test").numpy()
    frames.clear()
    out = poisoned(x.shape, np.float32)
    with dev.using(max_binding=4 * 512 * 128 + 4):
        rf._filter_gpu(g, [ps], (0, 1), "reflect", "block", "test", out=out)
    np.testing.assert_array_equal(out.numpy(), unchunked)
    assert len(frames) == 2  # bands of two blocks (7 blocks), two by two
    assert [grid[1] for grid, _ in frames] == [4, 3]
    assert all(0 < (f["fr_lhi"] - f["fr_llo"]) * (f["fr_khi"] - f["fr_klo"]) < grid[0] * grid[1]
               for grid, f in frames), frames


def test_bspline_prefilter_chunked(rng):
    dev = pp.device()
    x = rng.standard_normal((203, 45)).astype(np.float32)
    ref = x.astype(np.float64)
    for ax in (0, 1):
        ref = ndimage.spline_filter1d(ref, 3, axis=ax, mode="mirror")
    with dev.using(max_binding=4 * 45 * 80 + 4):
        out = pp.bspline_prefilter(x)
    _check(out, ref, rtol=3e-6)
    with dev.using(max_binding=4 * 45 * 10), pytest.raises(pp.DeviceLimitError, match="bspline_prefilter"):
        pp.bspline_prefilter(x)  # the overlap (the filter's decay) does not fit a band
