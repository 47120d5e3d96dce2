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


def test_a_csv_that_cannot_be_written_is_refused_before_measuring(pt, tmp_path, capsys,
                                                                  monkeypatch):
    """A --csv under a regular file was a traceback and exit 1 after every round (the
    figures lost): exit 2, before anything is measured."""
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    monkeypatch.setattr(pt, "measure", lambda *a, **k: pytest.fail("measured"))
    assert pt.main(["--modes", "tf32", "--shapes", "1", "--rounds", "1", "--csv",
                    str(blocker / "t.csv")]) == 2
    assert "--csv" in capsys.readouterr().err


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


def test_first_cases_are_the_fixed_shapes_then_random_ones_or_a_sets(pt):
    from gemmgate.shape_sets import SETS

    got = [(c.m, c.n, c.k) for c in pt.first_cases(0, 8)]
    assert got[:5] == list(pt.FIXED) and got[5:] == pt.draw(0, 3)
    assert [(c.m, c.n, c.k) for c in pt.first_cases(0, 2)] == list(pt.FIXED[:2])
    assert pt.WARM not in got
    assert pt.first_cases(0, 2, "smoke") == [c for c in SETS["smoke"] if c.m and c.n]


def test_first_times_a_first_and_a_second_call_in_a_fresh_process(pt, tmp_path, capsys):
    """`--first`: a row per state (first, second) for each tree and mode, from a process
    of its own that ran the launch path without the JIT (it fails otherwise: the next
    test; and where no launch reached SHARED, as under this suite's TRITON_INTERPRET,
    which the process is not given). No time is asserted."""
    out = tmp_path / "f.csv"
    assert pt.main(["--first", "--modes", "bf16", "--shapes", "3", "--rounds", "1",
                    "--thrash", "1", "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["state"], r["tree"], r["mode"], r["shapes"], r["rounds"]) for r in rows] == [
        ("first", "tree", "bf16", "3", "1"), ("second", "tree", "bf16", "3", "1")]
    assert all(float(r["best_us"]) > 0 for r in rows)
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in printed] == [["bf16", "first", "tree"],
                                                      ["bf16", "second", "tree"]]
    assert all("us/call" in line for line in printed)


def test_first_fails_loudly_where_the_jit_runs_or_no_launch_reached_shared(pt, monkeypatch):
    """The child's guard: a JITFunction.run call during the timed calls (the figures would
    hold JIT time) fails the run, naming it; so does a run whose launches never asked
    SHARED (the interpreter's: kernels decorated for it launch past it)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    cases = pt.first_cases(0, 2)
    if isinstance(kernels.relayout._copy_kernel, InterpretedFunction):   # the CPU suite
        with pytest.raises(RuntimeError, match="no launch asked launch.SHARED"):
            pt.first_calls(kernels, "kernels", ["bf16"], cases)

    def noop(self, *args, **kw):
        return None

    monkeypatch.setattr(JITFunction, "run", noop)
    real = pt._caller

    def caller(pkg, mode, case):
        call = real(pkg, mode, case)
        return lambda: (call(), JITFunction.run(None))

    monkeypatch.setattr(pt, "_caller", caller)
    with pytest.raises(RuntimeError, match=r"JITFunction\.run 6 times.*JIT time"):
        pt.first_calls(kernels, "kernels", ["bf16"], cases)   # warm-up 2 + 2 cases x 2
    assert JITFunction.run is noop   # the count's patch is gone with the run


def test_the_stand_in_kernels_take_the_direct_launch_and_another_form_fails(pt):
    """A stand-in compiled kernel (with descriptors or without) has the launcher form
    Direct.of takes; where Direct.of refuses one, the run fails (no direct launch timed)."""
    from kernels.launch_direct import Direct

    plain = (("*bf16", "D"), ("*bf16", "D"), ("i32", "D"))
    descs = (("tensordesc<bf16[64, 64]>", None), *plain)
    shared = {(None, 0, spec, ()): pt.stand_in_kernel(spec) for spec in (plain, descs)}
    pt._check_launched({"run": 0}, shared, "kernels")
    assert [Direct.of(k, len(key[2]), ()).descs for key, k in shared.items()] == [
        {}, {0: pt._DESC_META}]
    shared[None, 0, plain, (("BLOCK", 64),)] = types.SimpleNamespace(run=lambda *a: None)
    with pytest.raises(RuntimeError, match="Direct.of refuses"):
        pt._check_launched({"run": 0}, shared, "kernels")


def test_a_failing_child_process_is_an_error_and_first_refuses_bad_input(pt, capsys):
    with pytest.raises(RuntimeError, match="failed: .*no-such-set"):
        pt._run_child(None, ["--first", "--modes", "bf16", "--set", "no-such-set"])
    for bad in (["--first", "--cold"], ["--first", "--calls", "1"], ["--thrash", "1"],
                ["--first", "--thrash", "-1"], ["--first", "--set", "no-such-set"]):
        assert pt.main([*bad, "--modes", "bf16"]) == 2, bad
    assert "no-such-set" in capsys.readouterr().err
