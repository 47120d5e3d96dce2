"""scripts/plan_time.py: a first call's plan (decide + the H200 table's lookup) timed on
the CPU for this tree and others, on the same random shapes each round (no device)."""

import csv
import types
from pathlib import Path

import pytest

import kernels

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "plan_time.py"


@pytest.fixture
def pt(load_script):
    return load_script(SCRIPT)


def test_shapes_are_drawn_alike_for_every_tree_and_in_range(pt):
    assert pt.draw(3, 50) == pt.draw(3, 50) != pt.draw(4, 50)
    assert all(16 <= x <= 8192 for s in pt.draw(3, 50) for x in s)


def test_a_row_per_tree_and_mode_with_the_plans_the_table_answered(pt):
    """Each tree's rows count the shapes the table gave a tile (the same package: the same
    count); a package whose lookup finds nothing counts none. No time is asserted."""
    bare = types.SimpleNamespace(dispatch=kernels.dispatch, modes=kernels.modes,
                                 table=types.SimpleNamespace(lookup=lambda *a, **k: None))
    rows = pt.measure([("a", "0" * 40, kernels), ("b", "1" * 40, kernels),
                       ("bare", "2" * 40, bare)], ["bf16", "fp8"], 20, 2, 0)
    assert [(r["state"], r["tree"], r["mode"]) for r in rows] == [
        ("steady", t, m) for m in ("bf16", "fp8") for t in ("a", "b", "bare")]
    by = {(r["tree"], r["mode"]): r for r in rows}
    for m in ("bf16", "fp8"):
        assert by["a", m]["table_hits"] == by["b", m]["table_hits"] > 0
        assert by["bare", m]["table_hits"] == 0
    assert all(float(r["best_us"]) <= float(r["median_us"]) for r in rows)


def test_the_cli_writes_its_csv_and_refuses_bad_input(pt, tmp_path, capsys):
    out = tmp_path / "t.csv"
    assert pt.main(["--modes", "tf32", "--shapes", "5", "--rounds", "1", "--csv",
                    str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["state"], r["tree"], r["mode"], r["shapes"]) for r in rows] == [
        ("steady", "tree", "tf32", "5")]
    assert pt.main(["--modes", "int8"]) == 2
    assert pt.main(["--rounds", "0"]) == 2
    assert pt.main(["--ref", "no-such-commit-xyz", "--modes", "bf16"]) == 2
    assert "no-such-commit-xyz" in capsys.readouterr().err


def test_cold_plans_are_timed_one_shape_at_a_time_in_a_fresh_process(pt):
    """`--cold`'s child times each new shape's plan alone after one untimed plan; the
    parent starts one such process per tree and round (here this tree: one process)."""
    got = pt.first_plans(kernels, "bf16", 5, 4)
    assert len(got) == 4 and all(us > 0 for us, _ in got)
    assert [hit for _, hit in got] == [hit for _, hit in pt.first_plans(kernels, "bf16", 5, 4)]
    rows = pt.measure_cold([("tree", "0" * 40, None)], ["tf32"], 3, 1, 2)
    assert [(r["state"], r["tree"], r["mode"], r["shapes"], r["rounds"]) for r in rows] == [
        ("cold", "tree", "tf32", 3, 1)]
    assert rows[0]["table_hits"] == sum(h for _, h in pt.first_plans(kernels, "tf32", 2000, 3))


def test_calls_run_kernels_matmul_as_on_an_h200_and_launch_nothing(pt):
    """`--calls`: each timed call is a kernels.matmul call into an out of its own (counted
    through a package that wraps it), apart from the operands; the stand-in driver and
    the H200's facts leave with the measurement (the bound stand-in: test_call_audit).
    No time is asserted."""
    import triton

    seen, outs = [], []

    def matmul(*args, **kw):
        seen.append(kw["precision"])
        outs.append(kw["out"])
        return kernels.matmul(*args, **kw)

    wrapped = types.SimpleNamespace(matmul=matmul, dispatch=kernels.dispatch)
    before, info = triton.runtime.driver._active, kernels.dispatch._device_info
    rows = pt.measure_calls([("w", "0" * 40, wrapped, "kernels")], ["bf16", "fp8"], 3, 1,
                            0, 4)
    assert [(r["state"], r["tree"], r["mode"], r["rounds"]) for r in rows] == [
        ("eager", "w", "bf16", 1), ("eager", "w", "fp8", 1)]
    assert seen.count("bf16") == seen.count("fp8") == 3 * (2 + 4)   # 2 untimed a case
    assert all(o.data_ptr() == pt._OUT_AT for o in outs)   # apart from the operands at 0
    assert all(o.stride(0) % 16 == 0 for o in outs[len(outs) // 2:])   # fp8: padded rows
    assert triton.runtime.driver._active is before
    assert kernels.dispatch._device_info is info and not kernels.dispatch.CALLS


def test_calls_on_a_set_time_its_cases_every_round(pt, tmp_path, capsys):
    """`--set NAME` (with --calls only): the set's cases, layouts and paddings included,
    each round; an unknown set or --set without --calls is refused."""
    from gemmgate.shape_sets import SETS

    got = []
    real = pt._caller
    pt._caller = lambda pkg, mode, case: (got.append(case), real(pkg, mode, case))[1]
    try:
        rows = pt.measure_calls([("t", "0" * 40, kernels, "kernels")], ["fp16"], 99, 2, 0, 1,
                                list(SETS["smoke"]))
    finally:
        pt._caller = real
    assert got == 2 * list(SETS["smoke"]) and rows[0]["shapes"] == len(SETS["smoke"])
    assert pt.main(["--set", "pr", "--modes", "bf16"]) == 2
    assert pt.main(["--calls", "1", "--set", "no-such-set", "--modes", "bf16"]) == 2
    assert "no-such-set" in capsys.readouterr().err
    out = tmp_path / "c.csv"
    assert pt.main(["--calls", "1", "--set", "smoke", "--modes", "fp16", "--rounds", "1",
                    "--csv", str(out)]) == 0
    assert [(r["state"], r["shapes"]) for r in csv.DictReader(out.open())] == [("eager", "4")]
