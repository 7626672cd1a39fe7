"""FSE (finite-state entropy, tANS) compression on the GPU.

``compress(data, mode="reference")`` writes blocks that are byte-identical to what the reference
FSE block compressor (Collet's FiniteStateEntropy; zstd's FSE functions chained the same way)
produces for each block, so the reference decoder decodes them; ``mode="interleaved"`` codes many
states per block in lockstep, for speed. Both live in one container, described in
``docs/fse-format.md``. ``decompress`` reads either.

Building blocks: :func:`histogram` (GPU), :func:`normalize_counts`, :func:`write_ncount`,
:func:`read_ncount`, :func:`build_ctable`, :func:`build_dtable`, :func:`optimal_table_log`.

Command line: ``python -m pywgpuprims.fse compress|decompress IN OUT``.

GPU pipeline (``wgsl/fse/``), per chunk of blocks that fits the device's largest binding:

- ``hist.wgsl``: one workgroup per block; byte histogram in workgroup memory (atomics over four
  sub-histograms) and the block checksum.
- host: block kinds (raw / single symbol / FSE, the reference's rules), the reference's optimal
  table log, normalisation (64-bit arithmetic, vectorised over blocks), packed into a plan.
- ``encode.wgsl``: one workgroup per block builds the compact encoding table in workgroup memory
  (``stateTable`` plus per-symbol ``deltaNbBits``/``deltaFindState``) and writes the NCount header.
  Reference mode: invocation 0 codes the block with two states exactly as the reference does.
  Interleaved mode: each of the ``lanes`` invocations codes its own state and stream.
- host: exclusive scan of the payload sizes (a few thousand values) gives each block's place.
- ``gather.wgsl``: one workgroup per block copies payloads (or raw input) to their places.
- decoding: ``decode.wgsl`` (one workgroup per block: NCount parse and table in workgroup
  memory; reference mode one invocation, interleaved mode one per lane), then checksums of the
  output (``hist.wgsl`` without counts) are compared with the stored ones.

Reference-mode blocks are at most 128 KiB (default 32 KiB): one invocation codes a whole block,
and lavapipe stops any invocation's loops after 65,535 trips in total.
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
