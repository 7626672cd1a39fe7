"""FSE (finite-state entropy, tANS) compression on the GPU.

``compress(data, mode="reference")`` writes blocks that are byte-identical to what the reference
FSE block compressor (Collet's FiniteStateEntropy; zstd's FSE functions chained the same way)
produces for each block, so the reference decoder decodes them; ``mode="interleaved"`` codes many
states per block in lockstep, for speed. Both live in one container, described in
``docs/fse-format.md``. ``decompress`` reads either.

Building blocks: :func:`histogram` (GPU), :func:`normalize_counts`, :func:`write_ncount`,
:func:`read_ncount`, :func:`build_ctable`, :func:`build_dtable`, :func:`optimal_table_log`.

Command line: ``python -m pywgpuprims.fse compress|decompress IN OUT``.
"""

from ._codec import block_checksum, compress, decompress, histogram, parse
from ._tables import (
                      CTable,
                      DTable,
                      build_ctable,
                      build_dtable,
                      normalize_counts,
                      optimal_table_log,
                      read_ncount,
                      write_ncount,
)

__all__ = ["CTable", "DTable", "block_checksum", "build_ctable", "build_dtable", "compress", "decompress",
           "histogram", "normalize_counts", "optimal_table_log", "parse", "read_ncount", "write_ncount"]

from . import _bench_entry  # noqa: E402, F401  (registers the ``fse`` benchmark entry)
