"""One lock per process for the integrations that call primitives from several threads (Dask's
threaded scheduler and workers, zarr's codec pipeline): one process drives one device, and the
threads take turns on it."""

from __future__ import annotations

import threading

GPU_LOCK = threading.RLock()


def serial(fn, /, *args, **kwargs):
    """``fn(*args, **kwargs)`` under :data:`GPU_LOCK`."""
    with GPU_LOCK:
        return fn(*args, **kwargs)
