"""Imports every primitive family so that their benchmark entries register (see ``_bench.py``)."""

from . import (
    _scene_bench,  # noqa: F401
    conv,  # noqa: F401
    copy,  # noqa: F401
    recfilter,  # noqa: F401
    rle,  # noqa: F401
    sat,  # noqa: F401
    scan,  # noqa: F401
    stack,  # noqa: F401
)
from .fse import _bench_entry  # noqa: F401
