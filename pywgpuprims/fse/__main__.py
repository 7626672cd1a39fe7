"""Command line: ``python -m pywgpuprims.fse compress|decompress IN OUT``.

As careful as gzip: an existing OUT is never overwritten without ``--force``, and OUT is never
IN; ``-`` reads standard input or writes standard output; a failed run leaves no partial OUT.
The reported time and rate exclude the GPU device's start-up.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from .._errors import PrimitiveError
from . import compress, decompress
from ._codec import DEFAULT_MAX_OUTPUT
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


class _Refused(Exception):
    """The command line refuses to run (message for the user)."""


def _parser() -> argparse.ArgumentParser:
    from .. import __version__

    ap = argparse.ArgumentParser(prog="python -m pywgpuprims.fse",
                                 description="FSE (tANS) compression on the GPU (format: docs/fse-format.md). "
                                 "An existing OUTPUT is not overwritten unless --force is given; '-' "
                                 "reads standard input or writes standard output.")
    ap.add_argument("command", choices=["compress", "decompress"])
    ap.add_argument("input", help="file to read, or - for standard input")
    ap.add_argument("output", help="file to write, or - for standard output")
    ap.add_argument("-f", "--force", action="store_true",
                    help="overwrite an existing output file; write compressed data to a terminal")
    ap.add_argument("--mode", choices=["reference", "interleaved"], default="reference",
                    help="reference: blocks bit-identical to the reference FSE; interleaved: faster")
    ap.add_argument("--table-log", type=int, default=DEFAULT_TABLELOG)
    ap.add_argument("--block-size", type=int, default=None, help="bytes per block (multiple of 64)")
    ap.add_argument("--lanes", type=int, default=256, help="states per interleaved block")
    ap.add_argument("--max-output-size", type=int, default=DEFAULT_MAX_OUTPUT, metavar="BYTES",
                    help=f"decompress: refuse containers claiming more output (default {DEFAULT_MAX_OUTPUT})")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    ap.add_argument("--version", action="version", version=f"%(prog)s (pywgpuprims {__version__})")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except _Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (OSError, PrimitiveError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _check_paths(args) -> None:
    """Refuse before any work: OUT is IN, or OUT exists (without --force), or compressed data to a terminal."""
    if args.output == "-":
        if args.command == "compress" and sys.stdout.isatty() and not args.force:
            raise _Refused("compressed data not written to a terminal (use --force to do it anyway)")
        return
    if args.input != "-" and os.path.exists(args.output) and os.path.exists(args.input) \
            and os.path.samefile(args.input, args.output):
        raise _Refused(f"{args.output} is the input file; refusing to overwrite it")
    if os.path.lexists(args.output) and not args.force:
        raise _Refused(f"{args.output} already exists; not overwritten (use --force to overwrite it)")
    if os.path.isdir(args.output):
        raise _Refused(f"{args.output} is a directory")


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def _write(path: str, data, force: bool) -> None:
    """Write ``data`` to ``path`` in full or not at all (a temporary file renamed into place)."""
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fse-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if force:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if path appeared meanwhile: never overwrite without --force
            os.unlink(tmp)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _run(args) -> int:
    _check_paths(args)
    data = _read(args.input)
    show = not args.quiet and sys.stderr.isatty()
    from .._device import device

    device()  # start the GPU device before the clock: the rate reported is the codec's alone
    t0 = time.perf_counter()
    if args.command == "compress":
        out = compress(data, table_log=args.table_log, block_size=args.block_size, mode=args.mode,
                       lanes=args.lanes, progress=_Bar("compress", show))
        raw, packed = len(data), len(out)
    else:
        out = decompress(data, progress=_Bar("decompress", show), max_output_size=args.max_output_size)
        raw, packed = len(out), len(data)
    dt = time.perf_counter() - t0
    _write(args.output, out, args.force)
    if not args.quiet:
        ratio = raw / packed if packed else float("inf")
        print(f"{args.command}: {len(data)} -> {len(out)} bytes; ratio {ratio:.3f} "
              f"({100 * packed / max(raw, 1):.1f}%); {dt * 1e3:.1f} ms, {raw / max(dt, 1e-9) / 1e9:.3f} GB/s "
              "of original data (device start-up excluded)",
              file=sys.stderr if args.output == "-" else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
