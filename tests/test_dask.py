"""pywgpuprims.dask against numpy/scipy/scikit-image (or the unchunked call) on uneven chunks,
on Dask's default scheduler and on a real dask.distributed LocalCluster of worker processes."""

import logging
import subprocess
import sys

import numpy as np
import pytest
import scipy.ndimage as ndi

import pywgpuprims as pp

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
ppd = pytest.importorskip("pywgpuprims.dask")


def uneven(rng, n: int, ones: int = 2) -> tuple[int, ...]:
    """A random split of n into chunks, with some chunks of one element."""
    parts = []
    left = n
    while left > 0:
        k = 1 if (len(parts) < ones or rng.random() < 0.2) else int(rng.integers(1, max(2, n // 3) + 1))
        k = min(k, left)
        parts.append(k)
        left -= k
    rng.shuffle(parts)
    return tuple(parts)


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def test_import_does_not_load_dask():
    code = ("import sys, pywgpuprims; "
            "print(any(m.split('.')[0] in ('dask', 'distributed', 'zarr', 'numcodecs') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# ----------------------------------------------------------------------------- scan and reduce
@pytest.mark.parametrize("dtype", [np.uint32, np.int32, np.float32, np.uint8, np.int16, np.bool_])
def test_cumsum_1d(rng, dtype):
    n = int(rng.integers(50, 3000))
    x = rand(rng, n, dtype)
    d = da.from_array(x, chunks=(uneven(rng, n),))
    for kw in ({}, {"dtype": x.dtype}):  # numpy's result dtype (uint64 / int64 for integers), or x's
        got = ppd.cumsum(d, **kw).compute()
        want = np.cumsum(x, **kw)
        assert got.dtype == want.dtype and ppd.cumsum(d, **kw).dtype == want.dtype, kw
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(got, want, atol=1e-5 * n * 4)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [0, 1, 2, None])
def test_scan_nd_ops(rng, axis):
    shape = (int(rng.integers(2, 9)), int(rng.integers(2, 40)), int(rng.integers(2, 9)))
    x = rand(rng, shape, np.int32)
    d = da.from_array(x, chunks=tuple(uneven(rng, n, 1) for n in shape))
    for op, fn in (("add", np.add), ("min", np.minimum), ("max", np.maximum), ("xor", np.bitwise_xor)):
        for dt in (None, np.int32):
            got = ppd.scan(d, op, axis=axis, dtype=dt).compute()
            # np.cumsum's dtype for add (int64), the input's for the others, or dtype=
            want_dt = dt or (np.int64 if op == "add" else np.int32)
            want = fn.accumulate(x.ravel() if axis is None else x, axis=0 if axis is None else axis, dtype=want_dt)
            assert got.dtype == want.dtype, (op, dt)
            np.testing.assert_array_equal(got, want, err_msg=op)


@pytest.mark.parametrize("dtype", [np.uint32, np.int32, np.float32])
def test_reduce(rng, dtype):
    shape = (int(rng.integers(3, 30)), int(rng.integers(3, 300)))
    x = rand(rng, shape, dtype)
    if np.dtype(dtype).kind == "f":
        x[rng.integers(0, shape[0]), rng.integers(0, shape[1])] = np.nan  # min / max propagate it
    d = da.from_array(x, chunks=(uneven(rng, shape[0], 1), uneven(rng, shape[1])))
    sums = (("sum", {}, np.sum), ("sum", {"dtype": dtype}, lambda a, **k: np.sum(a, dtype=dtype, **k)))
    for axis in (None, 0, 1, (0, 1)):
        for name, kw, fn in (*sums, ("min", {}, np.min), ("max", {}, np.max)):
            got = np.asarray(getattr(ppd, name)(d, axis=axis, **kw).compute())
            want = fn(x, axis=axis)
            assert got.dtype == want.dtype and got.shape == np.shape(want), (name, kw, axis)
            if np.dtype(dtype).kind == "f" and name == "sum":
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * x.size ** 0.5)
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{name} axis={axis}")
    got = ppd.reduce(d, "max", axis=1, keepdims=True).compute()
    np.testing.assert_array_equal(got, x.max(axis=1, keepdims=True))


def test_bad_input():
    with pytest.raises(pp.InputError, match="dask.scan"):
        ppd.cumsum(da.ones(10, dtype=np.complex64, chunks=3))
    with pytest.raises(pp.InputError, match="dask.scan"):
        ppd.scan(da.ones(10, dtype=np.float32, chunks=3), "xor")
    with pytest.raises(pp.InputError, match="dask.reduce"):
        ppd.sum(da.ones(10, dtype=np.int32, chunks=3), dtype=np.complex64)
    with pytest.raises(pp.InputError, match="mode"):
        ppd.gaussian_filter(da.ones((9, 9), dtype=np.float32, chunks=3), 1.0, "zero")
    with pytest.raises(pp.InputError, match="op"):
        ppd.scan(da.ones(10, dtype=np.int32, chunks=3), "mul")
    with pytest.raises(pp.InputError, match="dask.reduce"):
        ppd.reduce(np.ones(3, np.int32))
    with pytest.raises(pp.InputError, match="no identity"):
        ppd.min(da.ones(0, dtype=np.int32, chunks=3))
    with pytest.raises(pp.InputError, match="n_gpus"):
        ppd.gpu_cluster(len(pp.devices()) + 1)


# ----------------------------------------------------------------------------- filters
@pytest.mark.parametrize("mode", ["constant", "clip", "reflect", "wrap"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_box_filter(rng, mode, dtype):
    shape = (int(rng.integers(10, 60)), int(rng.integers(10, 60)))
    x = rand(rng, shape, dtype)
    r = int(rng.integers(0, 6))
    d = da.from_array(x, chunks=(uneven(rng, shape[0]), uneven(rng, shape[1])))
    got = ppd.box_filter(d, r, mode).compute()
    if mode == "clip":
        xs = x.astype(np.float64)
        want = ndi.uniform_filter(xs, 2 * r + 1, mode="constant", cval=0)
        want = want / ndi.uniform_filter(np.ones_like(xs), 2 * r + 1, mode="constant", cval=0)
        assert got.dtype == np.float32
    else:  # scipy on the image itself: its dtype, integers truncated as scipy does
        want = ndi.uniform_filter(x, 2 * r + 1, mode=mode)
        assert got.dtype == x.dtype
    if got.dtype.kind == "u":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4 * np.abs(x).max())


@pytest.mark.parametrize("mode", ["constant", "nearest", "reflect", "mirror", "wrap", "grid-wrap"])
def test_correlate(rng, mode):
    """scipy.ndimage.correlate's mode, cval and origin (per axis, reaching either way) over uneven
    chunks, 3-D float32 and 2-D uint8 (a cval uint8 cannot hold)."""
    shape = (int(rng.integers(4, 12)), int(rng.integers(5, 30)), int(rng.integers(5, 30)))
    x = rand(rng, shape, np.float32)
    w = rng.standard_normal((2, 3, int(rng.integers(1, 6)), 4)).astype(np.float32)  # odd and even sizes
    d = da.from_array(x, chunks=tuple(uneven(rng, n) for n in shape))
    origin = (0, int(rng.integers(-(w.shape[2] // 2), (w.shape[2] - 1) // 2 + 1)), -2)
    cval = float(rng.standard_normal())
    got = ppd.correlate(d, w, mode=mode, cval=cval, origin=origin).compute()
    assert got.shape == (2, *shape)
    for k in range(2):
        want = ndi.correlate(x.astype(np.float64), w[k].astype(np.float64), mode=mode, cval=cval, origin=origin)
        np.testing.assert_allclose(got[k], want, atol=1e-4 * np.abs(want).max())
    u8 = rng.integers(0, 256, shape[1:], dtype=np.uint8)
    w2 = rng.random((1, 5, 3)).astype(np.float32)
    got = ppd.correlate(da.from_array(u8, chunks=(uneven(rng, shape[1]), uneven(rng, shape[2]))), w2, mode,
                        300.5, 1)
    want = ndi.correlate(u8.astype(np.float64), w2[0].astype(np.float64), mode=mode, cval=300.5, origin=1)
    np.testing.assert_allclose(got.compute()[0], want, rtol=1e-5, atol=1e-3)


def test_correlate_arguments():
    """The old spelling and bad values raise InputError naming the new argument, before any graph."""
    d = da.zeros((6, 6), dtype=np.float32, chunks=3)
    w = np.ones((1, 3, 3), np.float32)
    with pytest.raises(pp.InputError, match=r"dask.correlate: boundary= is now mode="):
        ppd.correlate(d, w, boundary="reflect")
    with pytest.raises(pp.InputError, match="output"):
        ppd.correlate(d, w, "same")
    with pytest.raises(pp.InputError, match="mode 'edge' is not supported"):
        ppd.correlate(d, w, mode="edge")
    with pytest.raises(pp.InputError, match="cval must be a number"):
        ppd.correlate(d, w, "constant", "reflect")
    with pytest.raises(pp.InputError, match="dask.correlate: origin 2 is out of range"):
        ppd.correlate(d, w, origin=2)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.int32, np.float32])
@pytest.mark.parametrize("channels", [0, 3])
def test_summed_area_table(rng, dtype, channels):
    shape = (int(rng.integers(2, 70)), int(rng.integers(2, 70))) + ((channels,) if channels else ())
    x = rand(rng, shape, dtype)
    chunks = (uneven(rng, shape[0]), uneven(rng, shape[1])) + ((uneven(rng, channels, 1),) if channels else ())
    got = ppd.summed_area_table(da.from_array(x, chunks=chunks)).compute()
    odt = np.cumsum(x[:0]).dtype  # numpy's: uint64 / int64 for the integer images
    want = np.cumsum(np.cumsum(x, axis=0, dtype=odt), axis=1, dtype=odt)
    assert got.dtype == np.dtype(odt)
    if dtype == np.float32:
        np.testing.assert_allclose(got, want, atol=1e-5 * x.size)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("which", ["gaussian", "recursive", "bspline"])
@pytest.mark.parametrize("wrap", [False, True])
def test_recursive_filters_match_unchunked(rng, which, wrap):
    shape = (int(rng.integers(100, 240)), int(rng.integers(100, 240)), 2)  # past the depth: chunked for real
    x = rng.random(shape).astype(np.float32)
    d = da.from_array(x, chunks=(uneven(rng, shape[0]), uneven(rng, shape[1]), 1))
    if which == "gaussian":
        sigma = float(rng.choice([1.0, 2.5]))
        b = str(rng.choice(["wrap", "grid-wrap"])) if wrap else str(rng.choice(["reflect", "constant", "nearest",
                                                                                "mirror"]))
        got, want = ppd.gaussian_filter(d, sigma, b), pp.gaussian_filter(x, sigma, b)
    elif which == "recursive":
        b = "wrap" if wrap else "constant"
        got = ppd.recursive_filter(d, 0.3, [-0.9, 0.2], mode=b)
        want = pp.recursive_filter(x, 0.3, [-0.9, 0.2], mode=b)
    else:
        m = "grid-wrap" if wrap else str(rng.choice(["mirror", "wrap"]))  # scipy's spline "wrap": mirror-like
        got, want = ppd.bspline_prefilter(d, m), pp.bspline_prefilter(x, m)
        np.testing.assert_allclose(want[..., 0], ndi.spline_filter(x[..., 0].astype(np.float64), 3, mode=m),
                                   atol=1e-5)
    got = got.compute()
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-5 * np.abs(x).max())


def test_recursive_filter_one_axis_shorter_than_depth(rng):
    x = rng.random((20, 300)).astype(np.float32)  # depth > 20: axis 0 filtered whole
    d = da.from_array(x, chunks=(7, uneven(rng, 300)))
    np.testing.assert_allclose(ppd.gaussian_filter(d, 4.0).compute(), pp.gaussian_filter(x, 4.0), atol=1e-5)


# ----------------------------------------------------------------------------- RLE, compaction, FSE
def rle_oracle(x):
    b = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    starts = np.flatnonzero(np.concatenate([[True], b[1:] != b[:-1]]))
    return x[starts], np.diff(np.concatenate([starts, [x.size]]))


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32])
def test_rle_encode_joins_runs(rng, dtype):
    n = int(rng.integers(100, 2000))
    vals = rand(rng, 6, dtype)
    x = np.repeat(vals[rng.integers(0, 3, n)], rng.integers(1, 40, n))[:n]  # long runs cross boundaries
    x[rng.integers(0, n, 3)] = vals[5]
    d = da.from_array(x, chunks=(uneven(rng, n, 5),))
    v, c = dask.compute(*ppd.rle_encode(d))
    wv, wc = rle_oracle(x)
    np.testing.assert_array_equal(v.view(np.uint8), wv.view(np.uint8))
    np.testing.assert_array_equal(c, wc)
    assert c.dtype == np.uint64


def test_rle_one_run_across_many_chunks(rng):
    x = np.full(50, 7, np.int32)
    x[-1] = 3
    v, c = dask.compute(*ppd.rle_encode(da.from_array(x, chunks=(1,) * 10 + (40,))))
    assert v.tolist() == [7, 3] and c.tolist() == [49, 1]


def test_compact_nonzero(rng):
    shape = (int(rng.integers(3, 40)), int(rng.integers(3, 40)))
    x = rand(rng, shape, np.float32)
    m = rng.random(shape) < 0.3
    d, dm = (da.from_array(a, chunks=(uneven(rng, shape[0]), uneven(rng, shape[1]))) for a in (x, m))
    np.testing.assert_array_equal(ppd.compact(d, dm).compute(), x[m])
    idx = ppd.nonzero(dm).compute()
    assert idx.dtype == np.int64
    np.testing.assert_array_equal(idx, np.flatnonzero(m))


def test_fse_per_chunk(rng):
    n = int(rng.integers(1000, 20000))
    x = (rng.geometric(0.2, n) % 50).astype(np.int32)
    d = da.from_array(x, chunks=(uneven(rng, n),))
    blobs = ppd.fse_compress(d)
    assert blobs.shape == (d.numblocks[0],)
    np.testing.assert_array_equal(ppd.fse_decompress(blobs, d.chunks, d.dtype).compute(), x)
    h = n // 2
    blobs = ppd.fse_compress(da.from_array(x, chunks=((h, n - h),)))
    with pytest.raises(pp.CorruptDataError, match="expected"):  # containers that do not fit their chunks
        ppd.fse_decompress(blobs, ((h + 1, n - h - 1),), np.int32).compute()


# ----------------------------------------------------------------------------- a real cluster
@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                       silence_logs=logging.WARNING)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _device_of_worker():
    import os

    import pywgpuprims
    dev = pywgpuprims.device()
    return os.getpid(), dev.adapter_summary, getattr(dev, "index", None)


def test_cluster_workers_have_their_own_devices(client):
    info = client.run(_device_of_worker)
    assert len(info) == 2
    pids = {pid for pid, _, _ in info.values()}
    assert len(pids) == 2 and all(s for _, s, _ in info.values())


def test_cluster_scan_reduce_rle(client, rng):
    n = 5000
    x = rand(rng, n, np.int32)
    d = da.from_array(x, chunks=(uneven(rng, n, 3),))
    got_scan, got_sum, got_max = dask.compute(ppd.cumsum(d), ppd.sum(d), ppd.max(d))  # the client's scheduler
    np.testing.assert_array_equal(got_scan, np.cumsum(x))
    assert got_scan.dtype == np.int64 and got_sum.dtype == np.int64
    assert got_sum == np.sum(x) and got_max == x.max()
    r = np.repeat(rng.integers(0, 4, 300).astype(np.uint32), rng.integers(1, 30, 300))
    v, c = dask.compute(*ppd.rle_encode(da.from_array(r, chunks=(uneven(rng, r.size, 4),))))
    wv, wc = rle_oracle(r)
    np.testing.assert_array_equal(v, wv)
    np.testing.assert_array_equal(c, wc)
    workers = {w for w in client.run(lambda: 1)}
    assert len(workers) == 2


def test_cluster_correlate(client, rng):
    """dask.correlate with scipy's keywords run by the workers of a LocalCluster (mirror: the edge
    chunks extend themselves; wrap: Dask's periodic boundary)."""
    x = rand(rng, (41, 37), np.float32)
    w = rng.standard_normal((2, 4, 5)).astype(np.float32)
    d = da.from_array(x, chunks=(uneven(rng, 41), uneven(rng, 37)))
    for mode in ("mirror", "wrap"):
        got = ppd.correlate(d, w, mode=mode, origin=(1, -1)).compute()  # the client's scheduler
        for k in range(2):
            want = ndi.correlate(x.astype(np.float64), w[k].astype(np.float64), mode=mode, origin=(1, -1))
            np.testing.assert_allclose(got[k], want, atol=1e-4 * np.abs(want).max())


def test_cluster_filters(client, rng):
    """A filter through map_overlap and the summed-area table's carries, run by the workers."""
    img = rand(rng, (90, 70), np.uint8)
    d = da.from_array(img, chunks=(uneven(rng, 90), uneven(rng, 70)))
    s, b = dask.compute(ppd.summed_area_table(d), ppd.box_filter(d, 3, "constant"))
    np.testing.assert_array_equal(s, img.astype(np.uint32).cumsum(0).cumsum(1))
    np.testing.assert_array_equal(b, ndi.uniform_filter(img, 7, mode="constant"))  # uint8, truncated as scipy


def test_gpu_cluster_places_one_worker_per_device(rng):
    """One worker per adapter (here lavapipe via Vulkan and llvmpipe via OpenGL), each on its own."""
    ds = pp.devices()
    if len(ds) < 2:
        pytest.skip("one adapter: placement cannot be told apart")
    with ppd.gpu_cluster(silence_logs=logging.WARNING) as cluster, distributed.Client(cluster) as c:
        info = c.run(_device_of_worker)
        assert len(info) == len(ds)
        by_name = {w["name"]: a for a, w in c.scheduler_info()["workers"].items()}
        for i, d in enumerate(ds):
            _, summary, index = info[by_name[f"gpu-{i}"]]
            assert (summary, index) == (d.adapter_summary, i)
        # and the work runs there: a reduction whose chunks go to both workers
        x = rand(rng, 3000, np.uint32)
        d = da.from_array(x, chunks=(uneven(rng, 3000),))
        with distributed.get_task_stream(c) as ts:
            assert ppd.max(d).compute() == x.max()
        assert {t["worker"] for t in ts.data} == set(info)


def test_cluster_writes_zarr_with_gpu_codecs(client, rng, tmp_path):
    """Workers compress their chunks with the GPU codecs into one zarr store; read back here."""
    zarr = pytest.importorskip("zarr")
    from pywgpuprims.codecs import FSECodec, RLECodec

    x = np.repeat(rng.integers(0, 50, 900).astype(np.int32), rng.integers(1, 9, 900))[:3000].reshape(60, 50)
    d = da.from_array(x, chunks=(16, 20))
    for name, kw in (("f", {"compressors": [FSECodec()]}), ("r", {"serializer": RLECodec(), "compressors": None})):
        z = zarr.create_array(zarr.storage.LocalStore(tmp_path / name), shape=x.shape, chunks=(16, 20),
                              dtype=x.dtype, fill_value=0, **kw)
        with distributed.get_task_stream(client) as ts:
            da.store(d, z, lock=False)
        assert len({t["worker"] for t in ts.data}) == 2  # both worker processes encoded chunks
        np.testing.assert_array_equal(zarr.open_array(zarr.storage.LocalStore(tmp_path / name))[:], x)
