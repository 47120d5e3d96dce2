"""gemmgate/sweep.py and `gemmgate sweep`: one case across one tile parameter, on the CPU
(Triton interpreter, tiny fp32 case, short budget). Nothing here rests on timings.

The tests that need the forced tile to reach the kernel wrap kernels.matmul in a kernel
that asks its chooser and launches the real kernel with the tile it got, so they hold
whether or not kernels/ asks its chooser under the interpreter (it did not always).
"""

import dataclasses
import json
import types

import pytest

from gemmgate import sweep
from gemmgate.cli import main

CASE = ["--chip", "cpu", "--shape", "32x32x32", "--mode", "fp32", "--budget", "0.05"]


def _asking(seen: list):
    """kernels.matmul behind a chooser call; `seen` collects the tiles it launched."""
    import kernels

    own = kernels.TileConfig(32, 32, 32, 4, 1, 4)  # the kernel's own pick: its first candidate
    real = kernels.matmul

    def matmul(a, b, *, choose=None, **kw):
        cfg = choose("fp32 sweep-test", (own,), lambda c: 1.0)
        seen.append(cfg)
        return real(a, b, config=cfg, **kw)

    return matmul


@pytest.fixture
def fake_kernels():
    import kernels

    seen: list = []
    pkg = types.SimpleNamespace(matmul=_asking(seen), kernel_hash=lambda: "test",
                                TileConfig=kernels.TileConfig)
    return pkg, seen


def _spec(param: str, values: str):
    return sweep.plan(param, "32x32x32", "fp32", values, chip="cpu", budget_s=0.05)


def test_the_forced_value_reaches_the_kernel(fake_kernels):
    pkg, seen = fake_kernels
    got = sweep.run_sweep(_spec("block_m", "16,64"), triton=pkg)
    assert [p.value for p in got.points] == [16, 64]
    assert {c.block_m for c in seen} == {16, 64}   # the kernel launched both tiles
    for p in got.points:
        assert p.status == sweep.OK, p.message
        tile = p.result.telemetry["tuning"]
        assert tile["source"] == "forced" and tile["config"]["block_m"] == p.value
        assert tile["config"]["block_n"] == 32      # the rest is the kernel's own pick
        assert p.config.startswith(f"{p.value}x32x32")
        assert p.result.providers["triton"].accuracy == "pass"
        assert p.triton_tflops and p.vendor_tflops and p.ratio  # measured; never compared


def test_an_invalid_tile_is_a_failed_point_not_a_crash(fake_kernels):
    pkg, _ = fake_kernels
    got = sweep.run_sweep(_spec("block_m", "24,32"), triton=pkg)
    bad, good = got.points
    assert bad.status == sweep.FAILED and "block_m=24" in bad.message
    assert bad.triton_ms is None and bad.ratio is None
    assert bad.vendor_tflops  # the vendor still ran beside it
    assert good.status == sweep.OK
    assert got.best is good


def test_num_stages_is_forced_too(fake_kernels):
    # The interpreter ignores num_stages; the tile the kernel was handed still has it.
    pkg, seen = fake_kernels
    got = sweep.run_sweep(_spec("num_stages", "1,3"), triton=pkg)
    assert [p.result.telemetry["tuning"]["config"]["num_stages"] for p in got.points] == [1, 3]
    assert {c.num_stages for c in seen} == {1, 3}


def test_occupancy_1_is_applied_though_the_stored_tile_leaves_it_out(fake_kernels):
    """A tile's record drops a later field at its old default (occupancy 1,
    `tuning.tile_dict`): value 1 read as "not applied" (session 57)."""
    pkg, seen = fake_kernels
    got = sweep.run_sweep(_spec("occupancy", "1"), triton=pkg)
    [point] = got.points
    assert point.status == sweep.OK, point.message
    assert "occupancy" not in point.result.telemetry["tuning"]["config"]
    assert {c.occupancy for c in seen} == {1}


def test_the_real_kernel_on_the_cpu_runs_and_says_whether_it_took_the_value(tmp_path):
    out = tmp_path / "s.json"
    assert main(["sweep", "--param", "num_warps", "--values", "2,4", *CASE,
                 "--json", str(out)]) == 0
    points = json.loads(out.read_text())["points"]
    assert [p["value"] for p in points] == [2, 4]
    for p in points:   # the interpreter has no warps: the value was taken as the tile,
        assert p["status"] == "ignored"   # and shaped nothing (it said "ok" and a best)
        assert "not applied: the Triton interpreter (CPU) runs no stages" in p["message"]


def test_a_gpu_sweep_that_applied_no_value_is_exit_1(monkeypatch, capsys):
    """Every point "ignored" (split_k values K cannot make, say) measured nothing asked
    for, and exited 0 (a review). The CPU's stages and warps stay exit 0 (above): the
    interpreter has none. The CPU's points, the chip standing for a GPU's."""
    from dataclasses import replace

    from gemmgate import cli_sweep

    real_plan, real_run, held = sweep.plan, sweep.run_sweep, {}

    def plan(*a, **k):
        spec = held["spec"] = real_plan(*a, **k)
        ctx = spec.contexts[0]
        sel = replace(ctx.selection, chip=replace(ctx.chip, vendor="nvidia"))
        return replace(spec, contexts=(replace(ctx, selection=sel), *spec.contexts[1:]))

    monkeypatch.setattr(cli_sweep.sweep, "plan", plan)
    monkeypatch.setattr(cli_sweep.sweep, "run_sweep",
                        lambda spec, on_point=None: real_run(held["spec"], on_point=on_point))
    assert main(["sweep", "--param", "num_warps", "--values", "2,4", *CASE]) == 1
    assert "no value of num_warps shaped a launch" in capsys.readouterr().err


def test_a_cpu_sweep_whose_split_ks_k_cannot_make_is_exit_1_as_on_a_gpu(capsys):
    """The CPU's exit 0 on no value applied is for stages and warps (the interpreter has
    none); split_k 3 and 4 over K = 32 (one or two whole BLOCK_K ranges) measured nothing
    asked for, and exited 0 on the CPU where a GPU exits 1 (a review)."""
    assert main(["sweep", "--param", "split_k", "--values", "3,4", "--chip", "cpu",
                 "--shape", "32x32x32", "--mode", "fp32", "--budget", "0.1"]) == 1
    captured = capsys.readouterr()
    assert "no value of split_k shaped a launch" in captured.err
    assert captured.out.count("split_k=") >= 2 and "makes" in captured.out


def test_a_split_k_that_k_cannot_make_is_ignored(tmp_path):
    """K = 32 in whole BLOCK_K = 32 blocks is one range: split_k 2 and 4 ran unsplit and
    were reported "ok" (the chooser handed back the forced tile, the launch cut it)."""
    out = tmp_path / "s.json"
    assert main(["sweep", "--param", "split_k", "--values", "1,2,4", "--chip", "cpu",
                 "--shape", "32x32x32", "--mode", "fp32", "--budget", "0.1",
                 "--json", str(out)]) == 0
    points = {p["value"]: p for p in json.loads(out.read_text())["points"]}
    from kernels.tile import cdiv, k_range

    block_k = points[2]["tuning"]["config"]["block_k"]
    for v in (2, 4):
        want = "ignored" if cdiv(32, k_range(32, v, block_k)) < v else "ok"
        assert points[v]["status"] == want, (v, block_k, points[v]["message"])
    assert points[1]["status"] == "ok"
    assert any(points[v]["status"] == "ignored" for v in (2, 4))


def test_values_are_ascii_integers():
    from gemmgate.sweep import parse_values

    for bad in ("1,\u00b2", "1,\uff11"):
        with pytest.raises(ValueError, match="positive integers"):
            parse_values(bad, "num_stages")
    for bad in ("1,,2", "1,2,", ",1"):
        with pytest.raises(ValueError, match="has an empty item"):
            parse_values(bad, "num_stages")


def test_a_shape_s_layout_is_read_as_shape_sets_read_it():
    from gemmgate.sweep import parse_shape

    assert parse_shape("8x8x8", " RC ") == parse_shape("8x8x8", "rc")
    with pytest.raises(ValueError, match="unknown layout"):
        parse_shape("8x8x8", "xx")


def test_cli_writes_csv_json_and_plot(tmp_path, monkeypatch, capsys):
    import kernels

    monkeypatch.setattr(kernels, "matmul", _asking([]))
    csv_path, js, png = tmp_path / "s.csv", tmp_path / "s.json", tmp_path / "d" / "s.png"
    code = main(["sweep", "--param", "block_m", "--values", "24,32", *CASE,
                 "--csv", str(csv_path), "--json", str(js), "--plot", str(png)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "sweep block_m" in printed and "failed" in printed
    rows = csv_path.read_text().splitlines()
    assert rows[0].split(",")[:3] == ["block_m", "status", "config"]
    assert [r.split(",")[:2] for r in rows[1:]] == [["24", "failed"], ["32", "ok"]]
    data = json.loads(js.read_text())
    assert data["schema"] == sweep.SCHEMA and data["param"] == "block_m"
    assert data["case"]["id"] == "m32-n32-k32" and data["mode"] == "fp32"
    assert [p["status"] for p in data["points"]] == ["failed", "ok"]
    assert data["points"][1]["tuning"]["source"] == "forced" and data["best"] == 32
    assert "samples_ms" not in json.dumps(data)  # small text: medians, not samples
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_sweep_stopped_part_way_leaves_no_earlier_sweeps_outputs(tmp_path, monkeypatch):
    """A sweep that stops (exit 3: a measurement failed; Ctrl-C) writes nothing, and the
    earlier sweep's --csv, --json and --plot at those paths stayed, looking like this
    one's (a review). They are removed once the input is checked; a bad input (exit 2)
    leaves them."""
    from gemmgate.context import MeasurementError

    paths = [tmp_path / "s.csv", tmp_path / "s.json", tmp_path / "s.png"]
    for p in paths:
        p.write_text("an earlier sweep's")
    outs = ["--csv", str(paths[0]), "--json", str(paths[1]), "--plot", str(paths[2])]
    assert main(["sweep", "--param", "stages", *CASE, *outs]) == 2
    assert all(p.read_text() == "an earlier sweep's" for p in paths)

    def stop(spec, on_point=None):
        raise MeasurementError("fp32 m32-n32-k32 ran past the case time limit")

    monkeypatch.setattr(sweep, "run_sweep", stop)
    assert main(["sweep", "--param", "block_m", "--values", "32", *CASE, *outs]) == 3
    assert not any(p.exists() for p in paths)


def test_every_value_failing_exits_1(monkeypatch):
    import kernels

    monkeypatch.setattr(kernels, "matmul", _asking([]))
    assert main(["sweep", "--param", "block_m", "--values", "24,48", *CASE]) == 1


@pytest.mark.parametrize("args, message", [
    (["--param", "stages", "--values", "1,2"], "unknown --param 'stages'"),
    (["--param", "variant", "--values", "1,2"], "unknown --param 'variant'"),
    (["--param", "stages"], "unknown --param 'stages'"),   # not "give --values"
    (["--param", "num_stages", "--mode", "bf16"], "bf16 is not supported on cpu"),
    (["--param", "num_stages", "--values", "1,x"], "positive integers"),
    (["--param", "num_stages", "--values", "0,2"], "positive integers"),
    (["--param", "num_stages", "--values", ","], "names no value"),
    (["--param", "num_stages", "--values", "2,2"], "repeats"),
    (["--param", "num_stages", "--shape", "32x32"], "M x N x K"),
    (["--param", "num_stages", "--shape", "32x0x32"], ">= 1"),
    (["--param", "num_stages", "--mode", "fp64"], "unknown precision mode"),
    (["--param", "num_stages", "--mode", "fp32,fp16"], "one precision mode"),
    (["--param", "num_stages", "--layout", "xx"], "unknown layout"),
    (["--param", "num_stages", "--budget", "0"], "--budget"),
    (["--param", "num_stages", "--plot", "curve.svg"], ".png"),
])
def test_bad_input_exits_2_before_measuring(args, message, monkeypatch, capsys):
    def never(*a, **kw):
        raise AssertionError("measured before validating")

    monkeypatch.setattr(sweep, "Runner", never)
    code = main(["sweep", *CASE, *args])  # later options override CASE's
    assert code == 2
    assert message in capsys.readouterr().err


def test_sweepable_fields_come_from_the_kernels_tile_class():
    @dataclasses.dataclass(frozen=True)
    class Old:
        block_m: int
        num_stages: int
        variant: str = "tiled"

    @dataclasses.dataclass(frozen=True)
    class New(Old):
        split_k: int = 1

    assert sweep.sweepable(Old) == ("block_m", "num_stages")
    sweep.check_param("split_k", New)
    with pytest.raises(ValueError, match="no split-K field"):
        sweep.check_param("split_k", Old)
    with pytest.raises(ValueError, match="takes: block_m, num_stages"):
        sweep.check_param("variant", Old)


def test_default_values():
    assert sweep.parse_values(None, "num_stages") == (1, 2, 3, 4, 5, 6, 7)
    assert sweep.parse_values(None, "block_k") == (16, 32, 64, 128, 256)
    assert sweep.parse_values(None, "group_m") == (1, 2, 4, 8, 16, 32)
    assert sweep.parse_values(None, "occupancy") == (1, 2)
    assert sweep.parse_values(" 3, 1 ", "num_stages") == (3, 1)  # the order given
    with pytest.raises(ValueError, match="no default values"):
        sweep.parse_values(None, "num_ctas")


def test_the_figure_marks_failed_values_and_the_vendor_line():
    from gemmgate import plots

    fig = plots.sweep_curve("num_stages", [1, 2, 3], [1.0, 2.0, None],
                            ["ok", "ok", "failed"], 1.5, "cpu fp32 m32-n32-k32")
    ax = fig.axes[0]
    gids = {a.get_gid() for a in ax.get_children()}
    assert {"triton", "failed", "vendor"} <= gids
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "✗ 3"]


def test_a_value_that_stops_the_sweep_is_named(monkeypatch):
    """A value past --case-timeout stopped the sweep (exit 3) naming only the case: the
    value, the collapse a sweep looks for, was not said (a review)."""
    from gemmgate.context import MeasurementError

    class Runner:
        def __init__(self, ctx, triton=None):
            self.ctx = ctx

        def run_case(self, mode, case):
            raise MeasurementError("fp32 m32-n32-k32 ran past the case time limit")

    monkeypatch.setattr(sweep, "Runner", Runner)
    with pytest.raises(MeasurementError, match=r"^block_m=16: fp32 m32-n32-k32 ran past the "
                       r"case time limit \(0 value\(s\) measured before it\)"):
        sweep.run_sweep(_spec("block_m", "16,32"))


def test_a_plot_through_a_symbolic_link_is_written_to_its_target(tmp_path, monkeypatch):
    """As --csv and --json: the link was replaced by a file and its target deleted (a
    review)."""
    import kernels

    monkeypatch.setattr(kernels, "matmul", _asking([]))
    real = tmp_path / "real"
    real.mkdir()
    (real / "p.png").write_text("old")
    link = tmp_path / "p.png"
    link.symlink_to(real / "p.png")
    assert main(["sweep", "--param", "block_m", "--values", "32", *CASE,
                 "--plot", str(link)]) == 0
    assert link.is_symlink() and (real / "p.png").read_bytes()[:4] == b"\x89PNG"


def _forced_result(mode: str, tile, m=3072, n=3072, k=4096):
    """A GPU case result whose chooser handed back the forced `tile` (as run_case records it)."""
    from gemmgate.results import CaseResult, ProviderResult
    from gemmgate.shapes import Case
    from gemmgate.tuning import config_name, tile_dict

    tele = {"tuning": {"key": "k", "config": tile_dict(tile), "source": "forced",
                       "kernel": "x", "timings_ms": {}}, "triton_config": config_name(tile)}
    return CaseResult(mode, Case(m, n, k), {
        "triton": ProviderResult("triton", "pass", 1e-3, samples_ms=(1.0, 1.0, 1.0)),
        "vendor": ProviderResult("vendor", "pass", 1e-3, samples_ms=(1.0, 1.0, 1.0))},
        telemetry=tele)


def test_a_gpu_value_the_kernel_launches_otherwise_is_not_applied():
    """Forced values the GPU kernels take as the tile and launch otherwise were "ok": IEEE
    fp32's TMA grid sizes its programs per SM by shared memory (occupancy 1 and 2 launched
    alike, kernels/matmul_tma.programs_per_sm), and the warp-specialized kernel launches
    at most the stages shared memory holds (bf16 3072 x 3072 x 4096 on an H200: 5, 6 and
    7 each ran 4; kernels/ws_forms.stages). Both read as a plateau where the sweep is
    there to show the collapse (a review)."""
    from kernels.tile import TileConfig

    for occ in (1, 2):
        tile = TileConfig(64, 64, 64, 8, 3, 4, "tma", occupancy=occ)
        p = sweep.point_of("occupancy", occ, _forced_result("fp32", tile, 1024, 1024, 1024),
                           "cuda")
        assert p.status == sweep.IGNORED and "programs per SM" in p.message, p
        p = sweep.point_of("occupancy", occ, _forced_result("bf16", tile), "cuda")
        assert p.status == sweep.OK, p.message      # the wgmma modes launch it as asked
    for stages, want in ((4, sweep.OK), (5, sweep.IGNORED), (7, sweep.IGNORED)):
        tile = TileConfig(128, 192, 64, 8, stages, 8, "tma_ws")
        p = sweep.point_of("num_stages", stages, _forced_result("bf16", tile), "cuda")
        assert p.status == want, (stages, p.message)
        if want == sweep.IGNORED:
            assert p.message.endswith("holds: 4")
    plain = TileConfig(128, 256, 64, 8, 7, 8, "tma")    # the plain TMA kernel runs its own
    assert sweep.point_of("num_stages", 7, _forced_result("bf16", plain), "cuda").status \
        == sweep.OK


def test_a_warp_specialized_tile_the_kernel_does_not_take_says_what_ran():
    """A `tma_ws` pick forced to 4 warps (or a 32-deep K block) launches its tma form, the
    plain kernel, under the row's tma_ws name: the sweep compared two kernels as one
    parameter, unsaid (a review). The row says what ran."""
    from kernels.tile import TileConfig

    p = sweep.point_of("num_warps", 4, _forced_result(
        "bf16", TileConfig(128, 192, 64, 8, 4, 4, "tma_ws")), "cuda")
    assert p.status == sweep.OK and p.message.startswith("ran as tma_wide"), p.message
    p = sweep.point_of("num_warps", 8, _forced_result(
        "bf16", TileConfig(128, 192, 64, 8, 4, 8, "tma_ws")), "cuda")
    assert p.status == sweep.OK and p.message == ""


def test_a_stop_while_the_figure_is_drawn_leaves_no_output(tmp_path, monkeypatch):
    """The figure was drawn (matplotlib imported, most of a second) after --csv and --json
    were written: a SIGTERM then (exit 143, a reproduction) left them without --plot,
    where a stopped sweep keeps none. A figure that cannot be drawn still leaves the
    data."""
    import kernels
    from gemmgate import plots

    monkeypatch.setattr(kernels, "matmul", _asking([]))
    paths = [tmp_path / "s.csv", tmp_path / "s.json", tmp_path / "s.png"]
    outs = ["--csv", str(paths[0]), "--json", str(paths[1]), "--plot", str(paths[2])]

    def stopped(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "sweep_curve", stopped)
    assert main(["sweep", "--param", "block_m", "--values", "32", *CASE, *outs]) == 130
    assert not any(p.exists() for p in paths)

    def broken(*a, **kw):
        raise ValueError("cannot draw")

    monkeypatch.setattr(plots, "sweep_curve", broken)
    assert main(["sweep", "--param", "block_m", "--values", "32", *CASE, *outs]) == 2
    assert paths[0].exists() and paths[1].exists() and not paths[2].exists()
