"""pywgpuprims: vendor-neutral GPU parallel primitives in WGSL, run from numpy through wgpu-py.

Every primitive takes numpy arrays or :class:`GpuArray`: numpy in gives numpy out, GpuArray in
gives GpuArray out, so chains of primitives stay on the GPU.
"""

from . import (
    fse,  # FSE/tANS codec: pywgpuprims.fse.compress / decompress
    scene,  # clipped 2-D scenes: pywgpuprims.scene.Scene, load_svg
    stream,  # out-of-core: pywgpuprims.stream.scan / reduce / compact / nonzero / rle_encode / fse_*
)
from ._array import GpuArray, asarray
from ._device import Device, device, devices, set_device, use_device
from ._errors import CorruptDataError, DeviceLimitError, InputError, PrimitiveError, ShaderError
from .compaction import Compacted, RunLengths, compact, flatnonzero, nonzero, rle_decode, rle_encode
from .conv import correlate
from .recfilter import bspline_prefilter, gaussian_filter, recursive_filter
from .sat import box_filter, summed_area_table
from .scan import count_nonzero, cumsum, reduce, scan
from .stack import (
    CLIP_BEGIN,
    CLIP_DRAW,
    CLIP_END,
    BracketInfo,
    bracket_match,
    bracket_match_reference,
    clip_bboxes,
    clip_bboxes_reference,
    is_empty,
    unclosed_opens,
)

__version__ = "0.1.0"

__all__ = [
    "CorruptDataError", "Device", "DeviceLimitError", "GpuArray", "InputError", "PrimitiveError",
    "ShaderError", "asarray", "correlate", "count_nonzero", "cumsum", "device", "devices", "fse", "reduce", "scan",
    "scene", "set_device", "stream", "use_device",
    "Compacted", "RunLengths", "compact", "flatnonzero", "nonzero", "rle_decode", "rle_encode",
    "box_filter", "bspline_prefilter", "gaussian_filter", "recursive_filter", "summed_area_table",
    "CLIP_BEGIN", "CLIP_DRAW", "CLIP_END", "BracketInfo", "bracket_match", "bracket_match_reference",
    "clip_bboxes", "clip_bboxes_reference", "is_empty", "unclosed_opens",
]
