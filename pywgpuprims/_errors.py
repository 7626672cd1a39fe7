"""Exceptions raised by pywgpuprims.

Every error names the primitive that raised it and the cause, so that a failing call in a chain
of primitives can be traced without a debugger.
"""

from __future__ import annotations


class PrimitiveError(Exception):
    """Base class: something went wrong in a pywgpuprims primitive."""

    def __init__(self, primitive: str, message: str):
        self.primitive = primitive
        super().__init__(f"{primitive}: {message}")


class InputError(PrimitiveError, ValueError):
    """Bad input: wrong dtype, shape, value or size."""


class DeviceLimitError(PrimitiveError, ValueError):
    """The input is too large for the device's limits."""


class ShaderError(PrimitiveError, RuntimeError):
    """A WGSL kernel failed to compile or validate, or the device was lost."""


class CorruptDataError(PrimitiveError, ValueError):
    """Compressed or encoded data is malformed."""
