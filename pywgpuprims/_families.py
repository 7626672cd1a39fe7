"""Imports every primitive family so that their benchmark entries register (see ``_bench.py``)."""

from . import conv, copy  # noqa: F401
