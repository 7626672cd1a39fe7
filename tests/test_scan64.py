"""The single-pass scan into 64-bit results (wgsl/wide/scan.wgsl, pywgpuprims/_scan64.py) against
numpy: int64 / uint64 (always in word pairs; the "native" path differs in float64 and in what the
reduce-then-scan fallback uses), float64, 32-bit input
widened, inclusive and exclusive, around tile boundaries, into poisoned outputs; withheld tiles
(fallbacks), a zero step budget (the walk), batched rows, dispatches cut by the binding and the walk
limit, thread counts. Most cases run on small tiles (hook scan_vec4_per_thread=1): more tiles per
array, and each kernel variant costs seconds of compilation on lavapipe."""

import textwrap

import numpy as np
import pytest
from conftest import poisoned, run_with_lavapipe_threads
from test_dtypes import assert_scan, int64_paths, path_ctx, values

import pywgpuprims as pp
from pywgpuprims._scan64 import ITEMS, WG

TILE64 = WG * ITEMS  # the default tile (64- and 32-bit input alike)
# the single pass needs subgroups (wgpu's GL backend has none: there every scan here is the
# reduce-then-scan, which tests/test_dtypes.py covers)
single_pass = pytest.mark.skipif(not pp.device().has_subgroups, reason="the single pass needs subgroups")


def small_tile(in_dtype) -> int:
    """The tile with one vec4 load per invocation."""
    return WG * (2 if np.dtype(in_dtype).itemsize == 8 else 4)


def scan_stats(dev, fn, **hooks):
    """fn's result and the single pass's counter words per dispatch (ticket, failed, fallbacks,
    walks)."""
    stats = pp.GpuArray.empty((4 * 64,), np.uint32)
    dev.write(stats.buffer, np.zeros(4 * 64, np.uint32).tobytes())
    with dev.using(scan_stats_buffer=stats.buffer, **hooks):
        got = fn()
    return got, stats.numpy().reshape(-1, 4)


def check(dev, x, in_dt, dt, op, exclusive, tile, rows=1):
    """Scan x into a poisoned GpuArray, compare with numpy, and check that the single pass ran
    (every tile took a ticket)."""
    rd = np.dtype(dt) if dt else np.cumsum(x[:1]).dtype if op == "add" else x.dtype
    tiles = rows * -(-x.shape[-1] // tile)
    out = poisoned(x.shape, rd)
    _, st = scan_stats(dev, lambda: pp.scan(pp.asarray(x), op=op, exclusive=exclusive, dtype=dt, out=out))
    got = out.numpy()
    if op == "add" and rd.kind == "f":
        if exclusive:
            assert np.all(got[..., 0] == 0)
            got, x = got[..., 1:], x[..., :-1]
        assert_scan(got, x.astype(rd), op)
    else:
        assert_scan(got, x, op, exclusive, dtype=dt)
    assert st[0, 0] == tiles and st[0, 1] == 0, (st[:2], x.shape, in_dt, dt, op, exclusive)


@single_pass
@pytest.mark.parametrize("path", int64_paths())
def test_default_tile_int64(path, rng, dev):
    """The shipped tile, around its boundaries."""
    with path_ctx(path):
        for n in [1, 5, TILE64 - 1, TILE64, TILE64 + 1, 3 * TILE64 + 7]:
            check(dev, values(rng, n, "int64"), "int64", None, "add", False, TILE64)


def small_cases(path):
    cases = [("int64", None, "add", True), ("uint32", None, "add", False), ("int32", "int64", "min", True)]
    if path == "native":
        cases += [("uint64", None, "max", False), ("uint64", None, "xor", True)]
        if "shader-f64" in pp.device().features:
            cases += [("float64", None, "add", False), ("float32", "float64", "add", True)]
    return cases


@single_pass
@pytest.mark.parametrize("path", int64_paths())
def test_small_tiles_dtypes_and_ops(path, rng, dev):
    """Inclusive and exclusive, 32- and 64-bit input, several ops, around small tiles."""
    with path_ctx(path), dev.using(scan_vec4_per_thread=1):
        for in_dt, dt, op, exclusive in small_cases(path):
            t = small_tile(in_dt)
            for n in [2, t - 1, t, t + 1, 7 * t + 3]:
                check(dev, values(rng, n, in_dt), in_dt, dt, op, exclusive, t)


@single_pass
@pytest.mark.parametrize("path", int64_paths())
def test_fallbacks_and_walk(path, rng, dev):
    """Withheld tiles (each successor reduces them itself), a zero step budget (every lookback
    walks), a single poll: the results stay numpy's."""
    t = small_tile("int64")
    n = 23 * t + 45
    x = values(rng, n, "int64")
    with path_ctx(path), dev.using(scan_vec4_per_thread=1):
        for hooks, want in [({"scan_withhold_period": 2}, lambda st: st[0, 2] >= 11),
                            ({"scan_withhold_period": 1}, lambda st: st[0, 2] >= 23),
                            ({"scan_max_steps": 0}, lambda st: st[0, 3] == 23),
                            ({"scan_max_steps": 0, "scan_withhold_period": 3}, lambda st: st[0, 3] == 23),
                            ({"scan_max_steps": 1, "scan_withhold_period": 2}, lambda st: st[0, 2] >= 1)]:
            got, st = scan_stats(dev, lambda: pp.scan(x), **hooks)
            np.testing.assert_array_equal(got, np.cumsum(x))
            assert st[0, 0] == 24 and st[0, 1] == 0 and want(st), (hooks, st[:2])
        if path == "native":
            got, st = scan_stats(dev, lambda: pp.scan(x, op="max", exclusive=True), scan_spin_limit=1,
                                 scan_withhold_period=2)
            assert_scan(got, x, "max", True)


@single_pass
@pytest.mark.parametrize("path", int64_paths())
def test_rows_dispatches_and_walk_limit(path, rng, dev):
    """Batched rows (odd lengths: element loads and stores), 1-D arrays cut in dispatches by the
    binding limit and by the tiles a lookback may walk (carried one to the next), rows longer than
    that (reduce-then-scan)."""
    t = small_tile("int64")
    with path_ctx(path), dev.using(scan_vec4_per_thread=1):
        for shape in [(7, 3 * t + 1), (5, 2 * t), (33, 99)]:
            x = values(rng, shape, "int64")
            check(dev, x, "int64", None, "add", False, t, rows=shape[0])
        x = values(rng, 9 * t + 3, "int64")
        for hooks in [{"max_binding": 2 * t * 8}, {"max_binding": 3 * t * 8 + 256},
                      {"scan_max_self": 2, "scan_max_steps": 0, "scan_withhold_period": 2}]:
            with dev.using(**hooks):
                got, st = scan_stats(dev, lambda: pp.scan(x))
                np.testing.assert_array_equal(got, np.cumsum(x))
                got = pp.scan(x, op="min", exclusive=True)
                assert_scan(got, x, "min", True)
        with dev.using(scan_max_self=2, scan_max_steps=0):
            rows = values(rng, (3, 4 * t), "int64")
            got, st = scan_stats(dev, lambda: pp.scan(rows))
            assert_scan(got, rows, "add")
            assert st[0, 0] == 0  # rows of four tiles: the reduce-then-scan


@single_pass
def test_float64_single_pass_and_deterministic(rng, dev):
    """float64 sums of the single pass are numpy's within rounding, whatever the schedule;
    deterministic=True (reduce-then-scan) repeats bit for bit and runs no single pass."""
    if "shader-f64" not in dev.features or "shader-int64" not in dev.features:
        pytest.skip("needs shader-f64 and shader-int64")
    t = small_tile("float64")
    x = rng.standard_normal(17 * t + 5) * 10.0 ** rng.integers(-6, 6, 17 * t + 5)
    with dev.using(scan_vec4_per_thread=1):
        for hooks in [{}, {"scan_withhold_period": 2}, {"scan_max_steps": 0}]:
            with dev.using(**hooks):
                assert_scan(pp.scan(x), x, "add")
        first, st = scan_stats(dev, lambda: pp.scan(x, deterministic=True))
        assert st[0, 0] == 0
        for hooks in [{}, {"scan_withhold_period": 2}]:
            with dev.using(**hooks):
                assert pp.scan(x, deterministic=True).tobytes() == first.tobytes()


def test_subgroups_off_takes_reduce_then_scan(rng, dev):
    x = values(rng, 3000, "int64")
    with dev.using(scan_subgroups=False):
        got, st = scan_stats(dev, lambda: pp.scan(x))
    np.testing.assert_array_equal(got, np.cumsum(x))
    assert st[0, 0] == 0


_THREADS = textwrap.dedent("""
    import numpy as np, pywgpuprims as pp
    rng = np.random.default_rng()
    dev = pp.device()
    x = rng.integers(-2**62, 2**62, 512 * 37 + 11)
    u = rng.integers(0, 2**32, x.size, dtype=np.uint32)
    f = rng.standard_normal(x.size) * 10.0 ** rng.integers(-8, 8, x.size)
    ref = np.cumsum(f)
    tol = 1e-12 * np.cumsum(np.abs(f))
    for hooks in ({}, {"scan_withhold_period": 3}, {"scan_max_steps": 0},
                  {"hide_shader_int64": True, "scan_withhold_period": 2}):
        with dev.using(scan_vec4_per_thread=1, **hooks):
            for _ in range(4):
                assert np.array_equal(pp.scan(x), np.cumsum(x)), hooks
                assert np.array_equal(pp.scan(u), np.cumsum(u)), hooks
                if "hide_shader_int64" not in hooks:
                    assert np.all(np.abs(pp.scan(f) - ref) <= tol), hooks
    print("ok")
""")


@single_pass
@pytest.mark.parametrize("threads", ["1", "2", "8"])
def test_at_thread_counts(threads):
    """Lookbacks, fallbacks and walks under lavapipe's schedules, repeated."""
    run_with_lavapipe_threads(_THREADS, threads)
