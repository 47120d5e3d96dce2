"""scripts/ptx_diff.py: compiles the tiled kernel for sm_90 on the CPU (Triton's bundled
ptxas, no GPU) and compares PTX without debug info. Run as a subprocess: the tests'
kernels are decorated for the interpreter (conftest), which compiles nothing."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ptx_diff.py"
TILE = "tiled:64x64x64:s4:w4"


@pytest.fixture
def run(compiling_run):
    return functools.partial(compiling_run, SCRIPT)


def test_the_same_kernel_compiles_the_same_and_the_comparison_sees_a_changed_loop(
        run, compiling_run):
    """Against this tree's own commit every tile is the same; within this tree, K = 512 and
    1024 (whole blocks: the same constexprs) compile alike and K = 400 (a partial block:
    the masked loop) does not, so the comparison can tell."""
    code = """
import kernels, sys
sys.path.insert(0, "scripts")
import ptx_diff
t = dict(block_m=64, block_n=64, block_k=64, group_m=8, num_stages=4, num_warps=4)
texts = [ptx_diff.ptx(*ptx_diff.launch_of(kernels, "bf16", t, 144, 192, k), 90)
         for k in (512, 1024, 400)]
print(texts[0] == texts[1], texts[0] == texts[2], ".loc" in texts[0])
"""
    out = compiling_run("-c", code)
    assert out.stdout.split() == ["True", "False", "False"], out.stderr[-2000:]
    got = run("--ref", "HEAD", "144x192x400", "--tiles", TILE)
    assert got.returncode == 0, got.stderr[-2000:]
    assert "bf16 144x192x400 tiled:64x64x64:s4:w4: same" in got.stdout


@pytest.mark.parametrize("argv,message", [
    (["--ref", "HEAD", "12x3", "--tiles", TILE], "give MxNxK"),
    (["--ref", "HEAD", "8x8x8", "--tiles", "tma:64x64x64:s4:w4"], "only the tiled"),
    (["--ref", "HEAD", "8x8x8", "--tiles", TILE, "--modes", "int4"], "unknown precision"),
    (["--ref", "no-such-ref", "8x8x8", "--tiles", TILE], "no-such-ref"),
])
def test_bad_input_exits_2_with_a_message(run, argv, message):
    got = run(*argv)
    assert got.returncode == 2 and message in got.stderr, got.stderr[-2000:]


def test_plain_ptx_drops_debug_lines_blank_lines_and_debug_only_labels():
    """An inlined `@triton.jit` helper adds `$L__tmpN:` labels that only the debug
    sections name (kernels/jit_parts.py): such a label is not code; one an instruction
    branches to is; an instruction changed is a change."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    from ptx_diff import plain_ptx

    written = "\tld.b32 %r1, [%rd1];\n\t.loc 1 10 5\n\tret;\n.section .debug_info\n{ }\n"
    called = ("$L__tmp0:\n\tld.b32 %r1, [%rd1];  // inlined\n\t.loc 2 3 1\n\n$L__tmp1:\n"
              "\tret;\n.section .debug_info\n{ .b64 $L__tmp0 }\n")
    assert plain_ptx(written) == plain_ptx(called) == "\tld.b32 %r1, [%rd1];\n\tret;"
    branch = "\tbra $L__tmp3;\n$L__tmp3:\n\tret;\n"
    assert plain_ptx(branch) == branch.rstrip("\n")
    assert plain_ptx(written.replace("%r1", "%r2")) != plain_ptx(written)
