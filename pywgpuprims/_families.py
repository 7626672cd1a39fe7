"""Imports every primitive family so that their benchmark entries register (see ``_bench.py``)."""

from . import copy  # noqa: F401
from . import conv  # noqa: F401
