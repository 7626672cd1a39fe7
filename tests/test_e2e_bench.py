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
