"""scripts/ptxas_check.py: a named tile's kernels compiled for sm_90a on the CPU through
the call path and given to Triton's ptxas (no GPU); its verdict on wgmma serialization.
Run as a subprocess: the tests' kernels are decorated for the interpreter (conftest),
which compiles nothing."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ptxas_check.py"


@pytest.fixture
def run(compiling_run):
    return functools.partial(compiling_run, SCRIPT)


def test_a_wide_tile_compiles_and_ptxas_reports_its_registers(run):
    """Through the call path, the `tma_wide` kernel: 74 registers on triton 3.6 and 3.9."""
    got = run("tma_wide:64x96x64:s3:w4", "--shape", "1024x1024x1024")
    assert got.returncode == 0, got.stderr[-2000:]
    line = got.stdout.strip().splitlines()[-1]
    assert line.startswith("tma_wide:64x96x64:s3:w4 bf16: ok, ") and "registers" in line


def test_any_variant_compiles_through_the_call_and_bad_input_is_refused(run):
    """A tiled tile and a hybrid one (its two kernels, a line each) run through
    kernels.matmul as an H200 plans the call; a shape without K is exit 2."""
    got = run("tiled:64x64x64:s4:w4", "tma_hybrid:128x128x64:s4:w8:k2", "--shape",
              "3000x2000x1000")
    assert got.returncode == 0, got.stderr[-2000:]
    lines = got.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["tiled", "tma_hybrid", "tma_hybrid"]
    assert all(": ok, " in line and " bytes shared" in line for line in lines), lines
    got = run("tma:128x128x64:s4:w8", "--shape", "4096x4096")
    assert got.returncode == 2 and "give M x N x K" in got.stderr


def test_a_warp_specialized_tile_compiles_its_own_kernel_and_one_it_does_not_run_is_refused(
        run):
    got = run("tma_ws:128x144x64:s5:w8", "--mode", "fp16")
    assert got.returncode == 0, got.stderr[-2000:]
    line = got.stdout.strip().splitlines()[-1]
    assert line.startswith("tma_ws:128x144x64:s5:w8 fp16: ok, 168 registers, 0 bytes spill")
    got = run("tma_ws:128x128x64:s5:w4")   # 4 warps: not a tile the kernel runs
    assert got.returncode == 2 and "ws_forms.fits" in got.stderr
    got = run("tma_ws:128x128x128:s5:w8", "--mode", "fp8")   # e4m3, B K-major, scales
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.strip().splitlines()[-1].startswith(
        "tma_ws:128x128x128:s5:w8 fp8: ok, 168 registers, 0 bytes spill")
