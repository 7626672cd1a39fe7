"""correlate: multi-kernel 2-D/3-D correlation against scipy.signal / scipy.ndimage."""

import numpy as np
import pytest
import scipy.ndimage as ndi
import scipy.signal as sps
from conftest import poisoned

import pywgpuprims as pp
from pywgpuprims.conv import Config, _cached_config, save_choice


def _volume(rng, shape, dtype):
    if dtype == "uint8":
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.standard_normal(shape).astype(np.float32)


def _reference(v, w, mode, boundary):
    v64 = v.astype(np.float64)
    if mode == "valid":
        return np.stack([sps.correlate(v64, w[k].astype(np.float64), "valid") for k in range(len(w))])
    return np.stack([ndi.correlate(v, w[k], mode=boundary, output=np.float64) for k in range(len(w))])


def _check(v, w, mode="valid", boundary="reflect", **kw):
    ref = _reference(v, w, mode, boundary)
    got = pp.correlate(v, w, mode=boundary, output_shape=mode, **kw)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == ref.shape
    # float32 accumulation error bound: taps * eps * max|v| * max|w| (with margin)
    taps = w[0].size
    tol = 4 * taps * np.finfo(np.float32).eps * float(np.abs(v).max() or 1) * float(np.abs(w).max() or 1) + 1e-6
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)
    return got


# Each kernel size and each K appears; volumes are not multiples of the tiles (lavapipe: 32 x 4).
VALID_CASES = [
    # (kernel size, K, volume shape, dtype)
    (1, 3, (5, 9, 33), "float32"),
    (2, 16, (6, 13, 35), "uint8"),
    (3, 1, (7, 5, 70), "uint8"),
    (3, 32, (5, 10, 31), "float32"),
    (5, 4, (9, 11, 37), "float32"),
    (5, 8, (8, 9, 36), "uint8"),
    (7, 2, (9, 13, 41), "uint8"),
    (7, 8, (8, 12, 39), "float32"),
    (9, 16, (10, 12, 40), "uint8"),
    (9, 3, (9, 9, 9), "float32"),
]


@pytest.mark.parametrize("ks,k,shape,dtype", VALID_CASES)
def test_valid_3d(ks, k, shape, dtype, rng):
    v = _volume(rng, shape, dtype)
    w = rng.standard_normal((k, ks, ks, ks)).astype(np.float32)
    _check(v, w, "valid")


@pytest.mark.parametrize("ksize,k,dtype", [((3, 5, 2), 5, "uint8"), ((2, 1, 7), 4, "float32"),
                                           ((1, 9, 3), 2, "float32")])
def test_valid_anisotropic(ksize, k, dtype, rng):
    v = _volume(rng, (11, 14, 38), dtype)
    w = rng.standard_normal((k, *ksize)).astype(np.float32)
    _check(v, w, "valid")


SAME_CASES = [
    # (kernel size, K, boundary, dtype) over small non-tile volumes; even sizes test the origin rule
    (1, 2, "constant", "uint8"),
    (2, 3, "reflect", "float32"),
    (2, 8, "nearest", "uint8"),
    (3, 4, "constant", "float32"),
    (3, 1, "reflect", "uint8"),
    (4, 2, "constant", "uint8"),
    (5, 16, "nearest", "float32"),
    (5, 8, "reflect", "uint8"),
    (7, 1, "nearest", "uint8"),
    (7, 3, "constant", "float32"),
    (9, 4, "reflect", "float32"),
    (9, 32, "constant", "uint8"),
]


@pytest.mark.parametrize("ks,k,boundary,dtype", SAME_CASES)
def test_same_3d(ks, k, boundary, dtype, rng):
    v = _volume(rng, (6, 11, 35), dtype)
    w = rng.standard_normal((k, ks, ks, ks)).astype(np.float32)
    _check(v, w, "same", boundary)


@pytest.mark.parametrize("boundary", ["constant", "nearest", "reflect"])
def test_same_kernel_larger_than_volume(boundary, rng):
    # Reflection past more than one period, clamping and zeros far outside the volume.
    v = _volume(rng, (3, 4, 5), "float32")
    w = rng.standard_normal((2, 8, 9, 12)).astype(np.float32)
    _check(v, w, "same", boundary)


@pytest.mark.parametrize("mode,boundary", [("valid", "reflect"), ("same", "constant"), ("same", "nearest"),
                                           ("same", "reflect")])
@pytest.mark.parametrize("ks,k,dtype", [(3, 8, "uint8"), (4, 2, "float32"), (7, 32, "float32"),
                                        (9, 1, "uint8")])
def test_2d(ks, k, dtype, mode, boundary, rng):
    v = _volume(rng, (37, 71), dtype)
    w = rng.standard_normal((k, ks, ks)).astype(np.float32)
    _check(v, w, mode, boundary)


CONFIGS = [Config(4, 4, 8, 4), Config(8, 8, 16, 8), Config(12, 8, 8, 2), Config(16, 4, 4, 4, unroll=64),
           Config(8, 8, 16, 8, db=True), Config(4, 3, 8, 4, unroll=64, db=True), Config(16, 1, 4, 2, db=True),
           Config(4, 16, 16, 1), Config(8, 2, 8, 8), Config(4, 1, 32, 2), Config(8, 4, 8, 4, uz=3),
           Config(16, 1, 8, 2, uz=4, unroll=64), Config(4, 8, 8, 4, uz=2, db=True),
           Config(8, 8, 16, 8, cs=False), Config(4, 3, 8, 4, unroll=64, db=True, cs=False),
           Config(8, 4, 8, 4, uz=3, cs=False), Config(12, 2, 4, 8, cs=False)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.name + f" r{c.unroll}" + f" z{c.uz}" for c in CONFIGS])
def test_configs_agree(cfg, rng):
    # Every unroll factor / kernel block / workgroup shape of the sweep computes the same thing.
    v = _volume(rng, (7, 13, 67), "uint8")
    w = rng.standard_normal((6, 3, 4, 3)).astype(np.float32)
    _check(v, w, "same", "reflect", config=cfg)


def test_gpuarray_in_out_and_poison(rng):
    v = _volume(rng, (6, 9, 45), "float32")
    w = rng.standard_normal((3, 3, 3, 3)).astype(np.float32)
    out = poisoned((3, 4, 7, 43), np.float32)
    got = pp.correlate(pp.asarray(v), w, output_shape="valid", out=out)
    assert got is out or got.buffer is out.buffer
    ref = _reference(v, w, "valid", None)
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-4)
    g = pp.correlate(pp.asarray(v), w, "nearest")
    assert isinstance(g, pp.GpuArray) and g.shape == (3, 6, 9, 45)
    v2 = _volume(rng, (19, 38), "uint8")
    w2 = rng.standard_normal((5, 4, 3)).astype(np.float32)
    out2 = poisoned((5, 16, 36), np.float32)
    g2 = pp.correlate(pp.asarray(v2), w2, output_shape="valid", out=out2)
    assert isinstance(g2, pp.GpuArray) and g2.shape == (5, 16, 36)
    np.testing.assert_allclose(g2.numpy(), _reference(v2, w2, "valid", None), atol=2e-3)
    with pytest.raises(pp.InputError, match="out must be"):
        pp.correlate(v2, w2, output_shape="valid", out=poisoned((5, 16, 35), np.float32))


def test_chunked_bindings(dev, rng):
    # Force small storage bindings so the volume and the result are bound a few planes at a time.
    v = _volume(rng, (23, 17, 29), "uint8")
    w = rng.standard_normal((9, 3, 2, 3)).astype(np.float32)
    with dev.using(max_binding=6 * 17 * 29 * 4 + 4 * 256):
        _check(v, w, "valid", config=Config(4, 1, 8, 4))
        _check(v, w, "same", "reflect", config=Config(4, 1, 8, 4))
        _check(v, w, "same", "nearest", config=Config(4, 2, 8, 4, uz=3))
        _check(v, w, "same", "constant", config=Config(4, 8, 8, 4, db=True))  # the kernel block shrinks to fit
    with dev.using(max_binding=1000):
        _check(v, w, "same", "reflect")  # less than one plane: bands of rows (uint8 planes of odd words: float32)
    with dev.using(max_binding=300), pytest.raises(pp.DeviceLimitError, match="storage binding"):
        pp.correlate(v, w)  # not one row with its overlap
    with dev.using(max_binding=300), pytest.raises(pp.DeviceLimitError, match="whole 4-byte words"):
        pp.correlate(pp.asarray(v), w)


@pytest.mark.parametrize("case", [
    ((53, 41), "float32", (3, 3)), ((53, 42), "uint8", (4, 2)), ((61, 37), "uint8", (5, 1)),
    ((5, 20, 31), "float32", (2, 3, 3)), ((4, 24, 29), "uint8", (3, 4, 2)), ((3, 17, 33), "float32", (1, 1, 5)),
])
def test_bands_of_rows(case, dev, rng):
    """Planes past one storage binding: bands of output rows with the kernel's overlap, equal to the
    unchunked call bit for bit and to scipy within float32 rounding, into poisoned outputs."""
    shape, dtype, ks = case
    v = _volume(rng, shape, dtype)
    w = rng.standard_normal((3, *ks)).astype(np.float32)
    row = 4 * shape[-1]
    for output_shape, boundary in (("same", "reflect"), ("same", "nearest"), ("same", "constant"),
                                   ("same", "wrap"), ("valid", "reflect")):
        ref = pp.correlate(v, w, boundary, output_shape=output_shape)
        for lim in (row * (ks[-2] + 10) + 37, row * (ks[-2] + 16) - 1, row * (shape[-2] - 2)):
            dev_out = poisoned(ref.shape, np.float32)
            with dev.using(max_binding=lim):
                got = _check(v, w, output_shape, boundary)
                g = pp.correlate(pp.asarray(v), w, boundary, output_shape=output_shape, out=dev_out)
            np.testing.assert_array_equal(got, ref)
            np.testing.assert_array_equal(g.numpy(), ref)


@pytest.mark.parametrize("case", [((70, 45), "float32", 9, (5, 3)), ((61, 37), "uint8", 5, (4, 2))])
def test_bands_in_place(case, dev, rng):
    """One plane whose results (several kernel blocks, the last short of kernels) or input pass a
    binding: bands bound in place, each kernel's rows through a binding of its own; bit for bit the
    unchunked call, into poisoned outputs, also from a view that starts past an aligned offset."""
    shape, dtype, k, ks = case
    v = _volume(rng, shape, dtype)
    w = rng.standard_normal((k, *ks)).astype(np.float32)
    plane = 4 * shape[0] * shape[1]
    big = pp.asarray(np.concatenate([np.zeros(7 * shape[1], v.dtype), v.ravel()]))
    view = pp.GpuArray(dev, big.buffer, shape, v.dtype, big.byte_offset + 7 * shape[1] * v.itemsize)
    cfg = Config(4, 4, 8, 4)
    for output_shape, mode in (("same", "reflect"), ("same", "constant"), ("valid", "reflect")):
        ref = _check(v, w, output_shape, mode, config=cfg)
        # aligned and odd limits: the planes of a block pass; one plane passes; bands of few rows
        for lim in (2 * plane, plane + 37, plane - 4, 4 * shape[1] * (ks[0] + 6) + 5):
            out = poisoned(ref.shape, np.float32)
            with dev.using(max_binding=lim):
                got = pp.correlate(view, w, mode, output_shape=output_shape, config=cfg, out=out)
            np.testing.assert_array_equal(got.numpy(), ref)


def test_errors(dev):
    v = np.zeros((5, 6, 7), np.float32)
    with pytest.raises(pp.InputError, match="exceeds the volume"):
        pp.correlate(v, np.zeros((1, 3, 7, 3), np.float32), output_shape="valid")
    with pytest.raises(pp.InputError, match="exceeds the volume"):
        pp.correlate(v[0], np.zeros((2, 7, 8), np.float32), output_shape="valid")
    with pytest.raises(pp.InputError, match="kernels of shape"):
        pp.correlate(v, np.zeros((3, 3, 3), np.float32))
    with pytest.raises(pp.InputError, match="dimensions"):
        pp.correlate(np.zeros(5, np.float32), np.zeros((1, 3), np.float32))
    with pytest.raises(pp.InputError, match="dtype"):
        pp.correlate(v.astype(np.float64), np.zeros((1, 3, 3, 3), np.float32))
    with pytest.raises(pp.InputError, match="output_shape"):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), output_shape="full")
    with pytest.raises(pp.InputError, match="mode 'bogus'"):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), mode="bogus")
    # the spellings before issue 39 (mode = output size, boundary = extension) fail loudly
    with pytest.raises(pp.InputError, match="output_shape='valid'"):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), "valid")
    with pytest.raises(pp.InputError, match="output_shape='same'"):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), mode="same")
    with pytest.raises(pp.InputError, match="boundary= is now mode="):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), boundary="nearest")
    with pytest.raises(pp.InputError, match="cval must be a number"):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), "reflect", "nearest")
    with pytest.raises(pp.InputError, match="origin 2 is out of range"):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), origin=(0, 2, 0))
    with pytest.raises(pp.InputError, match="origin applies"):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), origin=1, output_shape="valid")
    with pytest.raises(pp.InputError, match="K and every kernel size"):
        pp.correlate(v, np.zeros((0, 3, 3, 3), np.float32))
    with pytest.raises(pp.InputError, match="NaN"):
        pp.correlate(v, np.full((1, 1, 1, 1), np.nan, np.float32))
    with pytest.raises(pp.InputError, match="bad config"):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), config=Config(u=6))
    with pytest.raises(pp.InputError, match="bad config"):
        pp.correlate(v, np.zeros((1, 3, 3, 3), np.float32), config=Config(wgx=64, wgy=64))
    # K beyond the device: the result would not fit one buffer.
    big = np.zeros((64, 64, 64), np.uint8)
    k = dev.max_buffer // (4 * big.size) + 1
    with pytest.raises(pp.DeviceLimitError, match="largest buffer"):
        pp.correlate(big, np.ones((k, 1, 1, 1), np.float32))
    # A kernel plane too large for workgroup memory.
    with pytest.raises(pp.DeviceLimitError, match="workgroup memory"):
        pp.correlate(np.zeros((1, 300, 300), np.float32), np.ones((1, 1, 300, 300), np.float32))


def test_tuning_cache(dev, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _cached_config(dev, (3, 3, 3), 8, np.uint8) is None
    cfg = Config(12, 8, 8, 2)
    save_choice(dev, (3, 3, 3), 8, np.uint8, cfg)
    assert _cached_config(dev, (3, 3, 3), 8, np.uint8) == cfg
    assert _cached_config(dev, (3, 3, 3), 16, np.uint8) is None


@pytest.mark.parametrize("boundary", ["reflect", "constant", "nearest", "mirror", "wrap"])
def test_origin(boundary, rng):
    v = _volume(rng, (7, 11, 13), "float32")
    w = rng.standard_normal((2, 3, 4, 2)).astype(np.float32)
    for origin in (0, -1, (1, -2, 0), (-1, 1, -1)):
        got = pp.correlate(v, w, boundary, 0.5, origin)
        for k in range(2):
            ref = ndi.correlate(v.astype(np.float64), w[k].astype(np.float64), mode=boundary, cval=0.5, origin=origin)
            np.testing.assert_allclose(got[k], ref, rtol=0, atol=1e-4)
