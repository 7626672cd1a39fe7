"""The command lines: ``python -m pywgpuprims`` and ``python -m pywgpuprims.fse`` (through subprocess)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import pywgpuprims as pp
from pywgpuprims import fse

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))


def _run(*args, stdin: bytes | None = None):
    return subprocess.run([sys.executable, "-m", *args], input=stdin, capture_output=True, env=ENV, timeout=300)


def test_package_help_and_version():
    for flag in ("--help", "-h"):
        r = _run("pywgpuprims", flag)
        assert r.returncode == 0, r.stderr
        out = r.stdout.decode()
        assert "usage: python -m pywgpuprims" in out and "info" in out and "pywgpuprims.fse" in out
    r = _run("pywgpuprims", "--version")
    assert r.returncode == 0 and pp.__version__ in r.stdout.decode()
    r = _run("pywgpuprims", "bogus")
    assert r.returncode == 2 and b"usage" in r.stderr


def _data(rng) -> bytes:
    return rng.geometric(0.2, 30_000).astype(np.uint8).tobytes() + Path(__file__).read_bytes()


def test_fse_version_and_help():
    r = _run("pywgpuprims.fse", "--version")
    assert r.returncode == 0 and pp.__version__ in r.stdout.decode()
    r = _run("pywgpuprims.fse", "--help")
    assert r.returncode == 0 and b"--force" in r.stdout


def test_fse_refuses_to_overwrite(tmp_path, rng):
    data = _data(rng)
    src, dst = tmp_path / "in.bin", tmp_path / "out.fse"
    src.write_bytes(data)
    dst.write_bytes(b"precious")
    r = _run("pywgpuprims.fse", "compress", str(src), str(dst))
    assert r.returncode == 1 and b"already exists" in r.stderr and b"--force" in r.stderr
    assert dst.read_bytes() == b"precious"
    r = _run("pywgpuprims.fse", "compress", str(src), str(dst), "--force")
    assert r.returncode == 0, r.stderr
    assert "device start-up excluded" in r.stdout.decode()
    assert fse.decompress(dst.read_bytes()) == data
    # never its own input, --force or not (also through another spelling of the path)
    for extra in ([], ["--force"]):
        r = _run("pywgpuprims.fse", "compress", str(src), str(tmp_path / "." / "in.bin"), *extra)
        assert r.returncode == 1 and b"is the input file" in r.stderr
        assert src.read_bytes() == data
    # a failed run leaves no output behind
    r = _run("pywgpuprims.fse", "decompress", str(src), str(tmp_path / "nothing"))
    assert r.returncode == 1 and b"not an FSE container" in r.stderr
    assert not (tmp_path / "nothing").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.bin", "out.fse"]


def test_fse_stdin_stdout(tmp_path, rng):
    data = _data(rng)
    r = _run("pywgpuprims.fse", "compress", "-", "-", "--mode", "interleaved", "--block-size", "4096",
             "--lanes", "32", stdin=data)
    assert r.returncode == 0, r.stderr
    blob = r.stdout
    assert blob[:4] == b"FSEP" and b"GB/s" in r.stderr  # the summary goes to stderr, data to stdout
    assert fse.decompress(blob) == data
    r = _run("pywgpuprims.fse", "decompress", "-", str(tmp_path / "d"), stdin=blob)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "d").read_bytes() == data
    (tmp_path / "c").write_bytes(blob)
    r = _run("pywgpuprims.fse", "decompress", str(tmp_path / "c"), "-", "-q")
    assert r.returncode == 0 and r.stdout == data and r.stderr == b""


def test_fse_max_output_size(tmp_path, rng):
    data = _data(rng)
    (tmp_path / "c").write_bytes(fse.compress(data))
    r = _run("pywgpuprims.fse", "decompress", str(tmp_path / "c"), str(tmp_path / "d"),
             "--max-output-size", "1000")
    assert r.returncode == 1 and b"max_output_size" in r.stderr
    assert not (tmp_path / "d").exists()
