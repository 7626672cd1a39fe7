"""Benchmarks of pywgpuprims: the harness, one entry file per primitive family, the end-to-end run.

``python -m pywgpuprims.bench [primitive ...] [--sizes ...] [--json F] [--plot F.png]`` times the
registered entries (``__main__.py``); ``python -m pywgpuprims.bench --e2e [args ...]`` runs the
end-to-end wall-time benchmark (``e2e.py``). ``import pywgpuprims`` imports none of this package;
the entry files import the primitives, never the other way round.

Entry files: ``yardstick.py`` (copy), ``scan.py`` (scan, reduce), ``compaction.py`` (rle, compact), ``stack.py``
(bracket_match), ``sat.py``, ``recfilter.py`` (recursive_filter), ``conv.py`` (correlate),
``fse.py``, ``scene.py``. Modules run on their own: ``python -m pywgpuprims.bench.svg`` (SVG files and the
10^5-path scene to numpy pixels beside resvg-py, skia-python and vello), ``python -m pywgpuprims.bench.scale``
(Dask on several GPUs, the zarr codecs).
"""

from ._harness import (
    REGISTRY,
    BenchContext,
    benchmark,
    copy_pass,
    cuda_module,
    median_cuda_ns,
    median_gpu_ns,
    median_replayed_ns,
    median_wall_ns,
    raise_gpu_clock,
    rle_traffic_pass,
)

__all__ = ["REGISTRY", "BenchContext", "benchmark", "copy_pass", "cuda_module", "median_cuda_ns", "median_gpu_ns",
           "median_replayed_ns", "median_wall_ns", "raise_gpu_clock", "rle_traffic_pass"]
