"""Device copy: the bandwidth yardstick every benchmark is measured against."""

from __future__ import annotations

import numpy as np

from ._array import GpuArray, as_input
from ._device import Device


def copy(x) -> np.ndarray | GpuArray:
    """Copy an array on the GPU (numpy in, numpy out; GpuArray in, new GpuArray out).

    Examples
    --------
    >>> import numpy as np
    >>> from pywgpuprims.device_copy import copy
    >>> copy(np.arange(3, dtype=np.int32))
    array([0, 1, 2], dtype=int32)
    """
    g, host = as_input(x, "copy")
    out = GpuArray.empty(g.shape, g.dtype, g.device)
    n_vec4 = (g.nbytes + 15) // 16
    if n_vec4:
        copy_pass(g.device, g, out, n_vec4, copy=True)
    return out.numpy() if host is not None else out


def copy_pass(dev: Device, src, dst, n_vec4: int, copy: bool = True, wg: int = 256, vpt: int = 4,
              times: int = 1) -> None:
    """Record and submit the baseline copy (or read-only) kernel over ``n_vec4`` vec4 words,
    ``times`` dispatches in one batch."""
    k = dev.kernel("bench/copy.wgsl", defines={"COPY": copy, "WG": wg, "VECS_PER_THREAD": vpt})
    groups = -(-n_vec4 // (wg * vpt))
    b = dev.batch()
    for _ in range(times):
        b.dispatch(k, groups, params={"n_vec4": n_vec4, "n_groups": groups}, src=src, **(
            {"dst": dst} if copy else {"partials": dst}))
    b.submit()
