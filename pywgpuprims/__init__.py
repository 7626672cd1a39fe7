"""pywgpuprims: vendor-neutral GPU parallel primitives in WGSL, run from numpy through wgpu-py.

Every primitive takes numpy arrays or :class:`GpuArray`: numpy in gives numpy out, GpuArray in
gives GpuArray out, so chains of primitives stay on the GPU.
"""

from ._array import GpuArray, asarray
from ._device import Device, device, set_device
from ._errors import CorruptDataError, DeviceLimitError, InputError, PrimitiveError, ShaderError
from .conv import correlate

__version__ = "0.1.0"

__all__ = [
    "CorruptDataError", "Device", "DeviceLimitError", "GpuArray", "InputError", "PrimitiveError",
    "ShaderError", "asarray", "correlate", "device", "set_device",
]
