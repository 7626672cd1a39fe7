"""GpuArray's small ndarray surface against numpy: indexing and slicing (views and copies),
``.T``, ``.astype``, ``.copy()``, ``len``, ``repr``, 0-d conversions, shape checks."""

import numpy as np
import pytest

import pywgpuprims as pp

KEYS = [0, -1, 2, (1, 2), (-1, -3), slice(1, 3), slice(None, None, 2), slice(3, 1), slice(-2, None),
        (slice(None), 1), (Ellipsis, 2), (None, 1), (1, slice(2, 5)), (1, Ellipsis), (slice(1, 3), slice(0, 6)),
        (slice(None), slice(None, None, -1)), Ellipsis, ()]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.uint8])
def test_indexing_matches_numpy(dtype, rng):
    a = (rng.random((9, 13)) * 200).astype(dtype)
    g = pp.asarray(a)
    for k in KEYS:
        r = g[k]
        assert isinstance(r, pp.GpuArray)
        want = a[k]
        np.testing.assert_array_equal(r.numpy(), want, err_msg=str(k))
        assert r.shape == np.shape(want) and r.dtype == a.dtype
    for k in [np.array([0, 4, 2]), a[:, 0] > 100, [1, 1, 3], (np.array([0, 2]), np.array([1, 5]))]:
        np.testing.assert_array_equal(g[k].numpy(), a[k])
    np.testing.assert_array_equal(g[pp.asarray(np.array([2, 0], np.int32))].numpy(), a[[2, 0]])


def test_views_and_copies(dev):
    a = np.arange(4 * 64, dtype=np.float32).reshape(4, 64)
    g = pp.asarray(a)
    def block(x):
        return getattr(x.buffer, "block", x.buffer)

    # contiguous runs that start on the storage alignment (rows of 256 bytes here): views
    for k in (0, slice(0, 2), (Ellipsis, slice(None)), None, (0, slice(0, 5)), 2, slice(1, 3)):
        v = g[k]
        assert block(v) is g.buffer and v.byte_offset == 0
        np.testing.assert_array_equal(v.numpy(), a[k])
    assert g[0:4].buffer is g.buffer and g[None].buffer is g.buffer  # the whole array: its own buffer
    for k in ((1, slice(1, 5)), (slice(None), 3), (slice(None), slice(None, None, -1))):  # copies
        c = g[k]
        assert block(c) is not g.buffer and c.byte_offset == 0
        np.testing.assert_array_equal(c.numpy(), a[k])
    # views and copies feed the primitives like any array
    np.testing.assert_array_equal(pp.scan(g[0]).numpy(), np.cumsum(a[0], dtype=np.float32))
    np.testing.assert_array_equal(pp.scan(g[1]).numpy(), np.cumsum(a[1], dtype=np.float32))
    c = g.copy()
    assert c.buffer is not g.buffer
    np.testing.assert_array_equal(c.numpy(), a)
    u8 = pp.asarray(np.arange(50, dtype=np.uint8))
    np.testing.assert_array_equal(u8[3:10].copy().numpy(), np.arange(3, 10, dtype=np.uint8))
    np.testing.assert_array_equal(u8[4:10].numpy(), np.arange(4, 10, dtype=np.uint8))


def test_out_of_range_and_bad_keys():
    g = pp.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    for k in [2, (0, 3), (-3,), np.array([5])]:
        with pytest.raises(IndexError):
            g[k]
        with pytest.raises(pp.InputError, match="GpuArray"):
            g[k]
    with pytest.raises(pp.InputError, match="GpuArray"):
        g["a"]
    with pytest.raises(pp.InputError, match="GpuArray"):
        g[1.5]
    assert [int(v) for v in pp.asarray(np.array([4, 5, 6], np.int32))] == [4, 5, 6]  # iteration ends


def test_transpose_astype_len(rng):
    a = rng.standard_normal((5, 3, 2)).astype(np.float32)
    g = pp.asarray(a)
    np.testing.assert_array_equal(g.T.numpy(), a.T)
    v = pp.asarray(a[0, 0])
    assert v.T is v
    assert len(g) == 5 and g.size == a.size and g.ndim == 3 and g.nbytes == a.nbytes and g.itemsize == 4
    for dt in (np.int32, np.uint32, np.uint8, np.float32):
        np.testing.assert_array_equal(g.astype(dt).numpy(), a.astype(dt))
    same = g.astype(np.float32)
    assert same.buffer is not g.buffer and g.astype(np.float32, copy=False) is g
    with pytest.raises(pp.InputError, match="astype"):
        g.astype(np.complex64)
    with pytest.raises(pp.InputError, match="astype"):
        g.astype("nonsense")
    with pytest.raises(TypeError):
        len(pp.asarray(np.float32(2)))


def test_zero_d_and_repr():
    z = pp.asarray(np.float32(2.5))
    assert z.shape == () and float(z) == 2.5 and int(pp.asarray(np.int32(-7))) == -7
    g = pp.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert float(g[1, 2]) == 5.0 and int(g[0, 1]) == 1 and g[1, 2].shape == ()
    with pytest.raises(pp.InputError, match="item"):
        float(g)
    r = repr(g)
    assert r.startswith("GpuArray([[0, 1, 2],") and "dtype=int32" in r and g.device.adapter_summary in r
    assert str(g) == str(g.numpy())
    assert repr(z).startswith("GpuArray(2.5, dtype=float32")
    big = pp.GpuArray.empty((5000,), np.uint32)
    assert repr(big).startswith("GpuArray(shape=(5000,)")


@pytest.mark.parametrize("shape", [(-4,), (3, -1), (2.5,), ("3",), (True,), None])
def test_empty_refuses_bad_shapes(shape):
    with pytest.raises(pp.InputError, match="GpuArray.empty"):
        pp.GpuArray.empty(shape, np.float32)


# ------------------------------------------------------------------------------ mid-buffer views
def _host_array(n, dtype, rng):
    if np.dtype(dtype).kind == "f":
        return rng.random(n).astype(dtype)
    return rng.integers(0, 100, n).astype(dtype)


def _poisoned_around(a: np.ndarray, lo: int, hi: int, dev) -> tuple[pp.GpuArray, np.ndarray]:
    """A GpuArray of ``lo + a.size + hi`` elements: ``a`` in the middle, poison around it; and the
    host copy of the whole, to check that the neighbours stay as they were."""
    whole = np.empty(lo + a.size + hi, a.dtype)
    whole.view(np.uint8)[:] = 0xA5
    whole[lo:lo + a.size] = a
    return pp.asarray(whole), whole


def _starts(dev, itemsize: int) -> list[int]:
    """Element offsets: aligned for a binding (a view) and not (a copy)."""
    step = dev.storage_align // itemsize
    return [step, 3 * step, 1, step + 1]


def test_aligned_slices_are_views(dev, rng):
    a = rng.random(1000).astype(np.float32)
    g = pp.asarray(a)
    step = dev.storage_align // 4
    for key in (slice(step, None), slice(2 * step, 700), slice(0, 123), (slice(step, 5 * step),)):
        v = g[key]
        assert v.buffer is not g.buffer and getattr(v.buffer, "block", None) is g.buffer, key  # no copy
        np.testing.assert_array_equal(v.numpy(), a[key])
        np.testing.assert_array_equal(v[step:].numpy(), a[key][step:])  # a view of a view
    c = g[1:10]  # off the alignment: a copy
    assert getattr(c.buffer, "block", c.buffer) is not g.buffer
    np.testing.assert_array_equal(c.numpy(), a[1:10])
    # the view keeps its buffer alive after the array it came from has gone
    v = g[step:]
    del g
    np.testing.assert_array_equal(v.numpy(), a[step:])
    # views of 2-D arrays: whole rows
    m = rng.random((40, 2 * step)).astype(np.float32)
    gm = pp.asarray(m)
    np.testing.assert_array_equal(gm[3:9].numpy(), m[3:9])
    np.testing.assert_allclose(pp.scan(gm[3:9], dtype=np.float32).numpy(),
                               np.cumsum(m[3:9], axis=-1, dtype=np.float32), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.uint32, np.int64, np.uint8])
def test_primitives_read_views(dev, rng, dtype):
    """scan, reduce, count_nonzero, compact, nonzero and rle_encode give numpy's answer on views
    that start inside a buffer (aligned: views; unaligned: copies), whatever lies around them."""
    itemsize = np.dtype(dtype).itemsize
    for n in (1, 37, 1000, 4099):
        a = _host_array(n, dtype, rng)
        for lo in _starts(dev, itemsize):
            g, whole = _poisoned_around(a, lo, 40, dev)
            v = g[lo:lo + n]
            assert v.shape == (n,)
            np.testing.assert_array_equal(v.numpy(), a)
            rd = np.dtype(dtype) if itemsize == 4 else None
            got = pp.scan(v, dtype=rd).numpy()
            want = np.cumsum(a, dtype=rd)
            if np.dtype(dtype).kind == "f":
                np.testing.assert_allclose(got, want, rtol=1e-5)
                assert float(pp.reduce(v)) == pytest.approx(float(a.sum(dtype=np.float64)), rel=1e-5)
            else:
                np.testing.assert_array_equal(got, want)
                assert int(pp.reduce(v)) == int(a.sum())
                assert int(pp.reduce(v, op="max")) == int(a.max())
            assert int(pp.count_nonzero(v)) == np.count_nonzero(a)
            if itemsize in (1, 4):
                mask = rng.random(n) < 0.5
                np.testing.assert_array_equal(pp.compact(v, pp.asarray(mask)).numpy(), a[mask])
                gm, _ = _poisoned_around(mask, 4 * dev.storage_align, 40, dev)
                np.testing.assert_array_equal(pp.compact(v, gm[4 * dev.storage_align:][:n]).numpy(), a[mask])
                if np.dtype(dtype).kind != "f":  # nonzero takes integer masks
                    np.testing.assert_array_equal(pp.flatnonzero(v).numpy(), np.flatnonzero(a))
                rl = pp.rle_encode(v)
                starts = np.concatenate(([0], np.flatnonzero(np.diff(a)) + 1))
                values, counts = rl.numpy()
                np.testing.assert_array_equal(values, a[starts])
                np.testing.assert_array_equal(counts, np.diff(np.append(starts, n)))
                np.testing.assert_array_equal(pp.rle_decode(rl).numpy(), a)
            np.testing.assert_array_equal(g.numpy().view(np.uint8), whole.view(np.uint8))  # nothing written


def test_scan_writes_inside_an_output_view(dev, rng):
    """``out=`` a view: the result lands in it and the elements around it keep their values. The
    kernels write whole 16-byte words, so a view whose last word holds elements of the array
    around it is refused (PrimitiveError), and nothing is written; one that ends where its array
    ends (its last word's rest is padding) is written."""
    step = dev.storage_align // 4
    for n in (1, 5, 1000, 4096, 4097):
        a = rng.random(n).astype(np.float32)
        want = np.cumsum(a, dtype=np.float32)
        for lo, hi in ((step, 7), (4 * step, 8), (step, 0)):
            g, whole = _poisoned_around(np.zeros(n, np.float32), lo, hi, dev)
            out = g[lo:lo + n]
            if n % 4 and hi:
                with pytest.raises(pp.PrimitiveError, match="16-byte"):
                    pp.scan(pp.asarray(a), dtype=np.float32, out=out)
            else:
                assert pp.scan(pp.asarray(a), dtype=np.float32, out=out) is out
                whole[lo:lo + n] = want
            got = g.numpy()
            np.testing.assert_allclose(got[lo:lo + n], whole[lo:lo + n], rtol=1e-5)
            np.testing.assert_array_equal(got[:lo].view(np.uint32), whole[:lo].view(np.uint32))
            np.testing.assert_array_equal(got[lo + n:].view(np.uint32), whole[lo + n:].view(np.uint32))


def test_image_primitives_read_row_views(dev, rng):
    """Row ranges of a 2-D GpuArray are views (aligned starts) the image primitives read as numpy."""
    from scipy import ndimage

    img = rng.random((70, 2 * dev.storage_align)).astype(np.float32)
    g = pp.asarray(img)
    for r0, r1 in ((1, 40), (5, 70), (2, 3)):
        v = g[r0:r1]
        sub = img[r0:r1]
        np.testing.assert_allclose(pp.summed_area_table(v).numpy(), sub.cumsum(0).cumsum(1), rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(pp.box_filter(v, 2).numpy(), ndimage.uniform_filter(sub, 5, mode="reflect"),
                                   rtol=1e-4, atol=1e-5)
        gauss = pp.gaussian_filter(v, 1.5).numpy()  # a recursive filter: scipy's FIR within about 1%
        np.testing.assert_allclose(gauss, ndimage.gaussian_filter(sub, 1.5), atol=3e-2)
        np.testing.assert_array_equal(gauss, pp.gaussian_filter(sub, 1.5))  # the view as its copy
    np.testing.assert_array_equal(g.numpy(), img)


def test_output_view_of_the_input_array_is_refused(dev, rng):
    """A dispatch cannot read and write one buffer (WebGPU): an output view of the input's array
    raises the library's error, and nothing is written."""
    step = dev.storage_align // 4
    a = rng.random(8 * step).astype(np.float32)
    g = pp.asarray(a)
    src = slice(step, 3 * step)
    for dst in (slice(5 * step, 7 * step), src):
        with pytest.raises(pp.PrimitiveError, match="share one buffer"):
            pp.scan(g[src], dtype=np.float32, out=g[dst])
    np.testing.assert_array_equal(g.numpy(), a)
