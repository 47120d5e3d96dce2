"""--devices: cases spread over worker processes, merged in order (CPU: processes only)."""

import json

import pytest

from gemmgate.cli import main
from gemmgate.parallel import check_devices, parse_devices
from gemmgate.shapes import SETS


def test_parse_devices():
    assert parse_devices(None) == (0,)
    assert parse_devices("0,1, 3") == (0, 1, 3)
    for bad in ("a", "0,0", "-1", ","):
        with pytest.raises(ValueError, match="--devices"):
            parse_devices(bad)


def test_missing_gpu_ids_rejected(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    check_devices((0, 1), "cuda")
    with pytest.raises(ValueError, match="only 2 GPU"):
        check_devices((0, 2), "cuda")


def test_split_over_two_workers_keeps_order(tmp_path):
    out = tmp_path / "par.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32,fp16", "--devices", "0,1",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    cases = data["cases"]
    want = [(m, c.m, c.n, c.k) for m in ("fp32", "fp16") for c in SETS["smoke"]]
    assert [(c["mode"], c["m"], c["n"], c["k"]) for c in cases] == want
    assert len({c["worker"] for c in cases}) == 2   # two processes did the work
    assert data["environment"]["devices"] == [0, 1]
    assert all(c["passed"] for c in cases)


def test_bad_devices_exit_2(capsys):
    assert main(["run", "--chip", "cpu", "--devices", "0,zero"]) == 2
    assert "--devices" in capsys.readouterr().err
