"""Scan and reduce against numpy: every op and dtype, tile boundaries, both local-scan paths,
forced fallback, forced repair, chunking past the binding limit, batched rows, thread counts."""

import importlib
import textwrap

import numpy as np
import pytest
from conftest import poisoned, run_with_lavapipe_threads

import pywgpuprims as pp
from pywgpuprims.scan import MAX_STEPS, TILE

OPS_FOR = {"uint32": ["add", "min", "max", "and", "or", "xor"], "int32": ["add", "min", "max", "and", "or", "xor"],
           "float32": ["add", "min", "max"]}
CASES = [(dt, op) for dt, ops in OPS_FOR.items() for op in ops]
SIZES = [0, 1, 3, TILE - 1, TILE, TILE + 1, 3 * TILE + 5]
UFUNC = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
         "xor": np.bitwise_xor}


def scan32(x, **kw):
    """The single-pass path's call: the result in the input's 32-bit dtype (not np.cumsum's int64)."""
    kw.setdefault("dtype", kw["out"].dtype if kw.get("out") is not None else x.dtype)
    return pp.scan(x, **kw)


def reduce32(x, **kw):
    kw.setdefault("dtype", x.dtype)
    return pp.reduce(x, **kw)


def random_input(rng, shape, dtype, op):
    if dtype == "float32":
        return rng.standard_normal(shape).astype(np.float32) * 100
    if op == "and":  # mostly-ones words keep the running AND from collapsing to zero at once
        return (~rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)
                | rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)).view(np.uint32).astype(
            np.uint32).view(dtype)
    return rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32).view(dtype)


def reference(x, op, exclusive, axis=-1):
    dtype = x.dtype
    if op == "add" and dtype == np.float32:
        ref = np.cumsum(x.astype(np.float64), axis=axis)
    else:
        ref = UFUNC[op].accumulate(x, axis=axis, dtype=dtype)
    if exclusive:
        ident = {"add": 0, "or": 0, "xor": 0, "and": -1}.get(op)
        if ident is None:
            info = np.finfo(dtype) if dtype == np.float32 else np.iinfo(dtype)
            ident = (np.inf if op == "min" else -np.inf) if dtype == np.float32 else (
                info.max if op == "min" else info.min)
        if x.shape[-1] == 0:
            return ref
        first = np.full(x.shape[:-1] + (1,), ident).astype(ref.dtype)
        ref = np.concatenate([first, ref[..., :-1]], axis=-1)
    return ref


def check(got, x, op, exclusive):
    ref = reference(x, op, exclusive)
    assert got.dtype == x.dtype and got.shape == x.shape
    if op == "add" and x.dtype == np.float32:
        n = x.shape[-1]
        bound = n * np.finfo(np.float32).eps * np.cumsum(np.abs(x.astype(np.float64)), axis=-1) + 1e-30
        err = np.abs(got.astype(np.float64) - ref)
        assert np.all(err <= bound), f"float error {err.max()} over bound at {np.argmax(err - bound)}"
    else:
        mism = np.flatnonzero(got.ravel() != ref.ravel())
        assert mism.size == 0, f"{mism.size} mismatches, first at {mism[:5]}: got {got.ravel()[mism[:5]]}, " \
                               f"want {ref.ravel()[mism[:5]]}"


def options(**kw):
    return pp.device().using(**kw)


PATHS = ["subgroups", "wgmem"]


def path_options(path):
    """subgroups: the subgroup scans and lookback; wgmem: the workgroup-memory path."""
    if path == "subgroups" and not pp.device().has_subgroups:
        pytest.skip("adapter has no subgroup feature")
    return {"scan_subgroups": path != "wgmem"}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype,op", CASES)
def test_scan_ops_dtypes_sizes(dtype, op, path, rng):
    with options(**path_options(path)):
        for n in SIZES:
            x = random_input(rng, (n,), dtype, op)
            for exclusive in (False, True):
                check(scan32(x, op=op, exclusive=exclusive), x, op, exclusive)


@pytest.mark.parametrize("path", PATHS)
def test_scan_large_random_sizes(path, rng):
    with options(**path_options(path)):
        for n in [int(rng.integers(TILE * 10, 1 << 20)), 1 << 22]:
            x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
            check(scan32(x), x, "add", False)
            xf = rng.standard_normal(n).astype(np.float32)
            check(scan32(xf, exclusive=True), xf, "add", True)


def test_scan_gpuarray_chain_and_out(rng):
    x = rng.integers(0, 1000, 50_000).astype(np.int32)
    g = pp.asarray(x)
    out = poisoned(x.shape, np.int32)
    r = scan32(g, out=out)
    assert r is out
    check(out.numpy(), x, "add", False)
    r2 = scan32(r, op="max")  # a chain stays on the GPU
    assert isinstance(r2, pp.GpuArray)
    np.testing.assert_array_equal(r2.numpy(), np.maximum.accumulate(np.cumsum(x, dtype=np.int32)))
    host_out = np.empty_like(x)
    assert scan32(x, out=host_out) is host_out
    check(host_out, x, "add", False)


def test_lookback_diagnostic_counters(rng):
    """scan_lb_stats counts the subgroup lookback's steps (every tile but the first takes one) and
    its extra polls (a withheld predecessor is polled SPIN_LIMIT times before its fallback)."""
    if not pp.device().has_subgroups:
        pytest.skip("adapter has no subgroup feature")
    stats = pp.GpuArray.empty((64,), np.uint32)
    n = 40 * TILE + 17
    x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    with options(scan_lb_stats="steps", scan_stats_buffer=stats.buffer):
        check(scan32(x), x, "add", False)
        assert stats.numpy()[3] >= 40
    with options(scan_lb_stats="spins", scan_withhold_period=2, scan_spin_limit=4, scan_stats_buffer=stats.buffer):
        check(scan32(x), x, "add", False)
        s = stats.numpy()
        assert s[2] > 0 and s[3] >= 3 * s[2], (s[2], s[3])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("period", [1, 2, 3])
def test_forced_fallback(period, path, rng, dev):
    """Withholding tiles publish nothing: successors must reduce them themselves."""
    stats = pp.GpuArray.empty((64,), np.uint32)
    with options(scan_withhold_period=period, scan_stats_buffer=stats.buffer, **path_options(path)):
        n = 40 * TILE + 17
        x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        check(scan32(x), x, "add", False)
        s = stats.numpy()
        assert s[1] == 0, "lookback gave up"
        assert s[2] >= 40 // period - 1, f"only {s[2]} fallbacks taken"
        xf = rng.standard_normal(n).astype(np.float32)
        check(scan32(xf, op="max", exclusive=True), xf, "max", True)
        check(scan32(xf), xf, "add", False)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("steps", [0, 1, 3])
def test_self_reduce_when_step_budget_is_spent(steps, path, rng):
    """Past its step budget a tile reduces every tile left before it itself: right results, no
    give-up, no repair recorded; across chunk carries and along the rows of a batch too."""
    stats = pp.GpuArray.empty((64,), np.uint32)
    with options(scan_max_steps=steps, scan_withhold_period=1, scan_stats_buffer=stats.buffer,
                 **path_options(path)):
        n = 12 * TILE + 3
        x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        check(scan32(x, exclusive=True), x, "add", True)
        s = stats.numpy()
        assert s[1] == 0, "a lookback gave up"
        if steps == 0:  # with a step or more, other tiles' fallbacks may publish in time
            assert s[3] >= 6, f"only {s[3]} tiles reduced their predecessors themselves"
        xf = rng.standard_normal(n).astype(np.float32)
        check(scan32(xf), xf, "add", False)
        check(scan32(xf, op="min", exclusive=True), xf, "min", True)
        xi = random_input(rng, (3, 3 * TILE + 5), "int32", "xor")
        check(scan32(xi, op="xor"), xi, "xor", False)
        with options(max_binding=4 * 4 * TILE):  # 1-D chunks: the carry seeds each segment
            check(scan32(x), x, "add", False)
            assert stats.numpy()[1] == 0


@pytest.mark.parametrize("steps", [0, 1])
def test_repair_pass_when_lookback_gives_up(steps, rng):
    # max_self 0: no reducing the rest itself either, so the tile gives up and arms the repair.
    stats = pp.GpuArray.empty((64,), np.uint32)
    with options(scan_max_steps=steps, scan_max_self=0, scan_withhold_period=1, scan_stats_buffer=stats.buffer):
        n = 12 * TILE + 3
        x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        y = scan32(x, exclusive=True)
        assert stats.numpy()[1] == 1, "the single pass should have reported failure"
        check(y, x, "add", True)
        g = scan32(pp.asarray(x))  # GpuArray results are repaired too, with no readback
        check(g.numpy(), x, "add", False)


@pytest.mark.parametrize("op", ["add", "min", "xor"])
def test_reduce_then_scan_method(op, rng):
    for n in [1, TILE + 1, 20 * TILE + 9]:
        x = random_input(rng, (n,), "int32", op)
        check(scan32(x, op=op, method="rts"), x, op, False)
        check(scan32(x, op=op, exclusive=True, method="rts"), x, op, True)
    with pytest.raises(pp.InputError, match="method"):
        pp.scan(x, method="decoupled")


@pytest.mark.parametrize("method", ["single_pass", "rts"])
def test_chunked_past_binding_limit(method, rng):
    """Inputs larger than the largest storage binding are scanned in chunks, the carry passed on."""
    with options(max_binding=4 * 4 * TILE):
        n = 13 * TILE + 7  # 4 chunks, the last one partial
        x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        check(scan32(x, method=method), x, "add", False)
        check(scan32(x, exclusive=True, method=method), x, "add", True)
        xi = x.view(np.int32)
        check(scan32(xi, op="min", method=method), xi, "min", False)
        assert int(reduce32(x)) == int(np.add.reduce(x, dtype=np.uint32))
        assert int(reduce32(xi, op="max")) == int(xi.max())
        rows = rng.integers(0, 9, (9, 3 * TILE), dtype=np.int32)  # 2 rows per chunk
        check(scan32(rows), rows, "add", False)
        np.testing.assert_array_equal(reduce32(rows, axis=-1), rows.sum(axis=-1, dtype=np.int32))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (7, TILE - 1), (5, TILE), (4, TILE + 4), (3, 2 * TILE + 1),
                                   (300, 17), (0, 5), (4, 0)])
def test_batched_rows(shape, path, rng):
    with options(**path_options(path)):
        x = rng.integers(-1000, 1000, shape).astype(np.int32)
        for exclusive in (False, True):
            check(scan32(x, exclusive=exclusive), x, "add", exclusive)
        xf = rng.standard_normal(shape).astype(np.float32)
        check(scan32(xf, op="min"), xf, "min", False)
        if x.size:
            np.testing.assert_array_equal(scan32(x, axis=0), np.cumsum(x, axis=0, dtype=np.int32))


def test_scan_errors(rng):
    with pytest.raises(pp.InputError, match="scan: op 'mul'"):
        scan32(np.arange(3, dtype=np.uint32), op="mul")
    with pytest.raises(pp.InputError, match="needs an integer or bool dtype"):
        scan32(np.ones(3, np.float32), op="xor")
    with pytest.raises(pp.InputError, match="scan: dtype complex128"):
        pp.scan(np.ones(3, complex))
    with pytest.raises(pp.InputError, match="axis"):
        scan32(np.ones(3, np.uint32), axis=2)
    g = pp.asarray(np.ones(8, np.uint32))
    with pytest.raises(pp.InputError, match="alias"):
        scan32(g, out=g)
    with pytest.raises(pp.InputError, match="out has shape"):
        scan32(g, out=pp.GpuArray.empty((9,), np.uint32))


@pytest.mark.parametrize("dtype,op", CASES)
def test_reduce(dtype, op, rng):
    for n in [1, 5, TILE - 1, TILE * 4 * 4 + 1, int(rng.integers(1, 300_000))]:
        x = random_input(rng, (n,), dtype, op)
        got = reduce32(x, op=op)
        if dtype == "float32" and op == "add":
            ref = x.astype(np.float64).sum()
            assert abs(float(got) - ref) <= n * 1.2e-7 * np.abs(x).astype(np.float64).sum()
        else:
            assert got == UFUNC[op].reduce(x, dtype=x.dtype), (n, got)
    x2 = random_input(rng, (37, 1001), dtype, op)
    got = reduce32(x2, op=op, axis=-1)
    ref = UFUNC[op].reduce(x2, axis=-1, dtype=x2.dtype)
    if dtype == "float32" and op == "add":
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-2)
    else:
        np.testing.assert_array_equal(got, ref)
    g = reduce32(pp.asarray(x2), op=op, axis=-1)
    assert isinstance(g, pp.GpuArray) and g.shape == (37,)


@pytest.mark.parametrize("op", ["add", "max"])
def test_reduce_many_partials(op, rng):
    """Past 8 x 256 partials the final pass takes several rounds of loads (and masks the last)."""
    with options(reduce_loads=1):  # 1024 elements per partial
        for n in [2048 * 1024, 2048 * 1024 + 1, 5000 * 1024 + 3]:
            x = random_input(rng, (n,), "int32", op)
            assert reduce32(x, op=op) == UFUNC[op].reduce(x, dtype=x.dtype), n
        rows = random_input(rng, (3, 2049 * 1024), "uint32", op)
        ref = UFUNC[op].reduce(rows, axis=-1, dtype=rows.dtype)
        np.testing.assert_array_equal(reduce32(rows, op=op, axis=-1), ref)


def test_reduce_empty_and_deterministic(rng):
    assert reduce32(np.zeros(0, np.uint32)) == 0
    assert reduce32(np.zeros(0, np.int32), op="and") == -1
    with pytest.raises(pp.InputError, match="no identity"):
        reduce32(np.zeros(0, np.float32), op="min")
    x = rng.standard_normal(1 << 20).astype(np.float32)
    first = reduce32(x)
    assert all(reduce32(x) == first for _ in range(5))  # fixed combination order


def test_repeated_runs_agree(rng):
    """A result that differs between runs is a race."""
    n = 64 * TILE + 11
    for _ in range(15):
        x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        check(scan32(x), x, "add", False)


_THREAD_SCRIPT = textwrap.dedent("""
    import numpy as np, pywgpuprims as pp
    rng = np.random.default_rng()
    dev = pp.device()
    for opts in ({}, {"scan_subgroups": False}, {"scan_withhold_period": 2}, {"scan_withhold_period": 1}):
        with dev.using(**opts):
            for n in (4096 * 50 + 7, 1 << 20):
                for _ in range(3):
                    x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
                    y = pp.scan(x, dtype=np.uint32)
                    assert (y == np.cumsum(x, dtype=np.uint32)).all(), (opts, n)
                    f = x.view(np.int32)  # a single-pass op other than add (float max takes the typed path)
                    assert (pp.scan(f, op="max", dtype=np.int32) == np.maximum.accumulate(f)).all(), (opts, n)
    print("ok")
""")


@pytest.mark.parametrize("threads", ["1", "2", "8"])
def test_lavapipe_thread_counts(threads):
    run_with_lavapipe_threads(_THREAD_SCRIPT, threads)


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_stress(path, rng):
    with options(**path_options(path)):
        for i in range(60):
            n = int(rng.integers(1, 1 << 22))
            x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
            with options(scan_withhold_period=int(i % 4)):
                check(scan32(x, exclusive=bool(i % 2)), x, "add", bool(i % 2))


def test_max_steps_is_within_lavapipe_loop_cap(dev):
    # lookback steps x (spins + the window + the fallback's loops), then the tiles a lookback may
    # reduce itself, must stay well under 65,535 trips.
    from pywgpuprims.scan import LOOKBACK_WINDOW, SPIN_LIMIT, VEC4_PER_THREAD, VEC4_PER_THREAD_LARGE, _max_self
    step_trips = MAX_STEPS * (SPIN_LIMIT + LOOKBACK_WINDOW + 4 + 4 + 8 + 8)
    assert step_trips < 20_000
    for vpt in (VEC4_PER_THREAD, VEC4_PER_THREAD_LARGE):
        for sg, add in [(False, True), (True, True), (True, False)]:
            per_tile = 1 + (7 * vpt if sg and not add else 0)
            defs = {"VEC4_PER_THREAD": vpt, "SUBGROUPS": sg, "OP_ADD": add}
            assert step_trips + _max_self(dev, defs) * per_tile < 61_000
    defs = {"VEC4_PER_THREAD": VEC4_PER_THREAD, "SUBGROUPS": True, "OP_ADD": True}
    assert _max_self(dev, defs) * 256 * VEC4_PER_THREAD * 4 >= 2**29  # 2 GiB of u32


def test_large_segments_take_larger_tiles(rng, monkeypatch):
    """Segments of LARGE_ROW elements or more scan in tiles of VEC4_PER_THREAD_LARGE vec4 per invocation, the
    repair included (lowered here so that the switch happens at test sizes)."""
    scan_mod = importlib.import_module("pywgpuprims.scan")  # the package's `scan` is the function
    tile_l = 256 * 4 * scan_mod.VEC4_PER_THREAD_LARGE
    monkeypatch.setattr(scan_mod, "LARGE_ROW", 3 * tile_l)
    dev = pp.device()
    assert scan_mod._vpt(dev, 3 * tile_l) == scan_mod.VEC4_PER_THREAD_LARGE
    assert scan_mod._vpt(dev, 3 * tile_l - 1) == scan_mod.VEC4_PER_THREAD
    stats = pp.GpuArray.empty((64,), np.uint32)
    for n in [3 * tile_l - 1, 3 * tile_l, 3 * tile_l + 1, 7 * tile_l + 5]:
        x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        check(scan32(x), x, "add", False)
        f = rng.standard_normal(n).astype(np.float32)
        check(scan32(f, op="max", exclusive=True), f, "max", True)
        with options(scan_withhold_period=2):
            check(scan32(x.view(np.int32), op="xor"), x.view(np.int32), "xor", False)
        with options(scan_max_steps=0, scan_max_self=0, scan_withhold_period=1, scan_stats_buffer=stats.buffer):
            check(scan32(x), x, "add", False)
            assert stats.numpy()[1] == 1, "the single pass should have given up to the repair"


@pytest.mark.parametrize("vpt,wg", [(1, 256), (2, 256), (4, 256), (8, 256), (8, 128), (4, 512), (3, 64)])
def test_other_tile_sizes(vpt, wg, rng):
    stats = pp.GpuArray.empty((64,), np.uint32)
    with options(scan_vec4_per_thread=vpt, scan_wg=wg, scan_withhold_period=3, scan_stats_buffer=stats.buffer):
        tile = wg * 4 * vpt
        for n in [tile - 1, tile + 1, 37 * tile + 5]:
            x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
            check(scan32(x), x, "add", False)
            check(scan32(x.view(np.int32), op="min", exclusive=True), x.view(np.int32), "min", True)
            f = rng.standard_normal(n).astype(np.float32)
            check(scan32(f), f, "add", False)
        rows = rng.integers(0, 99, (5, 2 * tile + 3)).astype(np.int32)
        check(scan32(rows), rows, "add", False)
