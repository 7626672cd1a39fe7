"""Defects from issue 39 (item 6), each with a test that failed before its fix."""

import struct
import zlib

import numpy as np
import pytest
import scipy.ndimage as ndi

import pywgpuprims as pp
from pywgpuprims import fse
from pywgpuprims.fse import _codec as C


# ----------------------------------------------------------------------------- rle_decode
def test_rle_decode_counts_that_wrap_64_bits():
    with pytest.raises(pp.InputError, match="rle_decode.*overflow"):
        pp.rle_decode(np.array([7, 2, 9, 4, 1], np.int32), np.array([2**62] * 4 + [5], np.int64))
    with pytest.raises(pp.InputError, match="rle_decode"):
        pp.rle_decode(np.array([1, 2], np.int32), np.array([2**64 - 1, 2], np.uint64))
    with pytest.raises(pp.InputError, match="rle_decode"):
        pp.rle_decode(np.array([1, 2], np.int32), np.array([2**32 - 1, 1], np.int64))


def test_rle_decode_large_counts_still_exact(rng):
    v = rng.integers(-9, 9, 6).astype(np.int32)
    c = rng.integers(0, 50_000, 6)
    assert np.array_equal(pp.rle_decode(v, c), np.repeat(v, c))


# ----------------------------------------------------------------------------- box_filter
@pytest.mark.parametrize("shape", [(3, 3), (5, 7), (1, 9), (4, 1)])
def test_box_filter_constant_radius_past_the_image(rng, shape):
    assert pp.box_filter(np.full((3, 3), 9, np.float32), 4, "constant")[1, 1] == pytest.approx(1.0, rel=1e-6)
    x = rng.random(shape, dtype=np.float32)
    for r in (max(shape) - 1, max(shape), max(shape) + 3, 50):
        want = ndi.uniform_filter(x.astype(np.float64), 2 * r + 1, mode="constant")
        np.testing.assert_allclose(pp.box_filter(x, r, "constant"), want, rtol=1e-5, atol=1e-7)
    with pytest.raises(pp.InputError, match="box_filter.*radius"):
        pp.box_filter(x, 1 << 40)


# ----------------------------------------------------------------------------- FSE
def _bomb(size: int, bs: int = 4 << 20) -> bytes:
    """A valid interleaved container of single-symbol blocks that claims ``size`` bytes."""
    nb = -(-size // bs)
    e = np.zeros(nb, C.ENTRY)
    off = C.HEADER.size + C.ENTRY.itemsize * nb
    e["offset"] = off + 4 * np.arange(nb)
    e["csize"] = 1
    e["kind"] = C.RLE
    head = C.HEADER.pack(C.MAGIC, C.VERSION, 1, 11, 0, 256, 0, bs, size, nb, 0)[:-4]
    table = e.tobytes()
    return head + struct.pack("<I", zlib.crc32(table, zlib.crc32(head))) + table + bytes(4 * nb)


def test_fse_decompress_refuses_huge_claims():
    blob = _bomb(8 << 30)
    assert len(blob) < 60_000
    fse.parse(blob)  # well formed
    with pytest.raises(pp.InputError, match="fse.decompress.*max_output_size"):
        fse.decompress(blob)
    with pytest.raises(pp.InputError, match="max_output_size"):
        fse.decompress(_bomb(100_000), max_output_size=99_999)
    with pytest.raises(pp.InputError, match="max_output_size"):
        fse.decompress(_bomb(100_000), max_output_size=-1)
    small = _bomb(5000, bs=4096)  # the checksums are wrong (zero): caught after decoding
    with pytest.raises(pp.CorruptDataError, match="checksum"):
        fse.decompress(small, max_output_size=5000)


def test_fse_decompress_returns_the_buffer_it_filled(rng):
    x = rng.geometric(0.3, 70_000).astype(np.uint8)
    out = fse.decompress(fse.compress(x, block_size=8192))
    assert isinstance(out, bytearray) and out == x.tobytes()


def _swap_blocks(blob: bytes, i: int, j: int) -> bytes:
    """Swap blocks i and j's table entries and re-sign the header, as a forger would."""
    nb = struct.unpack_from("<I", blob, 24)[0]
    e = np.frombuffer(blob, C.ENTRY, nb, C.HEADER.size).copy()
    e[[i, j]] = e[[j, i]]
    h = bytearray(blob)
    h[32:32 + 20 * nb] = e.tobytes()
    struct.pack_into("<I", h, 28, zlib.crc32(bytes(h[32:32 + 20 * nb]), zlib.crc32(bytes(h[:28]))))
    return bytes(h)


@pytest.mark.parametrize("mode", ["reference", "interleaved"])
def test_fse_reordered_blocks_are_detected(rng, mode):
    bs = 4096
    x = rng.geometric(0.25, 5 * bs).astype(np.uint8)  # whole blocks: any two can trade places
    blob = fse.compress(x, block_size=bs, mode=mode, lanes=32)
    assert fse.decompress(blob) == x.tobytes()
    with pytest.raises(pp.CorruptDataError, match="block 1: checksum"):
        fse.decompress(_swap_blocks(blob, 1, 3))
    # the checksum stored is block_checksum(block, index)
    _, e = fse.parse(blob)
    for i in range(5):
        assert int(e[i]["check"]) == fse.block_checksum(x[i * bs:(i + 1) * bs].tobytes(), i)


def test_fse_version_1_containers_still_read(rng):
    bs = 4096
    x = rng.geometric(0.25, 3 * bs + 77).astype(np.uint8)
    blob = bytearray(fse.compress(x, block_size=bs))
    nb = 4
    e = np.frombuffer(bytes(blob), C.ENTRY, nb, C.HEADER.size).copy()
    e["check"] = [fse.block_checksum(x[i * bs:(i + 1) * bs].tobytes()) for i in range(nb)]
    blob[4] = 1
    blob[32:32 + 20 * nb] = e.tobytes()
    struct.pack_into("<I", blob, 28, zlib.crc32(bytes(blob[32:32 + 20 * nb]), zlib.crc32(bytes(blob[:28]))))
    assert fse.decompress(bytes(blob)) == x.tobytes()
    blob[4] = 3
    struct.pack_into("<I", blob, 28, zlib.crc32(bytes(blob[32:32 + 20 * nb]), zlib.crc32(bytes(blob[:28]))))
    with pytest.raises(pp.CorruptDataError, match="version 3"):
        fse.decompress(bytes(blob))


@pytest.mark.parametrize("kw", [{"lanes": 64.0}, {"lanes": "64"}, {"table_log": 11.0}, {"block_size": 4096.0},
                                {"lanes": True}, {"mode": None}, {"mode": ["reference"]}])
def test_fse_compress_argument_types(kw):
    with pytest.raises(pp.InputError, match="fse.compress"):
        fse.compress(b"abc" * 1000, **{"mode": "interleaved", **kw})


# ----------------------------------------------------------------------------- the library's own errors
def test_correlate_out_numpy_and_messages(rng, monkeypatch):
    x = rng.standard_normal((9, 11)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3)).astype(np.float32)
    buf = np.empty((2, 7, 9), np.float32)
    assert pp.correlate(x, w, output_shape="valid", out=buf) is buf
    np.testing.assert_allclose(buf, pp.correlate(x, w, output_shape="valid"), rtol=1e-6)
    with pytest.raises(pp.InputError, match="correlate.*out"):
        pp.correlate(x, w, output_shape="valid", out=np.empty((2, 7, 9), np.float64))
    with pytest.raises(pp.InputError, match="correlate.*out"):
        pp.correlate(x, w, out=[1, 2])
    dev = pp.device()
    monkeypatch.setattr(dev, "max_binding", 1 << 12)
    x = rng.standard_normal((64, 64)).astype(np.float32)  # a plane past the binding: bands of rows
    np.testing.assert_allclose(pp.correlate(x, w[:1])[0], ndi.correlate(x.astype(np.float64), w[0], mode="reflect"),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(pp.DeviceLimitError, match="correlate.*storage binding"):
        pp.correlate(rng.standard_normal((4, 1100)).astype(np.float32), w[:1])  # one row and its overlap do not fit


@pytest.mark.parametrize("call", [
    lambda x: pp.summed_area_table(x),
    lambda x: pp.box_filter(x, 2),
    lambda x: pp.box_filter(x.astype(np.uint8), 2, "reflect"),
    lambda x: pp.gaussian_filter(x, 2.0),
    lambda x: pp.recursive_filter(x, 0.5, [-0.5]),
    lambda x: pp.bspline_prefilter(x),
])
def test_binding_limit_names_the_function(call, monkeypatch):
    dev = pp.device()
    monkeypatch.setattr(dev, "max_binding", 1 << 14)
    call(np.ones((300, 30), np.float32))  # past the binding: bands of rows
    with pytest.raises(pp.DeviceLimitError) as ei:
        call(np.ones((3, 5000), np.float32))  # one row does not fit a band
    msg = str(ei.value)
    assert ".wgsl" not in msg and "binding '" not in msg
    assert ei.value.primitive in ("summed_area_table", "box_filter", "gaussian_filter", "recursive_filter",
                                  "bspline_prefilter")


def test_recursive_filter_coefficients_past_float32():
    x = np.ones((4, 4), np.float32)
    with pytest.raises(pp.InputError, match="recursive_filter.*float32"):
        pp.recursive_filter(x, 1e39, [-0.5])
    with pytest.raises(pp.InputError, match="recursive_filter"):
        pp.recursive_filter(x, "1", [-0.5])


def test_fse_stream_containers_keep_block_places(rng):
    """pywgpuprims.stream joins and splits containers: the checksums follow the blocks' places."""
    bs = 4096
    x = rng.geometric(0.25, 9 * bs + 100).astype(np.uint8)
    blob = pp.stream.fse_compress(x, chunk=2 * bs, block_size=bs)
    assert blob == fse.compress(x, block_size=bs)
    assert bytes(pp.stream.fse_decompress(blob, chunk=3 * bs)) == x.tobytes()
    with pytest.raises(pp.CorruptDataError, match="checksum"):
        pp.stream.fse_decompress(_swap_blocks(blob, 4, 6), chunk=3 * bs)
