"""FSE (finite-state entropy, tANS) compression on the GPU.

``compress(data, mode="reference")`` writes blocks that are byte-identical to what the reference
FSE block compressor (Collet's FiniteStateEntropy; zstd's FSE functions chained the same way)
produces for each block, so the reference decoder decodes them; ``mode="interleaved"`` codes many
states per block in lockstep, for speed. Both live in one container, described in
``docs/fse-format.md``. ``decompress`` reads either.

Building blocks: :func:`histogram` (GPU), :func:`normalize_counts`, :func:`write_ncount`,
:func:`read_ncount`, :func:`build_ctable`, :func:`build_dtable`, :func:`optimal_table_log`.

Command line: ``python -m pywgpuprims.fse compress|decompress IN OUT`` (``-`` for stdin/stdout;
an existing OUT is kept unless ``--force``; ``--help``).

GPU pipeline (``wgsl/fse/``), per group of blocks whose every binding fits ``dev.binding_limit``
(blocks are independent: a large input is coded group by group, into the same container), all in
one submission:

- ``hist.wgsl``: byte histogram in workgroup memory (atomics over eight sub-histograms, 4 words
  per invocation and trip) and the block checksum's sum; a block is split over up to 32
  workgroups of at least 32 KiB while blocks are few (about 512 workgroups in all), which add
  their counts to the block's.
- ``norm.wgsl``: one workgroup per block; block kinds (raw / single symbol / FSE, the reference's
  rules), the reference's optimal table log and normalisation (its fallback method included;
  64-bit arithmetic on pairs of words), bit-exact with the host's functions of ``_tables.py``.
- reference mode: ``reftab.wgsl`` (one workgroup per block) builds the block's encoding table in
  parallel, writes the NCount header and stores the table compactly (1 KiB of per-symbol
  ``deltaNbBits``/``deltaFindState`` + u16 state table); ``refenc.wgsl`` then codes as many blocks
  per workgroup as tables fit its workgroup memory (9 at table log 11 with 48 KiB), one block per
  invocation, with two states exactly as the reference does.
- interleaved mode: ``encode.wgsl``, one workgroup per block builds the table in workgroup memory
  and writes the header; each of the ``lanes`` invocations codes its own state and stream.
- ``place.wgsl`` (one workgroup): each block's final kind and size (a coded block that does not
  shrink is stored raw) and an exclusive scan of the sizes give each block's place.
- ``gather.wgsl``: copies payloads (or raw input) to their places, after a record of (kind,
  size, checksum) per block (4 words per invocation and trip; an interleaved block's lane streams
  as one flat range), split over workgroups as ``hist.wgsl``.
- decoding: ``decode.wgsl`` (one workgroup per block: NCount parse and checks; interleaved mode:
  table built in parallel in workgroup memory, one invocation per lane decodes; reference mode:
  invocation 0 builds the table and decodes), then checksums of the output (``hist.wgsl``
  without counts) are compared with the stored ones.

Host path: a group costs one upload, one submission and one map round trip either way: encoding
reads the record and the payloads from one readback (when their worst case, the input's size,
is at most ``dev.transfer.one_shot_counted``; past it the record comes first, then just the
payloads, downloaded), straight into the returned ``bytes``
(written once: made uninitialised through CPython's C API, as C code fills
``PyBytes_FromStringAndSize(NULL, n)``, once the record gave its size); decoding reads status
words, checksums and, up to ``one_shot``, the output, into a bytearray that is not zero-filled
first. Group k+1 is uploaded and submitted before group k is read (``encode_groups`` /
``decode_groups``, shared with ``pywgpuprims.stream``); compressed input is uploaded from the
caller's buffer without a copy. Both calls are step generators underneath (``compress_steps`` /
``decompress_steps``, yielding ``WAIT`` before each wait for the GPU): ``compress`` and
``decompress`` run theirs to the end, and the codecs of ``pywgpuprims.codecs`` step several
chunks' in turn, so that one chunk's round trip overlaps the others' GPU work.

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
