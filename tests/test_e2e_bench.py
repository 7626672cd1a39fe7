"""The end-to-end benchmark (``python -m pywgpuprims.bench --e2e``) runs every case on tiny sizes and
produces checked rows."""

import json

from pywgpuprims.bench import e2e


def test_e2e_quick_tiny(tmp_path, capsys):
    js, md = tmp_path / "e2e.json", tmp_path / "e2e.md"
    rc = e2e.main(["--quick", "--sizes", "1000", "--image-sides", "64", "--volume-sides", "12",
                    "--transfer-mib", "1", "--repeats", "3", "--budget-s", "0.01", "--chain-s", "0.01",
                    "--no-progress", "--no-torch", "--json", str(js), "--markdown", str(md)])
    assert rc == 0
    data = json.loads(js.read_text())
    rows = data["rows"]
    assert {(r["primitive"], r["variant"]) for r in rows} == {(c.primitive, c.variant) for c in e2e.CASES}
    for r in rows:
        assert "error" not in r["note"] and "WRONG" not in r["note"], r
        if not r["note"].startswith("skipped"):
            assert r["np_ms"] > 0 and r["bound_ms"] > 0 and r["np_ratio"] > 0, r
            assert "chain_ms" in r or r["note"].startswith("no chain"), r
    assert any(f["measurement"].startswith("wgpu-py floor") for f in data["floors"])
    text = md.read_text()
    assert "| primitive |" in text and data["meta"]["device"] in text
    assert text in capsys.readouterr().out


def test_table_has_the_torch_columns():
    """With torch figures in a row, the table shows torch np->np, torch on the GPU (synchronized)
    and the chain's ratio to it (issue 37 asks for both torch paths)."""
    row = {"primitive": "scan", "variant": "float32 add", "size_label": "1e6", "np_ms": 2.0, "bound_ms": 1.0,
           "chain_ms": 0.1, "torch_np_ms": 3.0, "torch_gpu_ms": 0.05, "note": ""}
    row["x_torch"] = row["torch_np_ms"] / row["np_ms"]
    row["x_torch_gpu"] = row["torch_gpu_ms"] / row["chain_ms"]
    meta = {"device": "dev", "host_cpus": 1, "date": "d", "commit": "c", "command": "x", "timestamps": True,
            "torch": "2", "torch_device": "cuda"}
    text = e2e.markdown(meta, [row], [])
    header = next(line for line in text.splitlines() if line.startswith("| primitive"))
    for col in ("torch np->np ms", "torch GPU ms", "x torch np->np", "chain x torch GPU"):
        assert f"| {col} |" in header
    assert "| 0.5 |" in text  # 0.05 / 0.1
