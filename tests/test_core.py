"""Foundation: device, GpuArray, shader preprocessing, kernel cache, errors, scratch pool, timing."""

import resource

import numpy as np
import pytest
from conftest import poisoned

import pywgpuprims as pp
from pywgpuprims._shader import parse_bindings, parse_params, preprocess
from pywgpuprims.device_copy import copy, copy_pass


def test_device_describes_itself(dev):
    text = dev.describe()
    assert dev.adapter_summary in text
    assert dev.max_binding > 0 and dev.max_buffer >= dev.max_binding
    assert pp.device() is dev


@pytest.mark.parametrize("dtype", ["uint8", "uint32", "int32", "float32"])
@pytest.mark.parametrize("shape", [(0,), (1,), (3,), (5, 7), (2, 3, 5), (1023,)])
def test_roundtrip(dtype, shape, rng):
    a = (rng.standard_normal(shape) * 1000).astype(dtype)
    g = pp.asarray(a)
    assert g.shape == a.shape and g.dtype == a.dtype and g.size == a.size
    np.testing.assert_array_equal(g.numpy(), a)
    np.testing.assert_array_equal(np.asarray(g), a)
    np.testing.assert_array_equal(g.reshape(-1).numpy(), a.ravel())


def test_bool_stays_bool(rng):
    # as numpy's asarray (and GpuArray.empty, asarray(dtype=bool)): one byte each, read back as bool
    m = rng.random(1001) < 0.4
    g = pp.asarray(m)
    assert g.dtype == np.bool_ and pp.asarray([1.0, 0.0], dtype=bool).dtype == np.bool_
    back = g.numpy()
    assert back.dtype == np.bool_
    np.testing.assert_array_equal(back, m)
    # a bool GpuArray is a mask as a bool ndarray is
    x = rng.integers(0, 1000, m.size).astype(np.uint32)
    np.testing.assert_array_equal(pp.compact(pp.asarray(x), g).numpy(), x[m])
    (idx,) = pp.nonzero(g)  # numpy's form: one int64 array per axis
    back = idx.numpy()
    assert back.dtype == np.int64
    np.testing.assert_array_equal(back, np.flatnonzero(m))
    np.testing.assert_array_equal(pp.asarray(x)[g].numpy(), x[m])  # a boolean index, not indices 0 and 1


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "uint64", "float16", "float64"])
def test_asarray_holds_every_numpy_dtype(dtype, rng):
    a = rng.integers(-100, 100, 1001).astype(dtype)
    np.testing.assert_array_equal(pp.asarray(a).numpy(), a)
    assert pp.asarray(a).dtype == a.dtype


@pytest.mark.parametrize("bad", [np.zeros(3, np.float64), np.zeros(3, np.int64), np.zeros(3, np.complex64)])
def test_bad_dtype_is_named(bad):
    if bad.dtype.kind == "c":
        with pytest.raises(pp.InputError, match="dtype"):
            pp.asarray(bad)
    with pytest.raises(pp.InputError, match="copy: dtype"):
        copy(bad)


@pytest.mark.parametrize("n", [1, 3, 4, 5, 1023, 4096, 4097, 100_003])
@pytest.mark.parametrize("dtype", ["uint8", "int32"])
def test_copy_kernel(n, dtype, rng):
    a = rng.integers(0, 100, n).astype(dtype)
    np.testing.assert_array_equal(copy(a), a)
    g = copy(pp.asarray(a))
    assert isinstance(g, pp.GpuArray)
    np.testing.assert_array_equal(g.numpy(), a)


def test_dispatch_beyond_grid_dimension(dev, rng):
    # 70,000 workgroups of one invocation each: more than the 65,535 of one grid dimension.
    n_vec4 = 70_000
    src = pp.asarray(rng.integers(0, 2**32, 4 * n_vec4, dtype=np.uint32))
    dst = poisoned((4 * n_vec4,), np.uint32)
    copy_pass(dev, src, dst, n_vec4, copy=True, wg=1, vpt=1)
    np.testing.assert_array_equal(dst.numpy(), src.numpy())


def test_preprocessor():
    src = preprocess("bench/copy.wgsl", {"COPY": True, "WG": 64, "VECS_PER_THREAD": 2})
    assert "dst" in src and "partials" not in src and "64u" in src and "{{" not in src
    src = preprocess("bench/copy.wgsl", {"COPY": False, "WG": 64, "VECS_PER_THREAD": 2})
    assert "partials" in src and "dst[" not in src
    with pytest.raises(KeyError, match="WG"):
        preprocess("bench/copy.wgsl", {"COPY": True})
    assert [b[1:] for b in parse_bindings(src)] == [("uniform", "params"), ("read", "src"),
                                                     ("read_write", "partials")]
    assert parse_params(src) == [("n_vec4", "u32"), ("n_groups", "u32")]


def test_kernel_cache_and_shader_errors(dev, tmp_path, monkeypatch):
    k1 = dev.kernel("bench/copy.wgsl", defines={"COPY": True, "WG": 64, "VECS_PER_THREAD": 1})
    k2 = dev.kernel("bench/copy.wgsl", defines={"COPY": True, "WG": 64, "VECS_PER_THREAD": 1})
    assert k1 is k2
    # A WGSL error becomes a ShaderError that names the kernel.
    import pywgpuprims._shader as sh

    (tmp_path / "common").mkdir()
    (tmp_path / "bad.wgsl").write_text("@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }\n")
    monkeypatch.setattr(sh, "wgsl_root", lambda: tmp_path)
    sh._read.cache_clear()
    try:
        with pytest.raises(pp.ShaderError, match="bad.wgsl:main"):
            dev.kernel("bad.wgsl")
    finally:
        sh._read.cache_clear()


def test_too_large_for_device(dev):
    with pytest.raises(pp.DeviceLimitError, match="largest buffer"):
        pp.GpuArray.empty((dev.max_buffer // 4 + 16,), np.uint32)


def test_timer(dev, rng):
    if not dev.has_timestamps:
        pytest.skip("adapter has no timestamp-query")
    a = pp.asarray(rng.integers(0, 9, 1 << 16).astype(np.uint32))
    with dev.timer() as t:
        copy(a)
    assert t.ns > 0


def test_many_calls_do_not_grow_memory(dev, rng):
    a = pp.asarray(rng.integers(0, 9, 1000).astype(np.uint32))
    x = rng.integers(0, 9, 5000).astype(np.uint32)
    for _ in range(2):  # the first sync keeps a small block of its own
        for _ in range(100):
            copy(a)
            pp.scan(x)
            pp.scan(a)
        dev.sync()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    created = dev.memory.stats().buffers_created
    for _ in range(10_000):
        copy(a)
    for _ in range(500):
        pp.scan(x)
        pp.scan(a)
    dev.sync()
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 64 * 1024, f"10^4 calls grew the peak RSS by {grown_kib} KiB"
    assert dev.memory.stats().buffers_created == created, "steady-state calls created buffers"


def test_device_loss_becomes_an_exception(rng):
    dev = pp.Device()  # a device of our own, not the default
    a = pp.asarray(rng.integers(0, 9, 100).astype(np.uint32), dev=dev)
    dev.raw.destroy()
    with pytest.raises(pp.ShaderError, match="lost"):
        copy(a)
    with pytest.raises(pp.ShaderError, match="lost"):
        copy(a)  # and again, from the recorded state


def test_timer_over_a_batch_of_several_passes(dev, rng):
    if not dev.has_timestamps:
        pytest.skip("adapter has no timestamp-query")
    a = pp.asarray(rng.integers(0, 9, 4096).astype(np.uint32))
    outs = [pp.GpuArray.empty((4096,), np.uint32) for _ in range(3)]
    k = dev.kernel("bench/copy.wgsl", defines={"COPY": True, "WG": 256, "VECS_PER_THREAD": 1})
    with dev.timer() as t:
        b = dev.batch()
        for o in outs:  # a clear between dispatches ends a pass: three passes
            b.clear(o)
            b.dispatch(k, 4, params={"n_vec4": 1024, "n_groups": 4}, src=a, dst=o)
        b.submit()
    assert t.ns > 0
    for o in outs:
        np.testing.assert_array_equal(o.numpy(), a.numpy())


def test_test_hooks_are_typed_and_scoped():
    """Test hooks: one frozen object; an unknown name or a wrong type raises, a block restores them,
    and plans keyed on them are rebuilt."""
    import dataclasses

    dev = pp.device()
    with pytest.raises(TypeError, match="unknown test hook"):
        with dev.using(scan_withold_period=2):  # misspelt
            pass
    for bad in ({"scan_withhold_period": "2"}, {"scan_subgroups": 1}, {"scan_lb_stats": "loops"},
                {"recfilter_fix_seg": (32, 16)}, {"scan_max_steps": True}):
        with pytest.raises(TypeError, match="test hook"):
            with dev.using(**bad):
                pass
    with pytest.raises(dataclasses.FrozenInstanceError):
        dev.hooks.scan_withhold_period = 3
    built = []
    before = dev.plan(("hooks test",), lambda: built.append(1) or len(built))
    with dev.using(scan_withhold_period=2, recfilter_fix_seg=(16, 4, 2), scan_lb_stats=None):
        assert dev.hooks.scan_withhold_period == 2 and dev.hooks.recfilter_fix_seg == (16, 4, 2)
        assert dev.plan(("hooks test",), lambda: built.append(1) or len(built)) != before
    assert dev.hooks.scan_withhold_period == 0 and dev.hooks.recfilter_fix_seg is None
