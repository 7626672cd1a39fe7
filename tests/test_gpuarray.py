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
    for k in (0, slice(0, 2), (Ellipsis, slice(None)), None, (0, slice(0, 5))):  # from the start: views
        v = g[k]
        assert v.buffer is g.buffer and v.byte_offset == 0
        np.testing.assert_array_equal(v.numpy(), a[k])
    for k in (2, slice(1, 3), (1, slice(1, 5)), (slice(None), 3), (slice(None), slice(None, None, -1))):  # copies
        c = g[k]
        assert c.buffer is not g.buffer and c.byte_offset == 0
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
