"""The host path: the caching allocator, staged transfers, readbacks."""

import gc
import threading

import numpy as np
import pytest
from conftest import poisoned

import pywgpuprims as pp
from pywgpuprims._device import TransferTuning
from pywgpuprims._errors import ShaderError
from pywgpuprims._memory import size_class
from pywgpuprims.device_copy import copy_pass


@pytest.fixture
def small_chunks(dev):
    """Staged transfers in chunks of 4 KiB, and no shortcut for small ones: every path is staged."""
    saved = dev.transfer
    dev.transfer = TransferTuning(small_upload=0, chunk=4096, one_shot=0, one_shot_counted=0)
    yield 4096
    dev.transfer = saved


def test_size_classes():
    assert size_class(1) == 256 and size_class(4096) == 4096 and size_class(4097) == 4608
    for n in [5000, 65537, 10**6, 3 * 2**27 + 5]:
        c = size_class(n)
        assert n <= c <= n * 1.125


def test_freed_arrays_are_reused_and_stats_add_up(dev, rng):
    dev.sync()
    a = pp.asarray(rng.integers(0, 9, 300_000).astype(np.uint32))
    serial = a.buffer.serial
    in_use = dev.memory.stats().in_use
    del a
    gc.collect()
    st = dev.memory.stats()
    assert st.in_use <= in_use - 1_200_000 and st.cached >= 1_200_000
    b = pp.GpuArray.empty((300_000,), np.uint32)
    assert b.buffer.serial == serial  # the same buffer, from the cache
    assert b.buffer.size == 1_200_000  # bound and cleared as asked, not as pooled
    dev.memory.free_cache()
    assert dev.memory.stats().cached == 0


def test_reuse_while_a_batch_still_reads_the_buffer(dev, rng):
    """A buffer freed while a long queued batch reads it goes to work queued after that batch only."""
    n = 1 << 20
    x = rng.integers(0, 2**32, n, dtype=np.uint32)
    a = pp.asarray(x)
    out = poisoned((n,), np.uint32)
    serial = a.buffer.serial
    copy_pass(dev, a, out, n // 4, times=40)  # queued, not waited for
    del a
    gc.collect()
    b = pp.asarray(np.full(n, 0xDEADBEEF, np.uint32))  # takes a's buffer and overwrites it
    assert b.buffer.serial == serial
    np.testing.assert_array_equal(out.numpy(), x)
    np.testing.assert_array_equal(b.numpy(), np.full(n, 0xDEADBEEF, np.uint32))


def test_a_batch_holds_its_blocks_until_submitted(dev, rng):
    x = rng.integers(0, 2**32, 4096, dtype=np.uint32)
    a = pp.asarray(x)
    out = poisoned((4096,), np.uint32)
    k = dev.kernel("bench/copy.wgsl", defines={"COPY": True, "WG": 256, "VECS_PER_THREAD": 1})
    b = dev.batch()
    b.dispatch(k, 4, params={"n_vec4": 1024, "n_groups": 4}, src=a, dst=out)
    serial = a.buffer.serial
    del a
    gc.collect()
    c = pp.asarray(np.zeros(4096, np.uint32))  # must not get a's buffer while b still records it
    assert c.buffer.serial != serial
    b.submit()
    np.testing.assert_array_equal(out.numpy(), x)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("nbytes", [1, 3, 4, 5, 4095, 4096, 4097, 8191, 12289, 40_003])
def test_odd_transfer_sizes(dev, rng, nbytes, staged, request):
    if staged:
        request.getfixturevalue("small_chunks")
    x = rng.integers(0, 256, nbytes, dtype=np.uint8)
    g = pp.asarray(x)
    np.testing.assert_array_equal(g.numpy(), x)
    # the padding of a last partial word is zero (kernels reading packed bytes rely on it)
    words = np.frombuffer(dev.read(g.buffer, 0, -(-nbytes // 4) * 4), np.uint8)
    assert not words[nbytes:].any()
    # an offset view of the buffer comes back too
    if nbytes > 8:
        v = pp.GpuArray(dev, g.buffer, (nbytes - 8,), np.uint8, 8)
        np.testing.assert_array_equal(v.numpy(), x[8:])


@pytest.mark.parametrize("staged", [False, True])
def test_non_contiguous_and_reversed_inputs(dev, rng, staged, request):
    if staged:
        request.getfixturevalue("small_chunks")
    x = rng.standard_normal((300, 41)).astype(np.float32)
    for view in (x[::-1], x[:, ::2], x.T, x[::3, 5:]):
        np.testing.assert_array_equal(pp.asarray(view).numpy(), view)
        row = view[1]  # strided when view is
        np.testing.assert_array_equal(pp.scan(row, op="max"), np.maximum.accumulate(row))


@pytest.mark.parametrize("staged", [False, True])
def test_numpy_into_out(dev, rng, staged, request):
    if staged:
        request.getfixturevalue("small_chunks")
    x = rng.integers(0, 2**32, 10_001, dtype=np.uint32)
    g = pp.asarray(x)
    out = np.full(10_001, 7, np.uint32)
    assert g.numpy(out=out) is out
    np.testing.assert_array_equal(out, x)
    strided = np.zeros(20_002, np.uint32)[::2]
    g.numpy(out=strided)
    np.testing.assert_array_equal(strided, x)
    with pytest.raises(pp.InputError, match="GpuArray.numpy"):
        g.numpy(out=np.zeros(5, np.uint32))
    res = np.zeros(10_001, np.uint32)
    assert pp.scan(x, out=res) is res
    np.testing.assert_array_equal(res, np.cumsum(x, dtype=np.uint32))
    gres = pp.GpuArray.empty((10_001,), np.uint32)
    assert pp.scan(g, out=gres) is gres
    np.testing.assert_array_equal(gres.numpy(), np.cumsum(x, dtype=np.uint32))


@pytest.mark.parametrize("staged", [False, True])
def test_counted_results_around_the_one_shot_size(dev, rng, staged, request):
    if staged:
        request.getfixturevalue("small_chunks")
    for n in [1, 1000, 1024 * 64 + 3]:
        x = rng.integers(0, 2**32, n, dtype=np.uint32)
        m = rng.random(n) < 0.3
        np.testing.assert_array_equal(pp.compact(x, m), x[m])
        np.testing.assert_array_equal(pp.flatnonzero(m), np.flatnonzero(m))
        r = rng.integers(0, 3, n).astype(np.int32)
        v, c = pp.rle_encode(r)
        starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
        np.testing.assert_array_equal(v, r[starts])
        np.testing.assert_array_equal(c, np.diff(np.r_[starts, n]))
        assert pp.reduce(x) == x.sum()  # np.sum's uint64
        # GpuArray results read by .numpy(): the count from the call's own snapshot where the
        # result is larger than one_shot_counted (staged), then written over and read again
        gc_ = pp.compact(pp.asarray(x), pp.asarray(m))
        np.testing.assert_array_equal(gc_.numpy(), x[m])
        gr = pp.rle_encode(pp.asarray(r))
        gv, gcnt = gr.numpy()
        np.testing.assert_array_equal(gv, r[starts])
        np.testing.assert_array_equal(gcnt, np.diff(np.r_[starts, n]))
        dev.upload(gc_.count, np.array([min(n, 1)], np.uint32))
        np.testing.assert_array_equal(gc_.numpy(), gc_.data.numpy()[:min(n, 1)])


def test_threads_allocate_and_free_at_once(dev):
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        try:
            for _ in range(30):
                n = int(r.integers(1, 50_000))
                x = r.integers(0, 2**32, n, dtype=np.uint32)
                g = pp.asarray(x)
                np.testing.assert_array_equal(pp.scan(g).numpy(), np.cumsum(x))
                np.testing.assert_array_equal(pp.scan(x, dtype=np.uint32), np.cumsum(x, dtype=np.uint32))
                del g
        except Exception as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_memory_limit(dev, rng):
    mem = dev.memory
    dev.sync()
    gc.collect()
    limit = mem.limit
    keep = [pp.GpuArray.empty((1 << 18,), np.uint32) for _ in range(4)]  # 4 MiB, freed below: cached
    del keep
    gc.collect()
    try:
        st = mem.stats()
        assert st.cached >= 4 << 20
        mem.set_limit(st.in_use + (2 << 20))  # the cache over the limit goes at once
        assert mem.stats().cached <= 2 << 20
        with pytest.raises(pp.DeviceLimitError, match=r"GpuArray: 8388608 bytes asked with \d+ in use exceed"):
            pp.GpuArray.empty((1 << 21,), np.uint32)
        g = pp.asarray(rng.integers(0, 9, 1 << 18).astype(np.uint32))  # 1 MiB fits
        assert g.numpy().sum() > 0
    finally:
        mem.set_limit(limit)


def test_memory_limit_from_the_environment():
    from pywgpuprims._memory import parse_bytes

    assert parse_bytes("2GiB") == 2 << 30 and parse_bytes("512M") == 512 << 20 and parse_bytes("1e9") == 10**9
    assert parse_bytes("0") is None and parse_bytes(None) is None
    with pytest.raises(ValueError, match="PYWGPUPRIMS_MEMORY_LIMIT"):
        parse_bytes("lots")


def test_readback_parts_in_one_mapping(dev, rng):
    x = rng.integers(0, 2**32, 1000, dtype=np.uint32)
    g = pp.asarray(x)
    b = dev.batch()
    rb = b.readback((g, 0, 12), (g, 400, 6))
    b.submit()
    first, second = rb.parts(np.uint32, np.uint8)
    np.testing.assert_array_equal(first, x[:3])
    np.testing.assert_array_equal(second, x[100:102].view(np.uint8)[:6])


def test_upload_staging_survives_a_change_of_chunk(dev, rng):
    """The upload ring stays mapped between uploads; a smaller chunk for a while must not leave it
    mapped short for the next large upload."""
    saved = dev.transfer
    x = rng.integers(0, 2**32, 3 << 18, dtype=np.uint32)  # 3 MiB: staged with the default tuning
    try:
        np.testing.assert_array_equal(pp.asarray(x).numpy(), x)
        dev.transfer = TransferTuning(small_upload=0, chunk=4096)
        np.testing.assert_array_equal(pp.asarray(x[:10_000]).numpy(), x[:10_000])
    finally:
        dev.transfer = saved
    np.testing.assert_array_equal(pp.asarray(x).numpy(), x)


def test_blocks_freed_by_the_cycle_collector(dev):
    """A block that dies in a reference cycle returns a living buffer: the cycle's finalizers must
    not release the wgpu buffer the pool hands out again (seen as a NULL handle on the next upload)."""

    class Holder:
        pass

    for _ in range(20):
        g = pp.asarray(np.arange(100_000, dtype=np.uint32))
        h = Holder()
        h.self, h.block, h.raw = h, g.buffer, g.buffer.raw
        del g, h
        gc.collect()
        x = pp.asarray(np.arange(100_000, dtype=np.uint32))
        assert x.numpy()[-1] == 99_999


# ---------------------------------------------------------------- scalar snapshots (issue 37)
def _count_submits(monkeypatch, dev):
    """Counts of Device._submit and Device.download calls from now on."""
    counts = {"submit": 0, "download": 0}
    real_submit, real_download = type(dev)._submit, type(dev).download

    def submit(self, batch):
        counts["submit"] += 1
        return real_submit(self, batch)

    def download(self, *a, **k):
        counts["download"] += 1
        return real_download(self, *a, **k)

    monkeypatch.setattr(type(dev), "_submit", submit)
    monkeypatch.setattr(type(dev), "download", download)
    return counts


@pytest.mark.parametrize("n", [1, 3, 1000, 32768, 32769, 100_000])
def test_a_reduced_scalar_reads_without_a_submission(dev, rng, monkeypatch, n):
    """float() / int() / .numpy() of a 0-d reduce result read the copy made by the reduce's own
    submission: no submission and no download of their own."""
    x = rng.random(n, dtype=np.float32)
    xi = rng.integers(-1000, 1000, n, dtype=np.int32)
    g, gi = pp.asarray(x), pp.asarray(xi)
    r, ri, rc = pp.reduce(g), pp.reduce(gi, dtype=np.int32, op="max"), pp.count_nonzero(gi)
    counts = _count_submits(monkeypatch, dev)
    assert float(r) == pytest.approx(float(np.sum(x, dtype=np.float64)), rel=1e-5)
    assert int(ri) == int(xi.max())
    assert int(rc) == int(np.count_nonzero(xi))
    got = r.numpy()
    assert got.shape == () and got.dtype == np.float32
    assert r.item() == float(got)
    assert counts == {"submit": 0, "download": 0}


def test_a_scalar_written_later_reads_the_new_value(dev, rng):
    x = rng.random(1000, dtype=np.float32)
    g = pp.asarray(x)
    want = float(np.sum(x, dtype=np.float64))
    # read, then written by a primitive's out=: the next read sees the write
    r = pp.reduce(g)
    assert float(r) == pytest.approx(want, rel=1e-5)
    pp.scan(pp.asarray(np.array([7.5], np.float32)), out=r.reshape(1))
    assert float(r) == 7.5
    # written before the first read (through a view of it), then read through another view
    r = pp.reduce(g)
    view = r.reshape(1)
    pp.scan(pp.asarray(np.array([-2.25], np.float32)), out=view)
    assert float(r) == -2.25 and float(view[0]) == -2.25 and r.reshape(1, 1).numpy()[0, 0] == -2.25
    # written by an upload and by a copy recorded into a batch
    r = pp.reduce(g)
    dev.upload(r, np.array([3.0], np.float32))
    assert float(r) == 3.0
    r = pp.reduce(g)
    src = pp.asarray(np.array([11.0, 0, 0, 0], np.float32))
    b = dev.batch()
    b.copy(src.buffer, 0, r.buffer, 0, 4)
    b.submit()
    assert float(r) == 11.0


def test_scalar_snapshots_from_threads(dev, rng):
    """Threads reducing and reading their own scalars, and threads reading one scalar at once."""
    xs = [rng.random(int(n), dtype=np.float32) for n in rng.integers(1, 50_000, 6)]
    wants = [float(np.sum(x, dtype=np.float64)) for x in xs]
    shared = pp.reduce(pp.asarray(xs[0]))
    errors: list = []

    def work(i: int) -> None:
        try:
            g = pp.asarray(xs[i])
            for _ in range(20):
                got = float(pp.reduce(g))
                assert got == pytest.approx(wants[i], rel=1e-5), (i, got, wants[i])
                assert float(shared) == pytest.approx(wants[0], rel=1e-5)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_many_live_scalars_do_not_share_staging(dev, rng):
    """Scalars kept alive unread each hold their own staging copy; in a steady loop of reduce and
    read no buffer is created."""
    xs = [rng.random(int(n), dtype=np.float32) for n in rng.integers(1, 5000, 64)]
    rs = [pp.reduce(pp.asarray(x)) for x in xs]
    for r, x in zip(rs[::-1], xs[::-1], strict=True):
        assert float(r) == pytest.approx(float(np.sum(x, dtype=np.float64)), rel=1e-5)
    g = pp.asarray(xs[0])
    for _ in range(5):
        float(pp.reduce(g))
    created = dev.memory.stats().buffers_created
    for _ in range(200):
        float(pp.reduce(g))
    assert dev.memory.stats().buffers_created == created
    del rs
    gc.collect()
    assert len(dev._snaps) <= 1  # snapshots of collected results are forgotten


def test_counts_read_without_a_submission(dev, rng, monkeypatch):
    """The count of a compaction and the number of runs of an RLE on GpuArrays come with their
    submission's snapshot; a chained call that writes the same info block is still read right."""
    n = 5000
    x = rng.random(n, dtype=np.float32)
    mask = rng.random(n) < 0.3
    runs = np.repeat(rng.integers(0, 50, 700, dtype=np.int32), rng.integers(1, 12, 700))
    c = pp.compact(pp.asarray(x), pp.asarray(mask))
    nz = pp.flatnonzero(pp.asarray(mask))
    rl = pp.rle_encode(pp.asarray(runs))
    counts = _count_submits(monkeypatch, dev)
    assert int(c.count) == int(mask.sum())
    assert int(nz.count) == int(mask.sum())
    want_runs = int(np.count_nonzero(np.diff(runs))) + 1
    assert int(rl.n_runs) == want_runs
    assert counts == {"submit": 0, "download": 0}
    monkeypatch.undo()
    np.testing.assert_array_equal(c.numpy(), x[mask])
    np.testing.assert_array_equal(pp.rle_decode(rl.values[:want_runs], rl.counts[:want_runs]).numpy(), runs)
    assert int(rl.n_runs) == want_runs and int(c.count) == int(mask.sum())


def test_a_failed_snapshot_read_falls_back_to_the_buffer(dev, rng, monkeypatch):
    from pywgpuprims import _device

    x = rng.random(777, dtype=np.float32)
    r = pp.reduce(pp.asarray(x))

    def broken(self, dtype=np.uint8):
        raise RuntimeError("map failed")

    monkeypatch.setattr(_device.Readback, "numpy", broken)
    assert float(r) == pytest.approx(float(np.sum(x, dtype=np.float64)), rel=1e-5)  # downloaded
    assert r._snap is None


def test_a_batch_the_gpu_rejects_raises_shader_error(dev):
    """Validation errors surface at finish/submit of the direct wgpu-native path as ShaderError, and
    the device goes on working."""
    a, b = dev.alloc(64), dev.alloc(64)
    batch = dev.batch()
    batch.copy(a, 0, b, 0, 3)  # copies must be a multiple of 4 bytes
    with pytest.raises(ShaderError, match="rejected"):
        batch.submit()
    x = np.arange(1000, dtype=np.float32)
    assert float(pp.reduce(pp.asarray(x))) == float(x.sum())
    np.testing.assert_array_equal(pp.asarray(x).numpy(), x)


def _chain_calls(rng):
    """The primitives' calls on GpuArrays, by name, on 1,000 to 3,000 fresh random elements."""
    n = int(rng.integers(1000, 3000))
    x = pp.asarray(rng.random(n, dtype=np.float32))
    u = pp.asarray(rng.integers(0, 1000, n, dtype=np.uint32))
    m = pp.asarray(rng.random(n) < 0.5)
    r = pp.asarray(np.repeat(rng.integers(0, 50, n // 4 + 1, dtype=np.int32), 4)[:n])
    return {"scan": lambda: pp.scan(u, dtype=np.uint32), "scan_f32": lambda: pp.scan(x),
            "reduce": lambda: pp.reduce(x), "reduce_u32": lambda: pp.reduce(u, dtype=np.uint32),
            "compact": lambda: pp.compact(x, m), "nonzero": lambda: pp.nonzero(m),
            "rle_encode": lambda: pp.rle_encode(r)}


@pytest.mark.parametrize("keep", [False, True], ids=["dropped", "kept"])
@pytest.mark.parametrize("name", ["scan", "scan_f32", "reduce", "reduce_u32", "compact", "nonzero", "rle_encode"])
def test_steady_calls_create_no_wgpu_objects(dev, rng, monkeypatch, name, keep):
    """200 repeated calls on GpuArrays (each result dropped, or kept until the next call returns)
    create no wgpu buffer and no bind group after a few calls of warm-up, and submit once each."""
    fn = _chain_calls(rng)[name]
    raw_cls = type(dev.raw)
    counts = {"create_buffer": 0, "create_bind_group": 0}
    for meth in counts:
        real = getattr(raw_cls, meth)

        def counting(self, *a, _real=real, _meth=meth, **k):
            if self is dev.raw:
                counts[_meth] += 1
            return _real(self, *a, **k)
        monkeypatch.setattr(raw_cls, meth, counting)
    submits = []
    real_submit = type(dev).__dict__["_submit"]
    monkeypatch.setattr(type(dev), "_submit", lambda self, b: (submits.append(self), real_submit(self, b))[1])
    last = None
    for _ in range(5):
        last = fn() if keep else (fn(), None)[1]
    dev.sync()
    before = dict(counts)
    submits.clear()
    for _ in range(200):
        last = fn() if keep else (fn(), None)[1]
    assert counts == before, f"{name}: {counts} after warm-up {before}"
    assert len([d for d in submits if d is dev]) == 200  # one submission per call
    del last
    dev.sync()


def test_kept_scratch_goes_first_under_the_limit(dev, rng):
    """Scratch the pool keeps between calls counts as cached, and free_cache() destroys it."""
    g = pp.asarray(rng.integers(0, 9, 5000, dtype=np.uint32))
    want = np.cumsum(g.numpy(), dtype=np.uint32)
    for _ in range(3):
        np.testing.assert_array_equal(pp.scan(g, dtype=np.uint32).numpy(), want)
    mem = dev.memory
    assert mem._kept_bytes > 0
    st = mem.stats()
    assert st.cached >= mem._kept_bytes
    mem.free_cache()
    assert mem._kept_bytes == 0 and mem.stats().cached == 0
    np.testing.assert_array_equal(pp.scan(g, dtype=np.uint32).numpy(), want)  # new scratch, same answer


def test_scratch_is_the_batchs_own_until_submitted(dev, rng):
    """Two batches recorded at once never share scratch; a submitted batch's scratch serves the next
    batch; scans recorded into two open batches and submitted in the other order are both right."""
    dev.memory.free_cache()  # nothing kept
    b1, b2 = dev.batch(), dev.batch()
    s1, s2 = b1.scratch(80), b2.scratch(80)
    s1b = b1.scratch(80)
    assert len({s1.serial, s2.serial, s1b.serial}) == 3
    b1.submit()
    b3 = dev.batch()
    assert {b3.scratch(80).serial, b3.scratch(80).serial} == {s1.serial, s1b.serial}  # b1's, not b2's
    assert b3.scratch(80).serial not in (s1.serial, s1b.serial, s2.serial)
    b2.submit()
    b3.submit()
    from pywgpuprims.scan import record_scan
    xs = [rng.integers(0, 1000, int(n), dtype=np.uint32) for n in rng.integers(20_000, 60_000, 2)]
    gs = [pp.asarray(x) for x in xs]
    outs = [poisoned((x.size,), np.uint32) for x in xs]
    batches = [dev.batch(), dev.batch()]
    for b, g, o in zip(batches, gs, outs, strict=True):
        record_scan(b, g, o, "add", False)
    batches[1].submit()
    batches[0].submit()
    for x, o in zip(xs, outs, strict=True):
        np.testing.assert_array_equal(o.numpy(), np.cumsum(x, dtype=np.uint32))
