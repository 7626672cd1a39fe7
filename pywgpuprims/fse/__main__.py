"""Command line: ``python -m pywgpuprims.fse compress|decompress IN OUT``."""

from __future__ import annotations

import argparse
import sys
import time

from .._errors import PrimitiveError
from . import compress, decompress
from ._tables import DEFAULT_TABLELOG


class _Bar:
    def __init__(self, label: str, enabled: bool):
        self.label = label
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        frac = done / total if total else 1.0
        width = 30
        fill = int(frac * width)
        rate = done / max(time.perf_counter() - self.t0, 1e-9) / 1e9
        sys.stderr.write(f"\r{self.label} [{'#' * fill}{'.' * (width - fill)}] {100 * frac:5.1f}% "
                         f"{done / 2**20:9.1f} MiB {rate:6.2f} GB/s")
        sys.stderr.flush()
        if done >= total:
            sys.stderr.write("\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pywgpuprims.fse",
                                 description="FSE (tANS) compression on the GPU (format: docs/fse-format.md)")
    ap.add_argument("command", choices=["compress", "decompress"])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--mode", choices=["reference", "interleaved"], default="reference",
                    help="reference: blocks bit-identical to the reference FSE; interleaved: faster")
    ap.add_argument("--table-log", type=int, default=DEFAULT_TABLELOG)
    ap.add_argument("--block-size", type=int, default=None, help="bytes per block (multiple of 64)")
    ap.add_argument("--lanes", type=int, default=256, help="states per interleaved block")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    try:
        return _run(args)
    except (OSError, PrimitiveError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _run(args) -> int:
    with open(args.input, "rb") as f:
        data = f.read()
    show = not args.quiet and sys.stderr.isatty()
    t0 = time.perf_counter()
    if args.command == "compress":
        out = compress(data, table_log=args.table_log, block_size=args.block_size, mode=args.mode,
                       lanes=args.lanes, progress=_Bar("compress", show))
        raw, packed = len(data), len(out)
    else:
        out = decompress(data, progress=_Bar("decompress", show))
        raw, packed = len(out), len(data)
    dt = time.perf_counter() - t0
    with open(args.output, "wb") as f:
        f.write(out)
    ratio = raw / packed if packed else float("inf")
    print(f"{args.command}: {len(data)} -> {len(out)} bytes; ratio {ratio:.3f} ({100 * packed / max(raw, 1):.1f}%); "
          f"{dt * 1e3:.1f} ms, {raw / max(dt, 1e-9) / 1e9:.3f} GB/s of original data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
