"""tests/perf's set-up (tests/perf/conftest.py, docs/PERF_TESTS.md): the fixed work per
timed round, the injected slowdown's plumbing, and pytest-benchmark's save-then-compare
cycle through public options (per-chip storage, --benchmark-compare-fail)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _conftest():
    spec = importlib.util.spec_from_file_location("perf_conftest",
                                                  ROOT / "tests" / "perf" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_launches_per_round_depend_on_the_case_only():
    c = _conftest()
    assert c.launches(None) == 1 and c.launches(0) == 1
    assert c.launches(2 * 8192**3) == 2                      # 1.1 TFLOP: 2 calls
    assert c.launches(2 * 4096**3) == 15                     # 137 GFLOP: ceil(2e12 / it)
    assert c.launches(2 * 1024**3) == c.MAX_LAUNCHES
    assert c.launches(int(c.ROUND_FLOP)) == 1


def test_the_injected_slowdown_is_sized_from_gemmgates_median(monkeypatch):
    c = _conftest()
    seen = []

    def fake_slowed(call, extra_ms, device):
        seen.append((extra_ms, device))
        return call

    monkeypatch.setattr("gemmgate.slowdown.slowed", fake_slowed)
    runner = c.PerfRunner(disabled=True, slowdown=0.1)
    case_id = "m64-n64-k64"
    call = runner.triton_call("fp32", case_id, median_ms=7.0)
    assert seen == [(pytest.approx(0.7), "cpu")]
    assert call().shape == (64, 64) and runner.launches(case_id) == 1   # CPU: one call


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/perf",
         "-k", "m64-n64-k64", f"--benchmark-storage=file://{tmp_path}", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_autosave_then_compare_fail_through_public_options(tmp_path):
    """The save-then-compare cycle the GPU workflow runs: a saved run carries gemmgate's
    figures in extra_info, and a compare reads it back (threshold far above any noise:
    this checks the plumbing, not a speed)."""
    saved = _pytest(tmp_path, "--benchmark-autosave")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    runs = list(tmp_path.rglob("*.json"))
    assert len(runs) == 1
    bench = json.loads(runs[0].read_text())["benchmarks"][0]
    assert bench["extra_info"]["case"] == "m64-n64-k64"
    assert bench["extra_info"]["launches_per_round"] == 1
    assert bench["extra_info"]["per_call_median_ms"] > 0
    assert bench["stats"]["rounds"] >= 3
    compared = _pytest(tmp_path, "--benchmark-compare",
                       "--benchmark-compare-fail=median:100000%")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "Comparing against benchmarks from" in compared.stdout + compared.stderr
