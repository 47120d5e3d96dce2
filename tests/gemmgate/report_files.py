"""What the report's tests share (imported as tests.gemmgate.report_files): a
synthetic run file with a failing case and A/B reference bars, and the committed
H200 baseline trimmed to fp32."""

import json
import math
from dataclasses import replace
from pathlib import Path

from gemmgate.shapes import Case

REPO = Path(__file__).resolve().parents[2]
CPU_BASE, H200_BASE = REPO / "baselines" / "cpu.json", REPO / "baselines" / "nvidia-h200.json"
ITEMS = [("fp32", Case(64, 64, 64)), ("fp32", Case(48, 80, 72)), ("fp32", Case(64, 128, 64)),
         ("fp32", Case(64, 32, 96, "cr")), ("fp32", Case(32, 64, 48, "rc", 5))]
ENV = {"chip": "cpu", "timing": "wall", "date": "2026-12-01T10:00:00+00:00",
       "commit": "c0ffee1" * 5}


def with_failure_and_reference(rec):
    """The 64x128x64 case fails accuracy on the Triton side; every case has a reference."""
    cases = []
    for c in rec.cases:
        provs = dict(c.providers)
        t = provs["triton"]
        provs["reference"] = replace(t, name="reference", tflops=t.tflops * 1.01)
        if c.case == Case(64, 128, 64):
            provs["triton"] = replace(t, accuracy="fail", error=math.inf,
                                      message="NaN/Inf in the output")
        cases.append(replace(c, providers=provs))
    return replace(rec, cases=tuple(cases))


def write_run_file(tmp_path, synthetic_record) -> Path:
    """The synthetic run (ITEMS, ENV) with a failure and reference bars, as run.json."""
    rec = with_failure_and_reference(synthetic_record(ITEMS, environment=ENV))
    p = tmp_path / "run.json"
    p.write_text(json.dumps(rec.to_json()))
    return p


def trimmed_h200(tmp_path) -> Path:
    """The committed H200 baseline, fp32 cases only (fewer figures to draw)."""
    data = json.loads(H200_BASE.read_text())
    data["cases"] = {k: c for k, c in data["cases"].items() if c["mode"] == "fp32"}
    p = tmp_path / "nvidia-h200.json"
    p.write_text(json.dumps(data))
    return p
