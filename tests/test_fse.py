"""FSE (tANS) codec: tables and blocks against the reference FSE functions exported by the zstd
package (bit-exact), GPU round trips in both modes, and corrupt/hostile containers."""

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import pywgpuprims as pp
from pywgpuprims import fse
from pywgpuprims.fse import _codec as C
from pywgpuprims.fse import _reference as R
from pywgpuprims.fse import _tables as T

needs_ref = pytest.mark.skipif(R.load() is None, reason=f"reference FSE symbols unavailable: {R.why_missing()}")


@pytest.fixture(autouse=True)
def _poison():
    with pp.device().using(fse_poison_outputs=True):
        yield


def _dist(rng, n, k, alpha):
    p = rng.dirichlet(np.full(k, alpha))
    return rng.choice(k, n, p=p).astype(np.uint8) + np.uint8(rng.integers(0, 256 - k + 1))


def _skewed(rng, n):
    """About 4 bits of entropy per byte."""
    return np.minimum(rng.geometric(0.12, n), 255).astype(np.uint8)


# ----------------------------------------------------------------------------- host tables
@needs_ref
def test_optimal_table_log_tiny_inputs():
    """2 and 3 symbols: the reference's unsigned arithmetic wraps there (a random draw found it)."""
    for n in range(2, 10):
        for m in (1, 2, 7, 200, 248, 255):
            for req in (0, 5, 9, 11, 12, 15):
                assert fse.optimal_table_log(req, n, m) == R.load().FSE_optimalTableLog(req, n, m), (req, n, m)


@needs_ref
def test_tables_match_reference(rng):
    for _ in range(60):
        n = int(rng.integers(3, 50000))
        x = _dist(rng, n, int(rng.integers(2, 257)), float(rng.choice([0.05, 0.5, 3.0, 50.0])))
        c = np.bincount(x, minlength=256)
        m = int(np.flatnonzero(c)[-1])
        c = c[:m + 1]
        if c.max() == n:
            continue
        for req in (5, 9, 11, 12):
            tl = fse.optimal_table_log(req, n, m)
            assert tl == R.load().FSE_optimalTableLog(req, n, m)
            norm = fse.normalize_counts(c, tl)
            np.testing.assert_array_equal(norm, R.normalize(c, tl, n))
            h = np.zeros((1, 256), np.uint64)
            h[0, :m + 1] = c
            np.testing.assert_array_equal(C.T.normalize_many(h, np.array([n]), np.array([tl]))[0, :m + 1], norm)
            head = fse.write_ncount(norm, tl)
            assert head == R.write_ncount(norm, tl)
            back, tl2, hb = fse.read_ncount(head + b"\x55\xaa")
            assert (tl2, hb) == (tl, len(head))
            np.testing.assert_array_equal(back, norm)
            assert fse.build_ctable(norm, tl).reference_bytes() == R.ctable_bytes(norm, tl)
            d = fse.build_dtable(norm, tl).reference_bytes()
            assert d == R.dtable_bytes(norm, tl)[:len(d)]


def test_normalize_many_is_normalize_counts_row_by_row(rng):
    """The dense, vectorised normalisation (thousands of blocks per call) against the scalar one,
    itself checked bit-exact with the reference above: skewed, Dirichlet, flat (the fallback
    method), near-single-symbol rows, table logs 5..12, rows of different widths together."""
    rows, tots, tls = [], [], []
    while len(rows) < 400:
        k, n = int(rng.integers(2, 257)), int(rng.integers(300, 100_000))
        kind = int(rng.integers(0, 4))
        if kind == 0:
            x = np.minimum(rng.geometric(rng.uniform(0.01, 0.9), n), 255)
        elif kind == 1:
            x = rng.choice(k, n, p=rng.dirichlet(np.full(k, rng.uniform(0.05, 3))))
        elif kind == 2:
            x = rng.integers(0, k, n)
        else:
            x = np.where(rng.random(n) < 0.001, int(rng.integers(1, 256)), 0)
        h = np.bincount(x, minlength=256).astype(np.uint32)
        if (h > 0).sum() < 2:
            continue
        last = int(np.flatnonzero(h)[-1])
        rows.append(h)
        tots.append(n)
        tls.append(T.optimal_table_log(int(rng.integers(5, 13)), n, last))
    got = T.normalize_many(np.array(rows), np.array(tots), np.array(tls))
    for h, n, tl, g in zip(rows, tots, tls, got, strict=True):
        last = int(np.flatnonzero(h)[-1])
        np.testing.assert_array_equal(g[:last + 1], T.normalize_counts(h[:last + 1], tl, n))
        assert not g[last + 1:].any()


def _host_plan(counts: np.ndarray, lens: np.ndarray, table_log: int, fse_kind: int):
    """Block kinds, plans and placement info as the host computed them before norm.wgsl did."""
    nb = len(lens)
    maxc = counts.max(axis=1).astype(np.int64)
    kind = np.full(nb, fse_kind, np.uint32)
    kind[(lens <= 2) | (maxc == 1) | (maxc < (lens >> 7))] = C.RAW
    kind[(maxc == lens) & (lens > 1)] = C.RLE
    rows = np.flatnonzero(kind >= C.FSE_REF)
    plan = np.zeros((nb, C.PLAN_WORDS), np.uint32)
    m2 = 0
    if len(rows):
        cnt = counts[rows]
        msv = 255 - np.argmax(cnt[:, ::-1] > 0, axis=1)
        tls = T.optimal_table_logs(table_log, lens[rows], msv)
        norm = T.normalize_many(cnt, lens[rows], tls)
        for r, t in zip(rows, tls, strict=True):  # rows the fallback method normalised
            c, n, t = [int(v) for v in counts[r]], int(lens[r]), int(t)
            step, scale, slots, best = (1 << 62) // n, 62 - t, 0, (0, 0)
            for cs in c:
                if 0 < cs <= n >> t:
                    slots += 1
                elif cs:
                    p = (cs * step) >> scale
                    if p < 8 and cs * step - (p << scale) > int(T._RTB[p]) << (scale - 20):
                        p += 1
                    slots += p
                    best = max(best, (p, 0))
            m2 += slots - (1 << t) >= best[0] >> 1
        packed = (norm.astype(np.int32) + 1).astype(np.uint32)
        plan[rows, 0] = tls | (msv << 8)
        plan[rows, 1:] = packed[:, 0::2] | (packed[:, 1::2] << 16)
    rle = np.where(kind == C.RLE, np.argmax(counts, axis=1), 0)
    return plan, np.stack([kind, lens, rle], axis=1).astype(np.uint32), m2


@pytest.mark.parametrize("bs", [64, 320, 960, 4096, 1 << 16, 4 << 20])
def test_gpu_kinds_and_normalisation_match_host(rng, bs):
    """norm.wgsl (kinds, table logs, normalised counts on the GPU, 64-bit arithmetic on word
    pairs) against the host's functions (themselves bit-exact with the reference above): skewed,
    Dirichlet, flat rows (the fallback method), nearly single-symbol, raw and RLE rows, table logs
    5..12, a short last block."""
    dev = pp.device()
    nb = 96
    lens = np.full(nb, bs, np.int64)
    lens[-1] = int(rng.integers(1, bs + 1))
    counts = np.zeros((nb, 256), np.int64)
    for i in range(nb):
        k = int(rng.integers(1, 257))
        shape = i % 6
        if shape == 0:
            p = rng.geometric(rng.uniform(0.01, 0.9), 4096)
            p = np.bincount(np.minimum(p, 255), minlength=256)[:k] + 1e-9
        elif shape == 1:
            p = rng.dirichlet(np.full(k, rng.uniform(0.05, 3)))
        elif shape == 2:
            p = np.ones(k)
        elif shape == 3:
            p = np.r_[1.0, np.full(k - 1, rng.uniform(0, 0.002))]
        elif shape == 4:
            p = rng.uniform(0.5, 1.5, k)
        else:
            p = np.zeros(k)
            p[int(rng.integers(0, k))] = 1
        p = np.r_[p / p.sum(), np.zeros(256 - k)]
        counts[i] = rng.multinomial(lens[i], rng.permutation(p) if i % 4 == 1 else p)
    hist = np.zeros((nb, 257), np.uint32)
    hist[:, :256] = counts
    for tl in (5, 8, 11, 12):
        for fse_kind in (C.FSE_REF, C.FSE_IL):
            want_plan, want_info, m2 = _host_plan(counts, lens, tl, fse_kind)
            plan = dev.alloc(4 * C.PLAN_WORDS * nb)
            info = dev.alloc(12 * nb)
            dev.write(plan, np.full(C.PLAN_WORDS * nb, 0xDEADBEEF, np.uint32).tobytes())
            dev.write(info, np.full(3 * nb, 0xDEADBEEF, np.uint32).tobytes())
            hbuf = dev.alloc(hist.nbytes)
            dev.write(hbuf, hist.tobytes())
            b = dev.batch()
            b.dispatch(dev.kernel("fse/norm.wgsl"), nb, params={
                "n_bytes": int(lens.sum()), "block_size": bs, "n_blocks": nb, "table_log": tl,
                "fse_kind": fse_kind}, hist=hbuf, plan=plan, info=info)
            rb = b.readback((plan, 0, 4 * C.PLAN_WORDS * nb), (info, 0, 12 * nb))
            b.submit()
            got_plan, got_info = rb.parts(np.uint32, np.uint32)
            np.testing.assert_array_equal(got_info.reshape(nb, 3), want_info)
            np.testing.assert_array_equal(got_plan.reshape(nb, -1), want_plan)
            if bs in (320, 960):
                assert m2 > 0, m2  # the fallback method was exercised
            assert len(set(want_info[:, 0].tolist())) > 1 or bs == 64


def test_table_input_errors():
    with pytest.raises(pp.InputError):
        fse.build_ctable([3, 3], 5)          # does not sum to 32
    with pytest.raises(pp.InputError):
        fse.build_dtable([16, 16], 13)       # table log too large
    with pytest.raises(pp.InputError):
        fse.normalize_counts([5, 0, 7], 4)
    with pytest.raises(pp.CorruptDataError):
        fse.read_ncount(b"\x0f")             # table log 20


# ----------------------------------------------------------------------------- GPU histogram
@pytest.mark.parametrize("n", [1, 3, 63, 64, 65, 4095, 4096, 4097, 100_001])
def test_histogram(rng, n):
    x = _skewed(rng, n) if n % 2 else rng.integers(0, 256, n, dtype=np.uint8)
    bs = 1024 if n > 5000 else 64
    np.testing.assert_array_equal(fse.histogram(x, block_size=bs), np.bincount(x, minlength=256))
    np.testing.assert_array_equal(fse.histogram(pp.asarray(x)), np.bincount(x, minlength=256))


@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_large_blocks_split_over_workgroups(rng, mode):
    """Blocks of 128 KiB / 1 MiB, few of them: hist.wgsl and gather.wgsl split each over several
    workgroups (counts and checksum sums added across them). Stored checksums against the host's
    block_checksum, histograms against numpy, payloads by round trip (outputs poisoned)."""
    bs = 128 << 10 if mode == "reference" else 1 << 20
    x = _mixed(rng, 3, bs, int(rng.integers(1, bs)))
    assert C._slices(len(x), bs, 4)["slices"] > 1
    blob = fse.compress(x, mode=mode, block_size=bs)
    _, e = fse.parse(blob)
    for i in range(len(e)):
        assert int(e["check"][i]) == fse.block_checksum(x[i * bs:(i + 1) * bs].tobytes(), i), i
    assert fse.decompress(blob) == x.tobytes()
    np.testing.assert_array_equal(fse.histogram(x, block_size=bs), np.bincount(x, minlength=256))


@needs_ref
def test_many_blocks_placed_on_the_gpu(rng):
    """Over 1024 blocks in one group: place.wgsl's scan takes several trips (1024 blocks a trip);
    every kind side by side, each reference block bit-exact with the reference, at its place."""
    bs = 64
    x = _mixed(rng, 1500, bs, 37)
    blob = fse.compress(x, mode="reference", block_size=bs, table_log=9)
    _, e = fse.parse(blob)
    assert len(e) == 1501 and len(set(e["kind"].tolist())) == 3
    for i, ent in enumerate(e):
        kind, ref = R.compress_block(x[i * bs:(i + 1) * bs].tobytes(), 9)
        assert int(ent["kind"]) == {0: C.RAW, 1: C.RLE, 2: C.FSE_REF}[kind], i
        if kind == 2:
            assert blob[int(ent["offset"]):int(ent["offset"]) + int(ent["csize"])] == ref, i
    assert fse.decompress(blob) == x.tobytes()
    blob = fse.compress(x, mode="interleaved", block_size=bs, lanes=32)
    assert fse.decompress(blob) == x.tobytes()


def test_histogram_errors():
    with pytest.raises(pp.InputError):
        fse.histogram(np.zeros(4, np.float32))
    with pytest.raises(pp.InputError):
        fse.histogram(np.zeros(4, np.uint8), block_size=100)


# ----------------------------------------------------------------------------- round trips
def _inputs(rng):
    src = Path(__file__).resolve().parents[1] / "pywgpuprims" / "fse" / "_codec.py"
    return {
        "empty": b"",
        "one": b"\x07",
        "two": b"\x01\x02",
        "three": b"aab",
        "single": b"\x42" * 70_001,
        "random": rng.integers(0, 256, 50_000, dtype=np.uint8).tobytes(),
        "skewed": _skewed(rng, 150_003).tobytes(),
        "text": src.read_bytes(),
        "sparse": _dist(rng, 40_000, 3, 0.3).tobytes(),
    }


@pytest.mark.parametrize("mode,bs,lanes", [("reference", 32 << 10, 256), ("reference", 4096, 256),
                                           ("interleaved", 64 << 10, 256), ("interleaved", 16 << 10, 32)])
def test_round_trip(rng, mode, bs, lanes):
    for name, data in _inputs(rng).items():
        blob = fse.compress(data, mode=mode, block_size=bs, lanes=lanes)
        assert fse.decompress(blob) == data, name
        if name in ("skewed", "text", "single"):
            assert len(blob) < 0.8 * len(data), name
        if name == "random":
            assert len(blob) < len(data) + 64 + 20 * (len(data) // bs + 1), name


@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_block_boundaries_and_table_logs(rng, mode):
    bs = 1024
    for n in (bs - 1, bs, bs + 1, 3 * bs - 4, 3 * bs + 3):
        for tl in (5, 8, 12):
            x = _skewed(rng, n)
            blob = fse.compress(x, mode=mode, block_size=bs, table_log=tl, lanes=32)
            assert fse.decompress(blob) == x.tobytes(), (n, tl)


def test_reference_mixed_blocks_across_workgroups(rng):
    # reference decoding runs 32 blocks per workgroup, one per invocation: FSE, raw and
    # single-symbol blocks side by side, tables of different logs, a partial last workgroup
    bs = 1024
    kinds = [lambda: _skewed(rng, bs), lambda: np.full(bs, 9, np.uint8),
             lambda: rng.integers(0, 256, bs, dtype=np.uint8), lambda: _dist(rng, bs, 3, 0.3)]
    parts = [kinds[int(k)]() for k in rng.integers(0, 4, 75)]
    data = np.concatenate(parts + [_skewed(rng, 333)]).tobytes()
    blob = fse.compress(data, mode="reference", block_size=bs)
    assert fse.decompress(blob) == data
    assert blob == fse.compress(np.frombuffer(data, np.uint8), mode="reference", block_size=bs)


@pytest.mark.parametrize("lanes", [32, 256])
def test_interleaved_short_blocks(rng, lanes):
    """Blocks with fewer words than lanes (idle lanes, empty streams) and partial last words."""
    for n in (4096 + 301, 4096 + 702, 4096 + 1023, 300, 257):
        x = _dist(rng, n, 5, 1.0)
        blob = fse.compress(x, mode="interleaved", block_size=4096, lanes=lanes)
        _, e = fse.parse(blob)
        if lanes == 32:  # with 256 lanes the u16 length table alone outweighs a few hundred bytes
            assert int(e[-1]["kind"]) == C.FSE_IL
        assert fse.decompress(blob) == x.tobytes()


def test_gpuarray_input(rng):
    x = _skewed(rng, 20_000)
    g = pp.asarray(x)
    assert fse.compress(g) == fse.compress(x)
    assert fse.decompress(fse.compress(g, mode="interleaved", block_size=4096, lanes=64)) == x.tobytes()


def test_compress_input_errors():
    with pytest.raises(pp.InputError):
        fse.compress(np.zeros(8, np.int32))
    with pytest.raises(pp.InputError):
        fse.compress(b"abc", table_log=13)
    with pytest.raises(pp.InputError):
        fse.compress(b"abc", mode="fast")
    with pytest.raises(pp.InputError):
        fse.compress(b"abc", block_size=1000)
    with pytest.raises(pp.InputError):
        fse.compress(b"abc", block_size=256 << 10)          # reference blocks <= 128 KiB
    with pytest.raises(pp.InputError):
        fse.compress(b"abc", mode="interleaved", lanes=48)


# ----------------------------------------------------------------------------- bit-exactness
@needs_ref
@pytest.mark.parametrize("tl", [11, 12, 6])
def test_blocks_bit_exact_with_reference(rng, tl):
    bs = 16 << 10
    parts = [_skewed(rng, 3 * bs), np.full(bs, 9, np.uint8), _dist(rng, bs, 200, 0.05), _dist(rng, bs, 40, 5.0),
             rng.integers(0, 256, bs, dtype=np.uint8), _dist(rng, 777, 3, 1.0), _dist(rng, 2500, 256, 30.0)]
    x = np.concatenate(parts)
    blob = fse.compress(x, block_size=bs, table_log=tl)
    _, e = fse.parse(blob)
    seen = set()
    for i, ent in enumerate(e):
        block = x[i * bs:(i + 1) * bs].tobytes()
        kind, ref = R.compress_block(block, tl)
        seen.add(kind)
        assert int(ent["kind"]) == {0: C.RAW, 1: C.RLE, 2: C.FSE_REF}[kind], i
        ours = blob[int(ent["offset"]):int(ent["offset"]) + int(ent["csize"])]
        if kind == 2:
            assert ours == ref, f"block {i} differs from the reference"
            assert R.decompress_block(ours, len(block)) == block
    assert seen == {0, 1, 2}


@needs_ref
def test_largest_reference_blocks(rng):
    """128 KiB blocks at table log 12: the longest per-invocation loops (lavapipe's trip cap)."""
    bs = 128 << 10
    x = np.concatenate([_skewed(rng, bs), _dist(rng, bs + 5000, 256, 0.3)])
    blob = fse.compress(x, block_size=bs, table_log=12)
    _, e = fse.parse(blob)
    for i, ent in enumerate(e):
        kind, ref = R.compress_block(x[i * bs:(i + 1) * bs].tobytes(), 12)
        assert kind == 2
        assert blob[int(ent["offset"]):int(ent["offset"]) + int(ent["csize"])] == ref
    assert fse.decompress(blob) == x.tobytes()


def test_longest_interleaved_lanes(rng):
    """32 lanes over a 1 MiB block: 8192 words a lane, the most allowed (lavapipe's trip cap)."""
    x = _skewed(rng, (1 << 20) + 999)
    blob = fse.compress(x, mode="interleaved", block_size=1 << 20, lanes=32, table_log=12)
    assert int(fse.parse(blob)[1][0]["kind"]) == C.FSE_IL
    assert fse.decompress(blob) == x.tobytes()
    with pytest.raises(pp.InputError):
        fse.compress(x, mode="interleaved", block_size=2 << 20, lanes=32)


@needs_ref
def test_we_decode_reference_blocks(rng):
    """A container assembled from the reference compressor's own blocks decodes here."""
    bs = 8192
    x = np.concatenate([_skewed(rng, 5 * bs + 100), _dist(rng, bs, 60, 0.2)])
    nb = -(-len(x) // bs)
    entries = np.zeros(nb, C.ENTRY)
    off = C.HEADER.size + C.ENTRY.itemsize * nb
    payload = b""
    for i in range(nb):
        block = x[i * bs:(i + 1) * bs].tobytes()
        kind, ref = R.compress_block(block, 11)
        data = {0: block, 1: block[:1], 2: ref}[kind]
        entries[i] = (off + len(payload), len(data), {0: C.RAW, 1: C.RLE, 2: C.FSE_REF}[kind],
                      C.block_checksum(block, i))
        payload += data + b"\0" * (-len(data) % 4)
    head = C.HEADER.pack(C.MAGIC, C.VERSION, 0, 11, 0, 0, 0, bs, len(x), nb, 0)[:-4]
    table = entries.tobytes()
    blob = head + struct.pack("<I", zlib.crc32(table, zlib.crc32(head))) + table + payload
    assert fse.decompress(blob) == x.tobytes()


# ----------------------------------------------------------------------------- corrupt input
def _resign(blob: bytes, entries=None) -> bytes:
    """Rewrite the header checksum (so that tampering reaches the block checks)."""
    h = bytearray(blob)
    nb = struct.unpack_from("<I", h, 24)[0]
    if entries is not None:
        h[32:32 + 20 * nb] = entries.tobytes()
    tend = 32 + 20 * nb
    struct.pack_into("<I", h, 28, zlib.crc32(bytes(h[32:tend]), zlib.crc32(bytes(h[:28]))))
    return bytes(h)


@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_truncated_and_flipped(rng, mode):
    x = _skewed(rng, 20_000)
    blob = fse.compress(x, mode=mode, block_size=4096, lanes=32)
    for cut in sorted({0, 3, 31, 32, 40, len(blob) // 2, len(blob) - 1}):
        with pytest.raises(pp.CorruptDataError):
            fse.decompress(blob[:cut])
    for _ in range(12):
        bad = bytearray(blob)
        pos = int(rng.integers(0, len(blob)))
        bad[pos] ^= 1 << int(rng.integers(0, 8))
        try:
            out = fse.decompress(bytes(bad))
        except pp.CorruptDataError:
            continue
        assert out == x.tobytes()          # a flip in inter-block padding is harmless


@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_hostile_blocks(rng, mode):
    """Tampered payloads behind a valid header checksum: the kernels must report, not crash."""
    x = _skewed(rng, 12_000)
    blob = fse.compress(x, mode=mode, block_size=4096, lanes=32)
    _, e = fse.parse(blob)
    o = int(e[1]["offset"])
    cases = []
    b = bytearray(blob)
    b[o] = (b[o] & 0xF0) | 0x0F                       # table log 20
    cases.append(bytes(b))
    b = bytearray(blob)
    b[o + 1] ^= 0xFF                                  # counts that do not sum
    cases.append(bytes(b))
    b = bytearray(blob)
    b[o:int(e[1]["offset"]) + int(e[1]["csize"])] = bytes(int(e[1]["csize"]))   # zeroed payload
    cases.append(bytes(b))
    b = bytearray(blob)
    for k in range(o + 8, o + int(e[1]["csize"]), 7):
        b[k] = int(rng.integers(0, 256))              # garbage stream
    cases.append(bytes(b))
    for case in cases:
        with pytest.raises(pp.CorruptDataError):
            fse.decompress(case)
    for field, value in (("offset", 10 ** 9), ("offset", 2), ("csize", 10 ** 8), ("kind", 7), ("csize", 0)):
        ee = e.copy()
        ee[1][field] = value
        with pytest.raises(pp.CorruptDataError):
            fse.decompress(_resign(blob, ee))
    ee = e.copy()
    ee[2]["offset"] = ee[0]["offset"]                 # points at another block: checksum catches it
    with pytest.raises(pp.CorruptDataError):
        fse.decompress(_resign(blob, ee))
    hb = bytearray(blob)
    hb[6] = 13                                        # container table log out of range
    with pytest.raises(pp.CorruptDataError):
        fse.decompress(_resign(bytes(hb)))
    hb = bytearray(blob)
    hb[12:16] = struct.pack("<I", 100)                # block size not a multiple of 64
    with pytest.raises(pp.CorruptDataError):
        fse.decompress(_resign(bytes(hb)))
    with pytest.raises(pp.CorruptDataError):
        fse.decompress(b"XXXX" + blob[4:])


# ----------------------------------------------------------------------------- command line, defaults
def test_command_line(tmp_path, rng):
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    src = tmp_path / "in.bin"
    data = _skewed(rng, 30_000).tobytes() + (Path(__file__).read_bytes())
    src.write_bytes(data)
    for mode in ("reference", "interleaved"):
        r = subprocess.run([sys.executable, "-m", "pywgpuprims.fse", "compress", str(src), str(tmp_path / "c"),
                            "--mode", mode, "--block-size", "8192", "--lanes", "64", "--force"],
                           capture_output=True, text=True, check=True)
        assert "ratio" in r.stdout and "GB/s" in r.stdout
        subprocess.run([sys.executable, "-m", "pywgpuprims.fse", "decompress", str(tmp_path / "c"),
                        str(tmp_path / "d"), "--force"], capture_output=True, text=True, check=True)
        assert (tmp_path / "d").read_bytes() == data
    r = subprocess.run([sys.executable, "-m", "pywgpuprims.fse", "decompress", str(src), str(tmp_path / "e")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "not an FSE container" in r.stderr


@pytest.mark.parametrize("lanes", [64, 128])
def test_default_block_sizes(rng, lanes):
    x = np.concatenate([_skewed(rng, 300_000), rng.integers(0, 256, 40_000, dtype=np.uint8)])
    for mode in ("reference", "interleaved"):
        blob = fse.compress(x, mode=mode, lanes=lanes)
        assert fse.decompress(blob) == x.tobytes()
        assert len(blob) < 0.75 * len(x)


@pytest.mark.slow
@needs_ref
def test_stress_large(rng):
    """Many default-size blocks: every reference block bit-exact, both modes round-trip."""
    x = np.concatenate([_skewed(rng, 6 << 20), _dist(rng, 2 << 20, 30, 0.3)])
    for mode in ("reference", "interleaved"):
        blob = fse.compress(x, mode=mode)
        assert fse.decompress(blob) == x.tobytes()
    _, e = fse.parse(blob := fse.compress(x))
    bs = 32 << 10
    for i in range(0, len(e), 7):
        kind, ref = R.compress_block(x[i * bs:(i + 1) * bs].tobytes(), 11)
        if kind == 2:
            assert blob[int(e[i]["offset"]):int(e[i]["offset"]) + int(e[i]["csize"])] == ref


@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_garbage_payloads(rng, mode):
    """Random bytes in place of every FSE payload (valid table): always CorruptDataError."""
    x = _skewed(rng, 40_000)
    blob = fse.compress(x, mode=mode, block_size=8192, lanes=32)
    _, e = fse.parse(blob)
    for trial in range(6):
        bad = bytearray(blob)
        for ent in e:
            o, n = int(ent["offset"]), int(ent["csize"])
            if trial % 2:
                bad[o:o + n] = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            else:   # keep the count header, scramble the streams
                k = n // 3
                bad[o + k:o + n] = rng.integers(0, 256, n - k, dtype=np.uint8).tobytes()
        with pytest.raises(pp.CorruptDataError):
            fse.decompress(bytes(bad))


# ----------------------------------------------------------------------------- chunks and transfers
def _mixed(rng, n_blocks, bs, tail):
    """Blocks of every kind side by side: skewed (FSE), single-symbol (RLE), random (raw,
    incompressible), few-symbol; then a partial last block of ``tail`` bytes (0: none)."""
    kinds = [lambda m: _skewed(rng, m), lambda m: np.full(m, int(rng.integers(0, 256)), np.uint8),
             lambda m: rng.integers(0, 256, m, dtype=np.uint8), lambda m: _dist(rng, m, 3, 0.3)]
    parts = [kinds[int(k)](bs) for k in rng.integers(0, 4, n_blocks)]
    if tail:
        parts.append(kinds[int(rng.integers(0, 4))](tail))
    return np.concatenate(parts) if parts else np.zeros(0, np.uint8)


@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_chunked_past_binding(rng, mode):
    """A binding limit of a few blocks: compress and decompress work by groups of blocks, with the
    same container as one chunk; block counts around the chunk boundaries, a partial last block."""
    bs = 1024
    dev = pp.device()
    per = {"reference": 5 * 1024, "interleaved": 4 * (C.HDR_WORDS + 32 + 32 * C._lane_cap(bs, 32, 11))}[mode]
    limit = 3 * per + 100   # compress: 3 blocks a chunk; decompress: about 3 (interleaved) or 1 (tables)
    for nblocks, tail in ((2, 0), (3, 0), (3, 77), (4, 0), (6, 1), (7, 1023), (13, 64)):
        x = _mixed(rng, nblocks, bs, tail)
        want = fse.compress(x, mode=mode, block_size=bs, lanes=32)
        with dev.using(max_binding=limit):
            assert C._chunk_blocks(dev, bs, per, 100) < nblocks + (tail > 0) or nblocks < 4
            got = fse.compress(x, mode=mode, block_size=bs, lanes=32)
            assert got == want, (nblocks, tail)
            assert fse.compress(pp.asarray(x), mode=mode, block_size=bs, lanes=32) == want
            assert fse.decompress(got) == x.tobytes()
            _, e = fse.parse(got)
            coded = np.flatnonzero(e["kind"] != C.RLE)
            # a flip in the first group (the next one is in flight: its mapping is dropped) and a late one
            for i in sorted({int(coded[0]), int(coded[-1])} if len(coded) else ()):  # (all single-symbol: none)
                bad = bytearray(got)
                o, cs = int(e[i]["offset"]), int(e[i]["csize"])
                bad[o + cs // 2:o + cs] = bytes(v ^ 0xFF for v in bad[o + cs // 2:o + cs])  # (one flipped bit
                # may decode to the same bytes: tANS states can resynchronise)
                with pytest.raises(pp.CorruptDataError, match=f"block {i}"):
                    fse.decompress(bytes(bad))
                assert fse.decompress(got) == x.tobytes()  # nothing left mapped or pending
        assert fse.decompress(got) == x.tobytes()


def test_chunked_odd_limits(rng):
    """Limits that are not multiples of anything: chunks still start aligned and cover every block."""
    dev = pp.device()
    x = _mixed(rng, 9, 4096, 555)
    for mode in ("reference", "interleaved"):
        want = fse.compress(x, mode=mode, block_size=4096, lanes=64)
        for limit in (5 * 4096 + 3, 4096 * 16 + 1, 200_001):
            with dev.using(max_binding=limit):
                assert fse.compress(x, mode=mode, block_size=4096, lanes=64) == want
                assert fse.decompress(want) == x.tobytes()


@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_staged_downloads(rng, mode, monkeypatch):
    """Payloads and outputs too large for the one-shot readback take the download path (forced by
    a tiny ``one_shot`` / ``one_shot_counted``: compress reads the record first, then downloads
    the payloads): same containers, same bytes."""
    import dataclasses
    x = _mixed(rng, 11, 4096, 999)
    want = fse.compress(x, mode=mode, block_size=4096, lanes=32)
    dev = pp.device()
    monkeypatch.setattr(dev, "transfer", dataclasses.replace(dev.transfer, one_shot=64, one_shot_counted=64))
    assert fse.compress(x, mode=mode, block_size=4096, lanes=32) == want
    with dev.using(max_binding=3 * 4096 * 6):
        assert fse.compress(x, mode=mode, block_size=4096, lanes=32) == want
        assert fse.decompress(want) == x.tobytes()
    assert fse.decompress(want) == x.tobytes()


def test_block_kinds_and_result_types(rng):
    """Incompressible and single-symbol inputs, bytes-like inputs of every kind; compress returns
    bytes, decompress a bytearray, and neither depends on the input's type."""
    for x in (rng.integers(0, 256, 10_000, dtype=np.uint8), np.full(10_000, 7, np.uint8),
              np.full(1, 200, np.uint8), np.array([1, 2], np.uint8)):
        for mode in ("reference", "interleaved"):
            blob = fse.compress(x, mode=mode, block_size=4096, lanes=32)
            assert type(blob) is bytes
            _, e = fse.parse(blob)
            want_kind = C.RLE if len(set(x.tolist())) == 1 and x.size > 1 else C.RAW
            assert set(e["kind"].tolist()) == {want_kind}
            for src in (blob, bytearray(blob), memoryview(blob), np.frombuffer(blob, np.uint8)[::1].data):
                out = fse.decompress(src)
                assert type(out) is bytearray and out == x.tobytes()
            assert fse.compress(bytearray(x.tobytes()), mode=mode, block_size=4096, lanes=32) == blob
            assert fse.compress(memoryview(x.tobytes()), mode=mode, block_size=4096, lanes=32) == blob
