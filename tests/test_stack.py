"""Bracket matching and clip bounding boxes against a Python stack: balanced and unbalanced
sequences, nesting at and around partition sizes, partition-count boundaries, many partitions
(spine chunks > 1), input dtypes, poisoned outputs, clip/blend boxes, lavapipe thread counts."""

import textwrap

import numpy as np
import pytest
from conftest import poisoned, run_with_lavapipe_threads

import pywgpuprims as pp
from pywgpuprims.stack import EPT, WG

P = WG * EPT  # default partition size (512)


def reference(x):
    """Python stack (not our code path): link and depth as documented in bracket_match."""
    x = np.asarray(x)
    link = np.full(len(x), -1, np.int64)
    depth = np.zeros(len(x), np.int64)
    stack = []
    for i, o in enumerate((x != 0).tolist()):
        if stack:
            link[i] = stack[-1]
        if o:
            depth[i] = len(stack)
            stack.append(i)
        else:
            if stack:
                stack.pop()
            depth[i] = len(stack)
    return link, depth, stack


def dyck(rng, n):
    """A uniformly shuffled balanced sequence of n (even) brackets, made valid by the cycle lemma."""
    steps = np.array([1] * (n // 2) + [-1] * (n // 2))
    rng.shuffle(steps)
    s = np.concatenate([[0], np.cumsum(steps)])
    k = int(np.argmin(s[:-1])) if n else 0
    return np.roll(steps, -k) > 0


def check(x, **kw):
    link, depth, info = pp.bracket_match(x, return_info=True, **kw)
    rl, rd, stack = reference(x)
    assert link.dtype == np.int32 and depth.dtype == np.int32
    bad = np.flatnonzero((link != rl) | (depth != rd))
    assert bad.size == 0, f"{bad.size} wrong, first {bad[:5]}: link {link[bad[:5]]} want {rl[bad[:5]]}, " \
                          f"depth {depth[bad[:5]]} want {rd[bad[:5]]}"
    assert info.unclosed_opens == len(stack)
    assert info.unmatched_closes == int(np.sum((np.asarray(x) == 0) & (rl < 0)))
    np.testing.assert_array_equal(pp.unclosed_opens(x, link), np.array(stack, dtype=np.int64))
    return link, depth


def options(**kw):
    return pp.device().using(**kw)


def test_doc_example():
    link, depth = pp.bracket_match(np.array([1, 1, 0, 1, 0, 0, 0], dtype=bool))
    assert link.tolist() == [-1, 0, 1, 0, 3, 0, -1]
    assert depth.tolist() == [0, 1, 1, 1, 1, 0, 0]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 15, 16, 17, 4094, P - 1, P, P + 1, P + 2, 2 * P, 3 * P + 5])
def test_random_balanced_small(n, rng):
    check(dyck(rng, n - n % 2))
    check(rng.random(n) < 0.5)  # unbalanced in general


@pytest.mark.parametrize("parts", [255, 256, 257])
def test_partition_count_boundaries(parts, rng):
    n = parts * P
    for m in (n - 1, n, n + 1):
        check(rng.random(m) < 0.5)
    check(dyck(rng, n))


@pytest.mark.parametrize("d", [1, 255, 256, 257, 4095, 4096, 4097, 100_000])
def test_nesting_depth(d, rng):
    block = np.concatenate([np.ones(d, bool), np.zeros(d, bool)])
    reps = max(1, 150_000 // (2 * d))
    x = np.tile(block, reps)
    link, depth = check(x)
    assert depth.max() == d - 1
    # the same nesting shifted so that blocks straddle partitions differently
    check(np.concatenate([dyck(rng, 2 * int(rng.integers(0, 3000))), x]))


def test_fully_nested():
    n = 300_000
    link, depth = check(np.concatenate([np.ones(n // 2, bool), np.zeros(n // 2, bool)]))
    assert depth.max() == n // 2 - 1


def test_tiny_groups_and_deep_mix(rng):
    check(np.tile(np.array([1, 0], bool), 70_000))
    check(np.tile(np.array([1, 1, 0, 0, 1, 0], bool), 30_000))
    # a deep spine with tiny groups hanging off every level, across many partitions
    parts = [np.ones(1, bool)]
    for _ in range(20_000):
        parts.append(np.array([1, 1, 0, 1, 0], bool))  # net +1 per chunk, each with tiny groups
    parts.append(np.zeros(20_001, bool))
    check(np.concatenate(parts))


def test_unbalanced(rng):
    n = 200_000
    check(rng.random(n) < 0.6)  # opens left unclosed
    check(rng.random(n) < 0.4)  # unmatched closes
    check(np.zeros(5000, bool))
    check(np.ones(5000, bool))
    # drifting: deep, then unmatched closes, then deep again (stack rebuilt after underflow)
    x = np.concatenate([rng.random(40_000) < p for p in (0.8, 0.2, 0.5, 0.9, 0.05, 0.5)])
    check(x)
    # an unmatched close does not disturb later elements
    y = dyck(rng, 20_000)
    x = np.concatenate([y[:7001], np.zeros(3, bool), y[7001:]])
    link, _ = check(x)


def test_many_partitions_small_workgroups(rng):
    """WG = 64 (partitions of 1024), spine of 32 invocations: several spine chunks (of 128
    partitions) and a deeper global tree at modest sizes."""
    with options(stack_wg=64, stack_spine_wg=32):
        p = 64 * EPT
        for parts in (255, 256, 257, 700):
            check(rng.random(parts * p + int(rng.integers(-1, 2))) < 0.5)
        check(np.concatenate([np.ones(150_000, bool), np.zeros(149_000, bool)]))
        x = np.concatenate([rng.random(60_000) < q for q in (0.7, 0.3, 0.5, 0.95, 0.05)])
        check(x)
        # staircase: every chunk leaves one open, then all close: owners spread over many partitions
        chunks = [np.concatenate([[True], dyck(rng, 2 * int(rng.integers(0, 150)))]) for _ in range(3000)]
        check(np.concatenate(chunks + [np.zeros(3000, bool)]))
        # the partner of the last close is in partition 0, across ~300 balanced partitions
        check(np.concatenate([[True], dyck(rng, 300_000), [False]]))


@pytest.mark.parametrize("wg", [32, 64])
def test_chain_past_eight_hops(wg, rng):
    """Partitions that each leave two opens (a staircase of minima), then a run of closes: an
    invocation's 16 targets lie in 8 partitions and later invocations start 8+ hops from their
    partition's first owner, so the leaf falls back to the tree."""
    p = wg * EPT
    with options(stack_wg=wg, stack_spine_wg=32):
        steps = [np.concatenate([[True], dyck(rng, p - 2), [True]]) for _ in range(80)]
        x = np.concatenate(steps + [np.zeros(2 * p + 5, bool), rng.random(3 * p) < 0.5])
        check(x)


@pytest.mark.parametrize("wg", [32, 64, 256])
def test_workgroup_memory_path(wg, rng):
    """The scans without subgroups (the GL backend's path; also the default where subgroups are absent)."""
    with options(stack_subgroups=False, stack_wg=wg):
        p = wg * EPT
        for n in (p - 1, p + 1, 257 * p):
            check(rng.random(n) < 0.5)
        check(dyck(rng, 2 * 70_000))
        check(np.concatenate([np.ones(100_000, bool), np.zeros(99_000, bool)]))
        kinds, boxes = random_clips(rng, 30_000)
        np.testing.assert_array_equal(pp.clip_bboxes(kinds, boxes, (0, 0, 900, 900)),
                                      clip_reference(kinds, boxes, (0, 0, 900, 900), "intersect"))


def test_dtypes_and_gpuarray(rng):
    x = dyck(rng, 10_000)
    rl, rd, _ = reference(x)
    for arr in (x, x.astype(np.uint8) * 7, x.astype(np.uint32) * 3, x.astype(np.int32) * -1):
        link, depth = pp.bracket_match(arr)
        np.testing.assert_array_equal(link, rl)
        np.testing.assert_array_equal(depth, rd)
    for arr in (x.astype(np.uint8), x.astype(np.uint32)):
        g = pp.asarray(arr)
        out = (poisoned((len(x),), np.int32), poisoned((len(x),), np.int32))
        link, depth = pp.bracket_match(g, out=out)
        assert link is out[0] and isinstance(depth, pp.GpuArray)
        np.testing.assert_array_equal(link.numpy(), rl)
        np.testing.assert_array_equal(depth.numpy(), rd)


def test_bench_reference_is_right(rng):
    """The vectorised reference the benchmark checks its timed runs with."""
    from pywgpuprims.stack import _fast_reference
    for n in (0, 1, 7, 5000):
        for q in (0.3, 0.5, 0.7):
            x = rng.random(n) < q
            rl, rd, _ = reference(x)
            fl, fd = _fast_reference(x)
            np.testing.assert_array_equal(fl, rl)
            np.testing.assert_array_equal(fd, rd)


def test_bad_input():
    with pytest.raises(pp.InputError):
        pp.bracket_match(np.zeros((3, 3), bool))
    with pytest.raises(pp.InputError):
        pp.bracket_match(np.zeros(3, np.float32))
    with pytest.raises(pp.InputError):
        pp.clip_bboxes([0, 3], np.zeros((2, 4), np.float32), (0, 0, 1, 1))
    with pytest.raises(pp.InputError):
        pp.clip_bboxes([0, 1], np.zeros((3, 4), np.float32), (0, 0, 1, 1))
    with pytest.raises(pp.InputError):
        pp.clip_bboxes([0, 1], np.zeros((2, 4), np.float32), (0, 0, 1, 1), op="xor")
    with pytest.raises(pp.InputError):
        pp.clip_bboxes([0, 1], np.zeros((2, 4), np.float32), (0, 0, 1))


# ----------------------------------------------------------------------------- clip bboxes
def clip_reference(kinds, boxes, viewport, op):
    """An independent sequential stack in plain Python floats (float32 min/max are exact)."""
    def empty(r):
        return not (r[0] < r[2] and r[1] < r[3])

    def comb(a, b):
        if op == "union":
            if empty(a):
                return b
            if empty(b):
                return a
            return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
        r = (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
        return (0.0, 0.0, 0.0, 0.0) if empty(r) else r

    out = []
    stack = [tuple(float(v) for v in viewport)]
    for k, b in zip(kinds.tolist(), boxes.tolist(), strict=True):
        if k == 1:
            stack.append(comb(tuple(b), stack[-1]))
            r = stack[-1]
        elif k == 2 and len(stack) > 1:
            r = stack.pop()
        else:
            r = comb(tuple(b), stack[-1])
        out.append((0.0, 0.0, 0.0, 0.0) if empty(r) else r)
    return np.array(out, np.float32).reshape(-1, 4)


def random_clips(rng, n, p=(0.4, 0.3, 0.3)):
    kinds = rng.choice(np.array([0, 1, 2], np.uint32), n, p=p)
    lo = rng.uniform(-200, 1200, (n, 2))
    size = rng.uniform(-20, 900, (n, 2))  # some negative: empty boxes
    boxes = np.concatenate([lo, lo + size], 1).astype(np.float32)
    far = rng.random(n) < 0.02  # clips far outside the viewport
    boxes[far] += np.float32(5000)
    return kinds, boxes


@pytest.mark.parametrize("op", ["intersect", "union"])
@pytest.mark.parametrize("n", [1, 5, P - 1, P + 1, 70_001])
def test_clip_bboxes_random(op, n, rng):
    kinds, boxes = random_clips(rng, n)
    vp = (0.0, 0.0, 1000.0, 800.0) if op == "intersect" else (0.0, 0.0, 0.0, 0.0)
    got = pp.clip_bboxes(kinds, boxes, vp, op=op)
    want = clip_reference(kinds, boxes, vp, op)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(pp.clip_bboxes_reference(kinds, boxes, vp, op=op), want)
    assert not pp.is_empty(got[~pp.is_empty(want)]).any()


def test_clip_bboxes_deep_and_shrinking(rng):
    d = 3000
    kinds = np.concatenate([np.ones(d, np.uint32), np.zeros(5, np.uint32), np.full(d, 2, np.uint32),
                            np.zeros(3, np.uint32), np.full(4, 2, np.uint32)])  # 4 unmatched ends
    n = len(kinds)
    t = np.arange(n, dtype=np.float32)
    boxes = np.stack([t * 0.1, t * 0.05, 2000 - t * 0.1, 1500 - t * 0.07], 1).astype(np.float32)
    rng.shuffle(boxes[d:d + 5])
    got = pp.clip_bboxes(kinds, boxes, (-1, -1, 1900, 1400))
    np.testing.assert_array_equal(got, clip_reference(kinds, boxes, (-1, -1, 1900, 1400), "intersect"))
    assert (~pp.is_empty(got[:d])).all() or pp.is_empty(got).any()


def test_clip_bboxes_gpuarray_and_links(rng):
    kinds, boxes = random_clips(rng, 20_000)
    gk = pp.asarray(kinds)
    gb = pp.asarray(boxes)
    got, links = pp.clip_bboxes(gk, gb, (0, 0, 1000, 1000), return_links=True)
    assert isinstance(got, pp.GpuArray) and isinstance(links, pp.GpuArray)
    np.testing.assert_array_equal(got.numpy(), clip_reference(kinds, boxes, (0, 0, 1000, 1000), "intersect"))
    rl, _ = pp.bracket_match_reference(("kind", kinds))
    np.testing.assert_array_equal(links.numpy(), rl)
    # int32 kinds, all draws, empty input
    np.testing.assert_array_equal(pp.clip_bboxes(np.zeros(7, np.int32), boxes[:7], (0, 0, 50, 50)),
                                  clip_reference(np.zeros(7, np.uint32), boxes[:7], (0, 0, 50, 50), "intersect"))
    assert pp.clip_bboxes(np.zeros(0, np.uint32), np.zeros((0, 4), np.float32), (0, 0, 1, 1)).shape == (0, 4)


_THREAD_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    sys.path.insert(0, os.path.join(os.environ['PYTHONPATH'], 'tests'))
    import pywgpuprims as pp
    from test_stack import check, dyck, random_clips, clip_reference
    rng = np.random.default_rng()
    for n in (4096 * 37 + 5, 300_000):
        check(rng.random(n) < 0.5)
        check(dyck(rng, n - n % 2))
        check(np.concatenate([np.ones(n // 2, bool), np.zeros(n // 2 - 7, bool)]))
    with pp.device().using(max_binding=65536):  # chunks (about 16k elements each)
        check(rng.random(60_000) < 0.5)
        check(np.ones(50_000, bool))
        check(np.concatenate([np.ones(25_000, bool), np.zeros(25_000, bool), rng.random(9_000) < 0.5]))
    k, b = random_clips(rng, 50_000)
    assert (pp.clip_bboxes(k, b, (0, 0, 900, 900)) == clip_reference(k, b, (0, 0, 900, 900), "intersect")).all()
    # the single pass, also with silent partitions
    for kw in ({}, {"stack_withhold_period": 3}, {"stack_wg": 32},
               {"stack_wg": 32, "stack_withhold_period": 5, "stack_list_spin": 16}):
        with pp.device().using(**kw):
            check(rng.random(300_000) < 0.5, method="single_pass")
            check(dyck(rng, 200_000), method="single_pass")
    print("ok")
""")


@pytest.mark.parametrize("threads", ["1", "2", "8"])
def test_lavapipe_thread_counts(threads):
    run_with_lavapipe_threads(_THREAD_SCRIPT, threads)


@pytest.mark.slow
def test_stress(rng):
    for _ in range(20):
        n = int(rng.integers(1, 1 << 21))
        q = float(rng.uniform(0.3, 0.7))
        check(rng.random(n) < q)


def test_clip_bboxes_needs_no_depth_bound(rng):
    """Deep random clips give the exact boxes with no depth bound (nothing is read back); the old
    max_depth keyword is gone, so passing it raises."""
    k, b = random_clips(rng, 20_000)
    walk = np.cumsum(np.where(k == pp.CLIP_BEGIN, 1, np.where(k == pp.CLIP_END, -1, 0)))
    assert int(np.max(walk - np.minimum(np.minimum.accumulate(walk), 0))) > 2
    np.testing.assert_array_equal(pp.clip_bboxes(k, b, (0, 0, 900, 900)),
                                  clip_reference(k, b, (0, 0, 900, 900), "intersect"))
    with pytest.raises(TypeError, match="max_depth"):
        pp.clip_bboxes(k, b, (0, 0, 900, 900), max_depth=4)


def test_clip_bboxes_tile_chains(rng):
    """Chains that cross many tiles of 512: a staircase where every tile leaves begin-clips open
    (the tile pointer jumping runs its full rounds), draws under each, then all closed; a chain
    closed in the middle of a tile; blend groups (union) on the same."""
    T = pp.stack.CLIP_TILE
    parts = []
    for _ in range(300):  # each tile: random balanced-ish kinds plus 3 begins left open
        k = rng.choice(np.array([0, 1, 2], np.uint32), T - 3, p=(0.4, 0.3, 0.3))
        parts.append(np.concatenate([k, np.ones(3, np.uint32)]))
    parts.append(np.full(1000, 2, np.uint32))
    parts.append(rng.choice(np.array([0, 1, 2], np.uint32), 5 * T + 7))
    kinds = np.concatenate(parts)
    boxes = random_clips(rng, len(kinds))[1]
    nb = int((kinds == 1).sum())  # begin boxes that shrink slowly: deep chains stay non-empty
    boxes[kinds == 1] = np.concatenate([rng.uniform(0, 300, (nb, 2)), rng.uniform(600, 900, (nb, 2))], 1)
    for op, vp in (("intersect", (0.0, 0.0, 900.0, 900.0)), ("union", (0.0, 0.0, 0.0, 0.0))):
        poison_pool(((len(kinds), 4), np.float32))
        got = pp.clip_bboxes(kinds, boxes, vp, op=op)
        want = clip_reference(kinds, boxes, vp, op)
        np.testing.assert_array_equal(got, want, err_msg=op)
        assert (~pp.is_empty(want[:300 * T])).mean() > 0.5


# The single pass (method="single_pass"). Its own counters come back through stack_stats_buffer:
# [tickets, invocations that gave up (the repair then ran), predecessors reduced by a successor].
P1 = pp.stack.SINGLE_PASS_WG * EPT  # its partitions (4096)


def check_single_pass(x, **kw):
    dev = pp.device()
    stats = pp.GpuArray.empty((4,), np.uint32, dev)
    with dev.using(stack_stats_buffer=stats.buffer, **kw):
        check(x, method="single_pass")
    st = stats.numpy()
    assert st[0] > 0 or len(x) == 0  # tickets taken: the single pass ran
    return st


def single_pass_inputs(rng, n):
    ramp = np.concatenate([np.ones(9000, bool), np.zeros(9000, bool)])
    return {"random": rng.random(n) < 0.5, "dyck": dyck(rng, n - n % 2),
            "nested": np.concatenate([np.ones(n // 2, bool), np.zeros(n - n // 2, bool)]),
            "ramps": np.resize(ramp, n), "opens": rng.random(n) < 0.7, "closes": rng.random(n) < 0.3,
            "pairs": np.resize(np.array([1, 0], bool), n)}


@pytest.mark.parametrize("n", [1, 2, 17, P1 - 1, P1, P1 + 1, 3 * P1 + 5, 64 * P1, 64 * P1 + 1])
def test_single_pass_inputs(n, rng):
    """Every kind of input around partition boundaries and around 64 partitions (past that the
    repair is recorded); the single pass itself must finish (no give-ups on lavapipe)."""
    for name, x in single_pass_inputs(rng, n).items():
        st = check_single_pass(x)
        assert st[1] == 0, f"{name}: {st[1]} invocations gave up"


@pytest.mark.parametrize("parts", [255, 256, 257])
def test_single_pass_many_small_partitions(parts, rng):
    """Partitions of 512: hundreds of them, lookbacks and owner walks over many windows."""
    n = parts * P
    for x in (rng.random(n + 1) < 0.5, dyck(rng, n), np.tile(np.concatenate([np.ones(3000, bool),
                                                                             np.zeros(3000, bool)]), n // 6000)):
        assert check_single_pass(x, stack_wg=32)[1] == 0


@pytest.mark.parametrize("period", [2, 3])
def test_single_pass_forced_fallback(period, rng):
    """Every period-th partition publishes nothing (no summary, size or parent link): its
    successors must reduce it from its input and walk past it."""
    n = 150_000
    parts = -(-n // P)  # partitions of 512 at stack_wg=32
    # every silent partition with a successor is reduced by that successor at least once (fallbacks
    # also happen without the switch, when a predecessor is merely late: hence a floor, not a count)
    silent = sum(1 for q in range(parts - 1) if q % period == period - 1)
    for name, x in single_pass_inputs(rng, n).items():
        st = check_single_pass(x, stack_wg=32, stack_withhold_period=period)
        assert st[1] == 0, name
        assert st[2] >= silent, f"{name}: {st[2]} fallbacks for {silent} silent partitions"


@pytest.mark.parametrize("budget", [{"stack_max_hops": 0}, {"stack_max_steps": 0}, {"stack_chain_cap": 1}])
def test_single_pass_forced_repair(budget, rng):
    """Budgets at zero: partitions give up and the armed multi-pass repair must fix everything."""
    x = rng.random(200_000) < 0.5
    st = check_single_pass(x, stack_wg=32, stack_force_repair=True, **budget)
    assert st[1] > 0
    check_single_pass(dyck(rng, 100_000), stack_force_repair=True, **budget)


def test_single_pass_stale_list_entries(rng):
    """No list entry carries the call's epoch: every read of a partition's list rebuilds the
    entry from the input (the path for a store a reader cannot see yet)."""
    for x in single_pass_inputs(rng, 70_000).values():
        assert check_single_pass(x, stack_wg=32, stack_stale_lists=True)[1] == 0


def test_single_pass_lookback_to_partition_zero(rng):
    """No partition publishes its size: every lookback combines summaries window after window
    back to partition 0, and the owner walk starts afresh after it."""
    for x in single_pass_inputs(rng, 60_000).values():
        assert check_single_pass(x, stack_wg=32, stack_no_sizes=True)[1] == 0
    x = rng.random(40_000) < 0.5
    assert check_single_pass(x, stack_wg=32, stack_no_sizes=True, stack_withhold_period=3)[1] == 0


def test_single_pass_workgroup_memory_path_and_kinds(rng):
    for x in single_pass_inputs(rng, 100_000).values():
        assert check_single_pass(x, stack_subgroups=False, stack_wg=64)[1] == 0
    kinds, boxes = random_clips(rng, 100_000)
    got = pp.clip_bboxes(kinds, boxes, (0, 0, 1000, 1000), method="single_pass")
    np.testing.assert_array_equal(got, clip_reference(kinds, boxes, (0, 0, 1000, 1000), "intersect"))


def test_single_pass_repeated_calls_reuse_lists(rng):
    """Lists stay in one buffer across calls; each call's entries carry a new epoch, so entries
    of an earlier call (other data at the same slots) are never taken for this one's."""
    for _ in range(3):
        for x in (rng.random(90_000) < 0.5, dyck(rng, 90_000)):
            assert check_single_pass(x, stack_wg=32)[1] == 0


def test_bad_method():
    with pytest.raises(pp.InputError, match="method"):
        pp.bracket_match(np.ones(10, bool), method="fastest")


def test_partition_too_large_for_list_entries():
    with options(stack_wg=512), pytest.raises(ValueError, match="at most 4096"):
        pp.bracket_match(np.ones(10, bool))


# ----------------------------------------------------------------------------- past one binding
def chunk_limits():
    """Binding limits (bytes) that force chunks at test sizes: a multiple of the storage offset
    alignment and odd ones (the chunk planner must round them itself)."""
    return [8 * 4 * P + 512, 65536, 98_765]


def chunk_capacity(limit, method="multi_pass", box_bytes=0):
    """(run capacity M, chunk unit) the chunked path uses under ``limit`` (for sizes around it)."""
    with options(max_binding=limit):
        return pp.stack._capacity(pp.device(), method, box_bytes)


def poison_pool(*shapes_dtypes):
    """Leave poisoned blocks of these shapes in the pool, so that outputs allocated next start
    poisoned (unwritten elements show)."""
    held = [poisoned(s, d) for s, d in shapes_dtypes]
    pp.device().sync()
    del held


def chunk_inputs(rng, M):
    """Bracket sequences for chunks of about ``M`` elements (the run capacity)."""
    h = M // 2
    return {
        "random": rng.random(3 * M + 7) < 0.5,
        "balanced": dyck(rng, 4 * M),
        "opens left": rng.random(3 * M + 1) < 0.65,
        "unmatched closes": rng.random(3 * M - 1) < 0.35,
        # deep nesting across every boundary: one 1.5 M deep ramp with small groups inside
        "deep": np.concatenate([np.ones(3 * h, bool), dyck(rng, 2 * h), np.zeros(3 * h - 5, bool),
                                rng.random(h) < 0.5]),
        # all opens of chunk 1 closed in chunk 3, a balanced chunk 2 between them
        "chunk 1 to chunk 3": np.concatenate([np.ones(M, bool), dyck(rng, M), np.zeros(M, bool)]),
        # drifting: deep, underflow (stack rebuilt), deep again
        "drift": np.concatenate([rng.random(M) < q for q in (0.8, 0.1, 0.5, 0.9)]),
    }


@pytest.mark.parametrize("limit", chunk_limits())
def test_bracket_match_chunked(limit, rng):
    """Past the binding limit: chunks in order with the unmatched opens carried; links, depths and
    counts identical to one run (Python stack and bracket_match_reference), outputs poisoned."""
    M, unit = chunk_capacity(limit)
    dev = pp.device()
    with options(max_binding=limit):
        for name, x in chunk_inputs(rng, M).items():
            assert not pp.stack._fits(dev, len(x), "multi_pass"), name  # the chunked path runs
            link, depth = check(x)
            rl, rd = pp.bracket_match_reference(x)
            np.testing.assert_array_equal(link, rl)
            np.testing.assert_array_equal(depth, rd)
            g = pp.asarray(x.astype(np.uint8))
            out = (poisoned((len(x),), np.int32), poisoned((len(x),), np.int32))
            pp.bracket_match(g, out=out)
            np.testing.assert_array_equal(out[0].numpy(), rl, err_msg=name)
            np.testing.assert_array_equal(out[1].numpy(), rd, err_msg=name)


@pytest.mark.parametrize("limit", chunk_limits()[:2])
def test_bracket_match_chunk_boundaries(limit, rng):
    """Sizes around the capacity and its multiples (the last chunk empty, one element, full), u8
    and u32 input, random and fully nested."""
    M, unit = chunk_capacity(limit)
    with options(max_binding=limit):
        for n in (M - 1, M, M + 1, 2 * M - unit, 2 * M + 1, 3 * M + unit - 1):
            x = rng.random(n) < 0.5
            check(x)
            check(x.astype(np.uint32) * 5)
            check(np.concatenate([np.ones(n // 2, bool), np.zeros(n - n // 2, bool)]))


def test_bracket_match_chunked_single_pass(rng):
    limit = 4 * P1 * 4 + 512
    M, _ = chunk_capacity(limit, "single_pass")
    with options(max_binding=limit):
        for x in chunk_inputs(rng, M).values():
            assert not pp.stack._fits(pp.device(), len(x), "single_pass")
            check(x, method="single_pass")


def test_tiny_bindings(rng):
    """Chunks of a few hundred elements (tens of chunks) still match; a binding too small for
    even that raises the library's error."""
    with options(max_binding=4096):
        check(rng.random(9_000) < 0.5)
        check(np.concatenate([np.ones(4000, bool), np.zeros(4000, bool)]))
    with options(max_binding=1024), pytest.raises(pp.DeviceLimitError, match="too small"):
        pp.bracket_match(np.ones(10_000, bool))


def chunk_edge_cases(rng, M):
    """Hostile inputs over three or more chunks of ``M`` elements: depth = n, nothing matched, a
    2^k-deep nest, whole chunks of opens or closes, and peaks, troughs and flips at chunk
    boundaries +-1 (chunks are whole partitions, so also at a partition's edge)."""
    n = 3 * M + P + 3
    k = int(np.log2(n // 2))
    cases = {
        "all opens (depth = n)": np.ones(n, bool),
        "all closes": np.zeros(n, bool),
        f"2^{k} nested, then random": np.concatenate([np.ones(1 << k, bool), np.zeros(1 << k, bool),
                                                      rng.random(n - (2 << k) + 5) < 0.5]),
        "a chunk of opens, a chunk of closes": np.concatenate([np.ones(M, bool), np.zeros(M, bool),
                                                               rng.random(M + 9) < 0.5]),
        "a chunk of closes, a chunk of opens": np.concatenate([np.zeros(M, bool), np.ones(M, bool),
                                                               rng.random(M + 9) < 0.5]),
        "opens of chunk 1 closed in chunk 4": np.concatenate([np.ones(M // 2, bool), dyck(rng, 2 * M),
                                                               rng.random(M) < 0.5, np.zeros(M, bool)]),
    }
    for off in (-1, 0, 1):
        cases[f"peak at M{off:+d}"] = np.concatenate([np.ones(M + off, bool), np.zeros(2 * M - off + 7, bool)])
        cases[f"trough at 2M{off:+d}"] = np.concatenate([rng.random(M) < 0.6, np.zeros(M + off, bool),
                                                         np.ones(M - off, bool), rng.random(M // 2) < 0.5])
        cases[f"flip at 2M{off:+d}"] = np.concatenate([rng.random(2 * M + off) < 0.7, rng.random(M + 3) < 0.3])
    return cases


@pytest.mark.parametrize("hooks", [{}, {"stack_spine_wg": 4}, {"stack_wg": 64}, {"stack_subgroups": False}])
def test_bracket_match_chunk_edges(hooks, rng):
    """Three or more chunks on hostile inputs: links, depths and counts equal to the Python stack's
    and the vectorised reference's, into poisoned outputs (u8 and uint32 GpuArray input); with
    several spine chunks per run (spine_wg 4), larger partitions, workgroup-memory scans."""
    limit = 65536
    with options(max_binding=limit, **hooks):
        M = pp.stack._BracketChunks(pp.device(), 1 << 20, "u8").M
        for name, x in chunk_edge_cases(rng, M).items():
            assert len(x) > 2 * M and not pp.stack._fits(pp.device(), len(x), "multi_pass"), name
            link, depth = check(x)
            rl, rd = pp.bracket_match_reference(x)
            np.testing.assert_array_equal(link, rl, err_msg=name)
            np.testing.assert_array_equal(depth, rd, err_msg=name)
            for dtype in (np.uint8, np.uint32):
                poison_pool(((len(x),), np.int32), ((len(x),), np.int32))
                out = (poisoned((len(x),), np.int32), poisoned((len(x),), np.int32))
                pp.bracket_match(pp.asarray(x.astype(dtype) * 3), out=out)
                np.testing.assert_array_equal(out[0].numpy(), rl, err_msg=f"{name}, {dtype}")
                np.testing.assert_array_equal(out[1].numpy(), rd, err_msg=f"{name}, {dtype}")


def test_bracket_match_chunks_in_place(rng):
    """The chunks read the input where it lies (views of it): also when the input is itself a view
    of a larger array (256 bytes in), or a copy made of a range no binding may start at."""
    with options(max_binding=65536):
        M = pp.stack._BracketChunks(pp.device(), 1 << 20, "u32").M
        x = rng.random(3 * M + 100) < 0.45
        whole = pp.asarray(np.concatenate([np.ones(64, np.uint32), x.astype(np.uint32)]))
        rl, rd, _ = reference(x)
        for g in (whole[64:64 + len(x)], pp.asarray(np.concatenate([[1], x]).astype(np.uint32))[1:]):
            link, depth = pp.bracket_match(g)
            np.testing.assert_array_equal(link.numpy(), rl)
            np.testing.assert_array_equal(depth.numpy(), rd)


def test_bracket_match_chunks_one_submission(rng, monkeypatch):
    """Every chunk is recorded into one batch: one submission, nothing read back in between."""
    dev = pp.device()
    with options(max_binding=65536):
        x = rng.random(5 * pp.stack._BracketChunks(dev, 1 << 20, "u8").M) < 0.5
        g = pp.asarray(x.astype(np.uint8))
        out = (pp.GpuArray.empty((len(x),), np.int32), pp.GpuArray.empty((len(x),), np.int32))
        dev.sync()
        submits = []
        real = type(dev)._submit
        monkeypatch.setattr(type(dev), "_submit", lambda self, batch: (submits.append(batch), real(self, batch)))
        pp.bracket_match(g, out=out)
        monkeypatch.undo()
        assert len(submits) == 1
        rl, rd, _ = reference(x)
        np.testing.assert_array_equal(out[0].numpy(), rl)
        np.testing.assert_array_equal(out[1].numpy(), rd)


def clip_chunk_cases(rng, M):
    h = M // 2
    nested = np.concatenate([np.ones(3 * h, np.uint32), np.zeros(h, np.uint32), np.full(3 * h - 9, 2, np.uint32)])
    return {
        "random": random_clips(rng, 3 * M + 5),
        "mostly begins": random_clips(rng, 3 * M - 3, p=(0.2, 0.6, 0.2)),
        "mostly ends": random_clips(rng, 3 * M + 1, p=(0.2, 0.2, 0.6)),
        "deep": (nested, random_clips(rng, len(nested))[1]),
        "chunk 1 to chunk 3": (np.concatenate([np.ones(M, np.uint32), random_clips(rng, M, p=(0.5, 0.25, 0.25))[0],
                                               np.full(2 * M, 2, np.uint32)]), random_clips(rng, 4 * M)[1]),
    }


@pytest.mark.parametrize("op", ["intersect", "union"])
@pytest.mark.parametrize("limit", chunk_limits())
def test_clip_bboxes_chunked(op, limit, rng):
    """clip_bboxes past the binding limit: the carried opens keep their boxes; results and links as
    clip_bboxes_reference and a Python stack, outputs from a poisoned pool."""
    M, _ = chunk_capacity(limit, box_bytes=16)
    vp = (0.0, 0.0, 1000.0, 800.0) if op == "intersect" else (0.0, 0.0, 0.0, 0.0)
    with options(max_binding=limit):
        for name, (kinds, boxes) in clip_chunk_cases(rng, M).items():
            n = len(kinds)
            assert not pp.stack._fits(pp.device(), n, "multi_pass", 16), name
            want = clip_reference(kinds, boxes, vp, op)
            np.testing.assert_array_equal(pp.clip_bboxes_reference(kinds, boxes, vp, op=op), want)
            poison_pool(((n, 4), np.float32), ((n,), np.int32))
            got, links = pp.clip_bboxes(pp.asarray(kinds), pp.asarray(boxes), vp, op=op, return_links=True)
            np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
            np.testing.assert_array_equal(links.numpy(), pp.bracket_match_reference(("kind", kinds))[0], err_msg=name)


def test_clip_bboxes_chunk_boundaries(rng):
    limit = 65536
    M, unit = chunk_capacity(limit, box_bytes=16)
    with options(max_binding=limit):
        for n in (M + 1, 2 * M - unit, 2 * M + unit + 1):
            kinds, boxes = random_clips(rng, n)
            want = clip_reference(kinds, boxes, (0, 0, 900, 900), "intersect")
            np.testing.assert_array_equal(pp.clip_bboxes(kinds, boxes, (0, 0, 900, 900)), want)
            np.testing.assert_array_equal(pp.clip_bboxes(kinds, boxes, (0, 0, 900, 900), method="single_pass"), want)
        # int32 kinds on the GPU: other values count as draws (in the carried prefix too)
        kj = kinds.astype(np.int32)
        kj[(kinds == 0) & (rng.random(len(kinds)) < 0.3)] = 7
        got = pp.clip_bboxes(pp.asarray(kj), pp.asarray(boxes), (0, 0, 900, 900))
        np.testing.assert_array_equal(got.numpy(), clip_reference(kinds, boxes, (0, 0, 900, 900), "intersect"))
