"""Imports every primitive family so that their benchmark entries register (see ``_bench.py``)."""

from . import copy  # noqa: F401
from .fse import _bench_entry  # noqa: F401
