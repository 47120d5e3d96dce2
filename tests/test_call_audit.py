"""scripts/call_audit.py: every kernel a call launches on an H200, compiled for sm_90a on
the CPU through kernels.matmul itself (no GPU), and the verdict on whether the device
would launch it. The compiling runs are subprocesses: the tests' kernels are decorated
for the interpreter (conftest), which compiles nothing."""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "call_audit.py"


@pytest.fixture
def run(compiling_run):
    return functools.partial(compiling_run, SCRIPT)


@pytest.fixture
def audit(load_script):
    return load_script(SCRIPT)


def test_a_call_compiles_every_kernel_it_launches(run, tmp_path):
    """bf16 1000^3 with B column-major and padded rows, operands kept: the GEMM and its
    operand copies (two pitched copies), each compiled and within the H200's limits."""
    out = tmp_path / "k.csv"
    summary = tmp_path / "s.csv"
    got = run("--shapes", "1000x1000x1000-rc+p8", "--modes", "bf16", "--all", "--csv",
               str(out), "--summary-csv", str(summary))
    assert got.returncode == 0, got.stderr[-2000:]
    lines = got.stdout.strip().splitlines()
    assert lines[-1].startswith("call_audit: 1 calls, 3 kernels, 0 the device would refuse")
    names = sorted(line.split()[1] for line in lines if line.startswith("ok "))
    assert names == ["_copy_kernel", "_copy_kernel", "_tma_kernel"], lines
    rows = out.read_text().splitlines()
    assert rows[0].startswith("kernel,warps,stages,shared,registers") and len(rows) == 4
    assert "BLOCK_M=64 BLOCK_N=128" in out.read_text()   # the GEMM's constexprs, by name
    per = [line.split(",") for line in summary.read_text().splitlines()[1:]]
    assert [(r[0], r[1], r[2], r[-1]) for r in per] == [("_copy_kernel", "2", "2", "0"),
                                                       ("_tma_kernel", "1", "1", "0")]


def test_every_kernel_the_pr_set_launches_would_launch_on_an_h200(run, tmp_path):
    """The PR check's cases in every mode, operand copies kept (the harness) and not (a
    library caller): every kernel the committed table's picks launch compiles within the
    H200's shared memory and registers, by the compiler's figures (this Triton's). And no
    IEEE fp32 TMA pick spills in its K loop: on Triton 3.7-3.9 they did (255 registers,
    150-620 spill instructions) until the kernels read B first there (kernels/fma.py,
    session 54)."""
    flagged = tmp_path / "flagged.csv"
    got = run("--shapes", "pr", "--cached", "both", "--csv", str(flagged))
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-2000:]
    assert " 0 the device would refuse" in got.stdout.strip().splitlines()[-1]
    rows = list(csv.DictReader(flagged.open()))
    fp32_tma = [r for r in rows if r["first_call"].startswith("fp32 ")
                and r["kernel"] in ("_tma_kernel", "_tma_split_kernel")]
    assert not [r for r in fp32_tma if r["k_loop_spills"] not in ("", "0")], fp32_tma


def test_a_warp_specialized_tile_compiles_its_gluon_kernel(run):
    """A `tma_ws` tile over meta operands is planned as over CUDA ones (not its `tma`
    form): the warp-specialized kernel compiles, 12 warps (a producer and two consumer
    warpgroups), its registers capped so one program fits an SM."""
    got = run("--shapes", "2048x2048x2048", "--modes", "fp16", "--all",
              "--tile", "tma_ws:128x128x64:s5:w8")
    assert got.returncode == 0, got.stderr[-2000:]
    ws = [line for line in got.stdout.splitlines() if " _ws_kernel " in line]
    assert len(ws) == 1 and ws[0].startswith("ok        _ws_kernel w12 "), got.stdout


def test_a_tile_too_large_for_shared_memory_is_refused(run):
    """A 256x256x64 bf16 tile at 4 stages needs 384 KiB of shared memory: the compiler's
    figure, not the model's, over the H200's 227 KiB: exit 1."""
    got = run("--shapes", "512x512x512", "--modes", "bf16", "--tile", "tma:256x256x64:s4:w8")
    assert got.returncode == 1, got.stderr[-2000:]
    line = got.stdout.strip().splitlines()[0]
    assert line.startswith("shared    _tma_kernel w8 s4: ") and int(line.split()[4]) > 232448


@pytest.mark.parametrize("argv, said", [
    (("--modes", "bf16"), "give --shapes or --draw"),
    (("--shapes", "pr", "--modes", "int8"), "unknown modes int8"),
    (("--draw", "3"), "SEED:COUNT"),
    (("--draw", "3:0"), "SEED:COUNT"),
    (("--shapes", "nosuchset"), "unknown shape set"),
    (("--shapes", "64x64x64", "--tile", "tma:64x64"), "error"),
    (("--shapes", "64x64x64", "--chip", "nvidia-a100"), "compiles for sm_90a"),
])
def test_bad_input_is_exit_2_with_a_message(audit, capsys, argv, said):
    assert audit.main(list(argv)) == 2
    assert said in capsys.readouterr().err


def test_each_call_is_audited_once(audit):
    """A case in two sets (pr's 4096^3 is in nightly and llm too), given twice inline or a
    mode given twice is one call, as a run measures it once ("N calls" counted each)."""
    from gemmgate.shape_sets import SETS

    args = audit.argparse.Namespace(modes="bf16,bf16", cached="both", shapes="all",
                                    draw=None)
    calls = audit._calls(args)
    distinct = {c for s in SETS.values() for c in s if 0 not in (c.m, c.n, c.k)}
    assert len(calls) == len(set(calls)) == 2 * len(distinct)
    args.shapes, args.modes = "64x64x64,64x64x64-rr+p0,32x32x32", "fp16"
    assert len(audit._calls(args)) == 4


def test_the_verdict_is_what_the_device_refuses(audit):
    k = audit.Kernel("_tma_kernel", 8, 3, 232448, "")
    assert k.verdict() == "ok"
    k.shared += 1
    assert k.verdict() == "shared"
    k = audit.Kernel("_tma_kernel", 8, 3, 1024, "", registers=256)   # 256 x 256 threads
    assert k.verdict() == "ok"
    k.warps = 12
    assert k.verdict() == "registers"
    k.error = "ptxas failed"
    assert k.verdict() == "compile"


def test_drawn_calls_are_random_but_repeatable(audit):
    got = audit.draw(7, 50)
    assert got == audit.draw(7, 50) and got != audit.draw(8, 50)
    assert all(1 <= d <= 9000 for c in got for d in (c.m, c.n, c.k))
    assert {c.layout for c in got} == {"rr", "rc", "cr", "cc"}
    assert {c.pad for c in got} <= {0, 1, 8, 40} and len({c.pad for c in got}) > 1


def test_spills_are_counted_in_the_loop_that_holds_the_mmas(audit):
    """nvdisasm's text: the innermost loop holding at least half the MMAs is the K loop;
    spills before it (the persistent loop's prologue) and after it do not count."""
    sass = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   STL [R1], R2 ;
.L_x_1:
        /*0020*/                   LDL R4, [R1] ;
.L_x_0:
        /*0030*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;
        /*0040*/                   STL [R1+0x4], R3 ;
        /*0050*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;
        /*0060*/              @P0  BRA `(.L_x_0) ;
        /*0070*/                   STL [R1+0x8], R5 ;
        /*0080*/              @P1  BRA `(.L_x_1) ;
        /*0090*/                   EXIT ;
"""
    assert audit.loop_spills(sass) == 1
    assert audit.loop_spills(sass.replace("HGMMA", "IADD3")) is None   # no MMA: no K loop
    # loops holding under half the MMAs (three more after them): none is the K loop
    after = "".join(f"/*00{a}0*/ HGMMA.x R0 ;\n" for a in "9ab")
    assert audit.loop_spills(sass.replace("/*0090*/                   EXIT ;", after)) is None


def test_programs_resident_on_an_sm_are_counted_from_registers_shared_memory_and_threads(
        audit):
    """IEEE fp32's three programs an SM fit (96 registers, 48 KiB); a 161-register
    8-warp program fits once by registers (168 a thread allocated: 43,008 of 65,536), a
    213 KiB one once by shared memory; a persistent grid asking more is flagged."""
    k = audit.Kernel("_tma_kernel", 4, 3, 49168, "", registers=96, asked=3)
    assert k.resident == 4 and not k.short and not k.flagged
    k = audit.Kernel("_tma_kernel", 8, 3, 1024, "", registers=161, asked=2)
    assert k.resident == 1 and k.short and k.flagged
    k = audit.Kernel("_tma_kernel", 4, 4, 213024, "", registers=90, asked=1)
    assert k.resident == 1 and not k.short
    k.asked = 2
    assert k.short and k.verdict() == "ok"   # slower, not refused
    assert audit.Kernel("_copy_kernel", 4, 3, 0, "").resident is None   # not compiled


def test_a_search_runs_the_tiles_tune_would_time_the_pick_first(audit, monkeypatch):
    """`searched` plans as an H200 (no interpreter): the tuner's candidates (at most 30),
    the table's pick first, each one the model lets fit; --tile with --search is refused."""
    from gemmgate.shapes import Case
    from kernels import dispatch
    from kernels.tile import usable

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with audit.as_chip(audit.target(), []):
        tiles = audit.searched("bf16", Case(4096, 4096, 4096), True)
        pick = dispatch.plan(*_bf16_call()).pick
    assert 10 <= len(tiles) <= 30 and tiles[0] == pick and len(set(tiles)) == len(tiles)
    assert all(usable(t, "16bit", audit.target().smem) for t in tiles)
    assert audit.main(["--shapes", "64x64x64", "--search", "--tile", "tma:64x64x64:s3:w4"]) == 2


def _bf16_call():
    """(mode, A, B, cached) of a row-major bf16 4096^3 call on meta tensors."""
    import torch

    from kernels.modes import mode_named

    a = torch.empty((4096, 4096), dtype=torch.bfloat16, device="meta")
    return mode_named("bf16"), a, a, True


def test_the_serialization_warning_is_what_marks_a_kernel(audit):
    """ptxas's own words (triton 3.6, the flattened two-accumulator loop of session 33)."""
    said = ("ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async "
            "instructions are serialized due to non wgmma instructions defining "
            "accumulator registers of a wgmma between start and end of the pipeline stage\n"
            "ptxas info    : Used 122 registers, used 1 barriers\n"
            "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n")
    parse = audit.parse_ptxas
    assert parse(said) == {"serialized": True, "registers": 122, "spill_stores": 0}
    assert parse(said.split("\n", 1)[1])["serialized"] is False


def test_as_chip_binds_to_a_stand_in_launch_only_when_asked(audit):
    """`bound=True` (plan_time --calls): a Launch's bound launch is the stand-in that
    launches nothing, and scratch buffers are kept on the meta device, so a repeated call
    runs as on a device; else there is no bound launch and no kept scratch, and both
    leave with the context."""
    import torch

    from kernels.launch import Launch
    from kernels.scratch import SCRATCH

    real = Launch.bound
    launch = Launch(fn=None, grid=(1,), ints=(), kw={})
    meta = torch.device("meta")
    with audit.as_chip(audit.target(), None, bound=True):
        assert launch.bound() is audit._no_launch and audit._no_launch() is None
        kept = SCRATCH.empty((4, 4), torch.float32, meta, "c")   # kept as on a GPU
        assert SCRATCH.empty((4, 4), torch.float32, meta, "c") is kept
    with audit.as_chip(audit.target(), None):
        assert launch.bound() is None
        assert SCRATCH.empty((4, 4), torch.float32, meta, "c") is not \
            SCRATCH.empty((4, 4), torch.float32, meta, "c")
    assert Launch.bound is real and "meta" not in SCRATCH.kept_on


def test_as_chip_binds_a_tree_without_kept_scratch(audit, monkeypatch):
    """A reference commit from before kernels/scratch.py (plan_time --calls --ref): with
    `bound`, its calls bind as any other's; there is no scratch to keep."""
    import importlib

    from kernels.launch import Launch

    real = importlib.import_module

    def no_scratch(name, *args):
        if name.endswith(".scratch"):
            raise ModuleNotFoundError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_scratch)
    with audit.as_chip(audit.target(), None, bound=True):
        assert Launch(fn=None, grid=(1,), ints=(), kw={}).bound() is audit._no_launch


@pytest.mark.parametrize("mode", ["bf16", "fp8"])
def test_an_h100_plans_from_the_table_the_h200_lends_it(audit, mode, monkeypatch):
    """The whole plan on the H100's profile (the audit's stand-in device: its name, SMs
    and shared memory) reads the H200's table through `borrowed_by`: a table pick, not
    the heuristic's, and the H200's own pick on a shape the table holds exactly."""
    from gemmgate.inputs import layout
    from gemmgate.precision import MODES
    from gemmgate.shapes import Case
    from kernels import dispatch
    from kernels.modes import mode_named

    a, b = layout(Case(1024, 1024, 1024), MODES[mode])
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)   # plans as a device does
    plans = {}
    for chip in ("nvidia-h100", "nvidia-h200"):
        dispatch.reset()
        with audit.as_chip(audit.target(chip), None):
            plans[chip] = dispatch.plan(mode_named(mode), a, b, cached=True)
    dispatch.reset()
    assert plans["nvidia-h100"].source == "table"
    assert plans["nvidia-h100"].pick == plans["nvidia-h200"].pick


@pytest.mark.parametrize("capability, ws", [((9, 0), True), ((8, 0), False), ((10, 0), False)])
def test_a_tma_ws_tile_given_on_a_gpu_that_is_not_hopper_runs_its_tma_form(
        audit, monkeypatch, capability, ws):
    """`config=` with a tma_ws tile on an sm_80 or sm_100 GPU aborted the process in LLVM
    (wgmma, setmaxnreg: Hopper's), where the dispatcher's own picks were gated (a review):
    the warp-specialized recipe is Hopper's only, and kernels.matmul runs the tile's `tma`
    form elsewhere. Planned on meta tensors as the chip (nothing compiled)."""
    import torch

    from kernels import matmul_ws
    from kernels.tile import TileConfig

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    a = torch.empty((256, 256), dtype=torch.bfloat16, device="meta")
    out = torch.empty((256, 256), dtype=torch.bfloat16, device="meta")
    cfg = TileConfig(128, 128, 64, 8, 3, 8, "tma_ws")
    chip = audit.Target("NVIDIA X", capability, 132, 232448)
    with audit.as_chip(chip, None):
        got = matmul_ws.recipe(cfg, a, a, out, input_precision="ieee", is_fp32=False,
                               has_scale=False)
    assert (got is not None) is ws

