"""scripts/ptxas_check.py: a TMA variant's tile compiled for sm_90a on the CPU and given
to Triton's ptxas (no GPU); its verdict on wgmma serialization. Run as a subprocess: the
tests' kernels are decorated for the interpreter (conftest), which compiles nothing."""

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
    got = run("tma_wide:64x96x64:s3:w4", "--shape", "1024x1024x1024")
    assert got.returncode == 0, got.stderr[-2000:]
    line = got.stdout.strip().splitlines()[-1]
    assert line.startswith("tma_wide:64x96x64:s3:w4 bf16: ok, ") and "registers" in line


def test_other_variants_and_bad_shapes_are_refused(run):
    assert run("tiled:64x64x64:s4:w4").returncode == 2
    got = run("tma:128x128x64:s4:w8", "--shape", "4096x4096")
    assert got.returncode == 2 and "give M x N x K" in got.stderr


def test_the_serialization_warning_is_what_marks_a_tile(load_script):
    """ptxas's own words (triton 3.6, the flattened two-accumulator loop of session 33)."""
    said = ("ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async "
            "instructions are serialized due to non wgmma instructions defining "
            "accumulator registers of a wgmma between start and end of the pipeline stage\n"
            "ptxas info    : Used 122 registers, used 1 barriers\n"
            "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n")
    parse = load_script(SCRIPT).parse_ptxas
    assert parse(said) == {"serialized": True, "registers": 122, "spill_stores": 0}
    assert parse(said.split("\n", 1)[1])["serialized"] is False


def test_a_warp_specialized_tile_compiles_from_the_tile_alone(run):
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
