"""scripts/perf_formats.py: the power-table arithmetic on a tiny synthetic checks.csv, and
the table-making functions on small synthetic cases.csv, tiles.csv and session files."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "perf_formats.py"


@pytest.fixture
def pf(load_script):
    return load_script(SCRIPT)


CSV = """\
source,injected,mode,case,verdict
check_1_0,0,bf16,m1,unchanged
check_1_0,0,bf16,m2,regressed
check_2_0,0,bf16,m1,unchanged
check_2_0,0,bf16,m2,unchanged
check_3_0.03,0.03,bf16,m1,regressed
check_3_0.03,0.03,bf16,m2,unchanged
check_4_0.03,0.03,bf16,m1,regressed
check_4_0.03,0.03,bf16,m2,failed
"""


def test_power_table_on_synthetic_checks(pf, tmp_path):
    path = tmp_path / "checks.csv"
    from gemmgate.trials import read_csv as read_checks
    from gemmgate.trials import write_summaries

    path.write_text(CSV)
    rows = read_checks(path)
    p = pf.power(rows)
    assert list(p) == [0.0, 0.03]
    assert (p[0.0]["checks"], p[0.0]["judged"], p[0.0]["regressed"]) == (2, 4, 1)
    # a failed case check is not judged; the check still counts
    assert (p[0.03]["checks"], p[0.03]["judged"], p[0.03]["regressed"]) == (2, 3, 2)
    assert p[0.0]["wrong"] == {"bf16-m2": 1}  # the false alarm
    assert p[0.03]["wrong"] == {"bf16-m2": 1}  # the miss
    table = pf.power_table([("", p)]).splitlines()
    assert table[2] == "| 0% (A/A: false alarms) | 2 | 4 | 1 | 25.0% |"
    assert table[3] == "| 3% | 2 | 3 | 2 | **66.7%** |"
    grouped = pf.power_table([("call 1", p)], "device call").splitlines()
    assert grouped[0].startswith("| device call | injected slowdown |")
    assert grouped[3] == "| call 1 | 3% | 2 | 3 | 2 | **66.7%** |"
    # the trials summaries that docs/results keeps give the same table as the rows
    write_summaries(tmp_path, rows)
    assert pf.power_table([("", pf._summaries(tmp_path))]).splitlines() == table


def test_long_tail_is_any_dimension_or_padded_leading_dimension_off_16(pf):
    tail = pf._long_tail
    assert tail("m4095-n4097-k4093") and tail("m1000-n1000-k1000") and tail("m26-n5523-k7310")
    assert tail("m2048-n2048-k2048-rr+p1") and tail("m4096-n4096-k4096-rr+p8")
    assert not tail("m4096-n4096-k4096") and not tail("m4096-n4096-k4096-cr")
    assert not tail("m2048-n2048-k2048-rr+p16")


def test_ratios_below_lists_the_labels_slow_cases_slowest_first(pf, tmp_path):
    rows = ["label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile",
            "callF-holdout,bf16,m1-n2-k3,1,1,0.7500,,t1",
            "callF-holdout,fp8,m4-n5-k6,1,1,0.6000,,t2",
            "callF-nightly,bf16,m7-n8-k9,1,1,0.9000,,t3",
            "callE-holdout,bf16,m1-n2-k3,1,1,0.5000,,t4"]
    path = tmp_path / "cases.csv"
    path.write_text("\n".join(rows) + "\n")
    lines = pf.ratios_below(path, "callF-", 0.8).splitlines()
    assert lines[2:] == ["| holdout | fp8 | m4-n5-k6 | 0.60 | t2 |",
                         "| holdout | bf16 | m1-n2-k3 | 0.75 | t1 |"]


def test_targets_table_takes_each_cells_geomean_from_its_own_run(pf, tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    head = "label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile"
    a.write_text("\n".join([head, "c1-pr,bf16,m1-n1-k1,1,1,1.0000,,t",
                            "c1-pr,bf16,m2-n2-k2,1,1,1.2100,,t",
                            "c1-pr,fp8,m1-n1-k1,1,1,0.5000,,t"]) + "\n")
    b.write_text("\n".join([head, "c9-pr,fp8,m1-n1-k1,1,1,0.9000,,t"]) + "\n")
    lines = pf.targets_table({"pr": {"bf16": (a, "c1-pr"), "fp8": (b, "c9-pr")},
                              "nightly": {"bf16": (a, "none")}}).splitlines()
    assert lines[0] == "| set | bf16 | fp8 |"
    assert lines[2] == "| target | ≥ 1.05 | ≥ 0.90 |"
    assert lines[3:] == ["| pr | 1.100 | 0.900 |", "| nightly |  |  |"]


def test_sets_targets_reads_each_holdouts_run_by_its_label_pattern(pf, tmp_path):
    a = tmp_path / "a.csv"
    rows = ["c1-pr,bf16,m1-n1-k1,1,1,1.2000,,t", "c2-nightly,bf16,m1-n1-k1,1,1,1.1000,,t",
            "c3-holdout3,bf16,m1-n1-k1,1,1,0.8000,,t", "c3-holdout,bf16,m1-n1-k1,1,1,1.5,,t"]
    a.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n" +
                 "\n".join(rows) + "\n")
    lines = pf.sets_targets((a, "c1-pr"), {
        "bf16": ((a, "c2-nightly"), (a, "c3-{set}"))}).splitlines()
    assert lines[3:6] == ["| pr | 1.200 |", "| nightly | 1.100 |", "| holdout | 1.500 |"]
    assert lines[7] == "| holdout3 | 0.800 |" and lines[6] == "| holdout2 |  |"
    assert len(lines) == 3 + 2 + 5


def test_sets_targets_takes_a_pr_run_per_mode(pf, tmp_path):
    a = tmp_path / "a.csv"
    rows = ["c1-pr,bf16,m1-n1-k1,1,1,1.2000,,t", "c4-pr,tf32,m1-n1-k1,1,1,0.9000,,t",
            "c1-pr,tf32,m1-n1-k1,1,1,0.5000,,t"]
    a.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n" +
                 "\n".join(rows) + "\n")
    lines = pf.sets_targets({"bf16": (a, "c1-pr"), "tf32": (a, "c4-pr")}, {
        "tf32": ((a, "x"), (a, "x-{set}")), "bf16": ((a, "x"), (a, "x-{set}"))}).splitlines()
    assert lines[0] == "| set | tf32 | bf16 |" and lines[3] == "| pr | 0.900 | 1.200 |"


def test_k_loop_groups_sorts_an_ab_by_how_the_tiled_kernel_walks_k(pf, tmp_path):
    a = tmp_path / "a.csv"
    rows = ["c1-x,bf16,m144-n192-k400,1,1,0.9,ab:1.2000,64x64x64 g8 s4 w4",
            "c1-x,bf16,m8-n8-k4096,1,1,0.9,ab:0.9000,tma 64x64x64 g8 s4 w4 k4",
            "c1-x,tf32,m8-n8-k1503,1,1,0.9,ab:0.7000,64x64x32 g8 s4 w4 k4",
            "c1-x,tf32,m8-n8-k1504,1,1,0.9,ab:1.1000,64x64x64 g8 s4 w4 k4",
            "c2-y,tf32,m8-n8-k1504,1,1,0.9,ab:9.0000,64x64x64 g8 s4 w4 k4"]
    a.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n" +
                 "\n".join(rows) + "\n")
    lines = pf.k_loop_groups(a, "c1-").splitlines()[2:]
    assert lines == [
        "| one range, partial last block, K a multiple of 16 | 1 | 1.200 | 1.200 | 1.200 |",
        "| split-K, partial last block, K a multiple of 16 | 1 | 1.100 | 1.100 | 1.100 |",
        "| split-K, partial last block, K not a multiple of 16 | 1 | 0.700 | 0.700 | 0.700 |",
        "| split-K, whole blocks, K a multiple of 16 | 1 | 0.900 | 0.900 | 0.900 |"]


def test_variant_medians_takes_each_variants_median_over_repeats_fastest_first(pf, tmp_path):
    a = tmp_path / "x.csv"
    a.write_text("shape,mode,rep,variant,us,tflops,ratio\n"
                 "s1,bf16,0,pick,10,1,0.8\ns1,bf16,1,pick,12,1,0.7\ns1,bf16,2,pick,11,1,0.9\n"
                 "s1,bf16,0,t2,8,1,1.1\ns2,bf16,0,pick,5,1,1.0\n")
    assert pf.variant_medians(a).splitlines()[2:] == [
        "| s1 | t2 | 8.00 | 1.100 | 1 |", "| s1 | pick | 11.00 | 0.800 | 3 |",
        "| s2 | pick | 5.00 | 1.000 | 1 |"]


def test_inductor_summary_counts_and_names_the_cases_inductor_wins(pf, tmp_path):
    a = tmp_path / "c.csv"
    rows = ["L,bf16,m1-n1-k1,1,1,1.1,inductor:1.2000,t",
            "L,bf16,m2-n2-k2,1,1,0.9,inductor:0.9500,t",
            "L,fp16,m1-n1-k1,1,1,1.0,inductor:1.0000,t", "M,bf16,m3-n3-k3,1,1,1.0,inductor:0.5,t",
            "L,bf16,m4-n4-k4,1,1,1.0,,t"]
    a.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n" +
                 "\n".join(rows) + "\n")
    assert pf.inductor_summary(a, "L").splitlines()[2:] == [
        "| bf16 | 2 | 0.995 | 1.068 | 1 | m2-n2-k2 0.950 |",
        "| fp16 | 1 | 1.000 | 1.000 | 1 | - |"]


def test_moved_ab_judges_the_moved_picks_against_the_runs_unmoved_cases(pf, tmp_path):
    cases, moved = tmp_path / "c.csv", tmp_path / "m.csv"
    cases.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n"
                     "L,bf16,m1-n1-k1,1,1,1,ab:0.8000,t\nL,bf16,m2-n2-k2,1,1,1,ab:1.2500,t\n"
                     "L,bf16,m3-n3-k3,1,1,1,ab:1.0100,t\nL,fp8,m3-n3-k3,1,1,1,ab:0.9900,t\n"
                     "M,bf16,m1-n1-k1,1,1,1,ab:2.0000,t\n")
    moved.write_text("set,mode,case,old,new,predicted\n"
                     "s,bf16,m1-n1-k1,a,b,1.2\ns,bf16,m2-n2-k2,a,c,1.2\ns,fp8,m9-n9-k9,a,b,1.5\n")
    assert pf.moved_ab(cases, "L", moved).splitlines()[2:] == [
        "| bf16 | 2 | 1.200 | 1.000 | 0.800 | 1.250 | 1 | 1 | 1.010 | 1.010–1.010 |",
        "| all | 2 | 1.200 | 1.000 | 0.800 | 1.250 | 1 | 2 | 1.000 | 0.990–1.010 |"]
    assert pf.moved_worst(cases, "L", moved, 1).splitlines()[2:] == [
        "| s | bf16 | m1-n1-k1 | a | b | 1.200 | 0.800 |"]


def test_call_parts_pivots_a_runs_first_call_steps(pf, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("run,shape,mode,part,ms,calls\nR,1x1x1,bf16,resolve,0.2,1\n"
                    "R,1x1x1,bf16,jit,1.5,3\nR,2x2x2,bf16,resolve,0.3,1\n"
                    "S,1x1x1,bf16,resolve,9,1\n")
    assert pf.call_parts(path, "R").splitlines() == [
        "| shape | mode | resolve | jit |", "|---|---|---:|---:|",
        "| 1x1x1 | bf16 | 0.200 | 1.500 (3) |", "| 2x2x2 | bf16 | 0.300 | - |"]



def test_first_calls_ab_leaves_a_processs_first_shape_out_and_judges_the_target(pf, tmp_path):
    """Each run's first call less its compilation per shape, the median second call, and
    the target (within twice it) judged on the `new` runs alone."""
    path = tmp_path / "f.csv"
    head = "run,shape,mode,first_call_ms,compile_ms,second_call_ms\n"
    rows = ["warmup-bf16,9x9x9,bf16,100,99,0.1"]   # another run: left out
    for run, first in (("ref1", 0.9), ("new1", 0.3), ("ref2", 0.8), ("new2", 0.35)):
        rows += [f"{run}-bf16,1x1x1,bf16,500,400,0.1",   # each process's first shape
                 f"{run}-bf16,2x2x2,bf16,{first + 2},2,0.2",
                 f"{run}-bf16,3x3x3,bf16,{first},0,0.1"]
    path.write_text(head + "\n".join(rows) + "\n")
    assert pf.first_calls_ab(path, "bf16").splitlines() == [
        "| shape | ref1-bf16 ms | new1-bf16 ms | ref2-bf16 ms | new2-bf16 ms | second call ms "
        "| target ms | met by new |", "|---|---:|---:|---:|---:|---:|---:|---|",
        "| 2x2x2 | 0.90 | 0.30 | 0.80 | 0.35 | 0.20 | 0.40 | yes |",
        "| 3x3x3 | 0.90 | 0.30 | 0.80 | 0.35 | 0.10 | 0.20 | no |"]


def test_parts_ab_splits_each_trees_parts_by_whether_a_kernel_was_compiled(pf, tmp_path):
    path = tmp_path / "p.csv"
    rows = []
    for run in ("ref1", "new1"):
        for shape, compile_ms, lookup in (("1x1x1", 300, 9), ("2x2x2", 2.0, 0.4),
                                          ("3x3x3", 0.0, 0.3)):
            scale = 0.5 if run == "new1" else 1.0
            rows += [f"{run}-bf16,{shape},bf16,lookup,{lookup * scale},1",
                     f"{run}-bf16,{shape},bf16,compile,{compile_ms},1"]
    path.write_text("run,shape,mode,part,ms,calls\n" + "\n".join(rows) + "\n")
    assert pf.parts_ab(path, "bf16", ("lookup",)).splitlines() == [
        "| mode | part | ref, compiled | ref, none compiled | new, compiled | "
        "new, none compiled |", "|---|---|---:|---:|---:|---:|",
        "| bf16 | lookup | 0.400 | 0.300 | 0.200 | 0.150 |"]


def test_moved_ab_takes_the_predicted_picks_only_and_can_leave_controls_out(pf, tmp_path):
    cases, moved = tmp_path / "c.csv", tmp_path / "m.csv"
    cases.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n"
                     "L,bf16,m1-n1-k1,1,1,1,ab:0.8000,t\nL,bf16,m2-n2-k2,1,1,1,ab:1.2500,t\n"
                     "L,bf16,m3-n3-k3,1,1,1,ab:1.0100,t\n")
    moved.write_text("set,mode,case,old,new,predicted\n"
                     "s,bf16,m1-n1-k1,a,b,1.44\ns,bf16,m2-n2-k2,a,c,-\n")
    assert pf.moved_ab(cases, "L", moved, controls=False).splitlines() == [
        "| mode | moved | predicted | A/B geomean | A/B min | A/B max | faster |",
        "|---|---:|---:|---:|---:|---:|---:|",
        "| bf16 | 2 | 1.440 (1) | 1.000 | 0.800 | 1.250 | 1 |",
        "| all | 2 | 1.440 (1) | 1.000 | 0.800 | 1.250 | 1 |"]
    assert pf.moved_worst(cases, "L", moved, 1).splitlines()[2:] == [
        "| s | bf16 | m1-n1-k1 | a | b | 1.440 | 0.800 |"]
    assert "| - | 1.250 |" in pf.moved_worst(cases, "L", moved, 2)


def test_on_off_gives_each_shapes_medians_and_its_rounds_spread(pf, tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("call,shape,mode,round,on_us,off_us\n2,a,bf16,1,80,100\n"
                    "2,a,bf16,2,90,90\n2,a,bf16,3,50,100\n2,b,bf16,1,10,10\n")
    assert pf.on_off(path).splitlines()[2:] == [
        "| a | bf16 | 3 | 80.0 | 100.0 | 0.500 | 0.800 | 1.000 |",
        "| b | bf16 | 1 | 10.0 | 10.0 | 1.000 | 1.000 | 1.000 |"]


def test_occupancy_best_names_the_pick_and_each_occupancys_best_tile(pf, tmp_path):
    path = tmp_path / "o.csv"
    path.write_text("shape,mode,tile,pick,us_1,ratio_1,us_2,ratio_2,speedup_2\n"
                    "s,bf16,t1,yes,10,0.70,10,0.70,1.0\ns,bf16,t2,,12,0.60,8,0.90,1.5\n"
                    "s,bf16,t3,,9,0.75,11,0.65,0.8\n")
    assert pf.occupancy_best(path).splitlines()[2:] == [
        "| s | bf16 | t1 | 0.700 | t3 | 0.750 | t2 | 0.900 |"]


def test_variant_best_takes_each_variants_fastest_tile_with_the_l2_flushed(pf, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("shape,mode,flush,provider,us,tflops,ratio\n"
                    "s,bf16,1,pick tma:a,12,1,0.80\ns,bf16,1,tma:a,12,1,0.80\n"
                    "s,bf16,1,tma:b,11,1,0.90\ns,bf16,1,tma_band:a:k4,13,1,0.75\n"
                    "s,bf16,1,vendor,10,1,1.00\ns,bf16,0,tma:c,5,1,1.50\n")
    assert pf.variant_best(path, ("tma", "tma_band", "tma_wide")).splitlines()[2:] == [
        "| s | bf16 | 10.0 | 0.80 | b | 0.90 | a:k4 | 0.75 | - | - |"]


def test_ncu_table_heads_the_metrics_short_and_keeps_the_labels_asked(pf, tmp_path):
    path = tmp_path / "ncu.csv"
    path.write_text(
        "label,shape,mode,provider,kernel,launches,gpu__time_duration.sum,"
        "sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,"
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio\n"
        "a,64x64x64,bf16,pick,_tma_kernel_with_a_very_long_name_indeed,2,179.024,284421.9,"
        "94.013,1.688\n"
        "b,64x64x64,bf16,vendor,nvjet,2,176.3,281338.4,94.96,1.568\n")
    got = pf.ncu_table(path, ("a",)).splitlines()
    assert got[0] == ("| label | shape | provider | kernel | us | cycles | tensor pipe % "
                      "| stall wait |")
    assert got[2] == ("| a | 64x64x64 | pick | _tma_kernel_with_a_very_long | 179.0 | 284422 "
                      "| 94.0 | 1.69 |")
    assert len(got) == 3
    assert len(pf.ncu_table(path).splitlines()) == 4


TILES = """\
label,shape,mode,flush,provider,us,tflops,ratio
a,7904x384x3744,bf16,1,tma:128x256x64:s3:w8,49.8,457.9,0.75
a,7904x384x3744,bf16,1,tma_wide:128x192x64:s4:w8,45.7,500.0,0.81
a,7904x384x3744,bf16,0,tma_wide:128x192x64:s4:w8,40.0,500.0,0.90
b,7904x384x3744,bf16,1,tma_wide:128x192x64:s4:w8,42.1,540.0,0.88
a,4096x4096x4096,bf16,1,tma:128x256x64:s3:w8,178.5,770.0,0.99
a,4096x4096x4096,bf16,1,tma_wide:128x192x64:s4:w8,228.8,600.0,0.77
"""


def test_label_pairs_sets_one_tile_beside_itself_in_two_calls(pf, tmp_path):
    path = tmp_path / "tiles.csv"
    path.write_text(TILES)
    got = pf.label_pairs(path, "a", "b", "tma_wide").splitlines()
    assert got[2:] == ["| 7904x384x3744 | bf16 | tma_wide:128x192x64:s4:w8 | 45.7 | 42.1 | 0.921 |"]


def test_block_ratios_price_a_block_of_the_child_against_its_parent(pf, tmp_path):
    path = tmp_path / "tiles.csv"
    path.write_text(TILES)
    got = pf.block_ratios(path, "tma:128x256x64:s3:w8", "tma_wide:128x192x64:s4:w8", "a")
    rows = got.splitlines()[2:]
    # 7904 x 384: one tile a program each way (124 of each), 59 blocks of 64
    assert rows[0] == "| 7904x384x3744 | bf16 | 49.8 | 59 | 45.7 | 59 | 0.918 |"
    # 4096^3: 512 tiles of 128x256 (4 a busiest SM), 704 of 128x192 (6)
    assert rows[1] == "| 4096x4096x4096 | bf16 | 178.5 | 256 | 228.8 | 384 | 0.855 |"


CASES = """\
label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile,accuracy,runs
c3-bf16,bf16,m1-n2-k3,1,1,0.89,ab:1.18,tma_wide 128x192x64 g8 s4 w8,pass,1
c3-bf16,bf16,m4-n5-k6,1,1,5.42,ab:1.00,tma 128x256x64 g8 s3 w8,pass,1
c3-fp16,fp16,m1-n2-k3,1,1,0.90,ab:0.97,tma_wide 128x192x64 g8 s4 w8,pass,1
c4-bf16,bf16,m1-n2-k3,1,1,0.90,ab:2.00,tma 64x64x64 g8 s4 w4,pass,1
"""


def test_ab_changes_lists_the_cases_outside_a_range_and_ab_rows_every_case(pf, tmp_path):
    path = tmp_path / "cases.csv"
    path.write_text(CASES)
    moved = pf.ab_changes(path, "c3-", 0.98, 1.02).splitlines()[2:]
    assert [r.split(" | ")[:5] for r in moved] == [["| bf16", "bf16", "m1-n2-k3", "0.89",
                                                     "1.180"],
                                                    ["| fp16", "fp16", "m1-n2-k3", "0.90",
                                                     "0.970"]]
    every = pf.ab_rows(path, "c3-").splitlines()[2:]
    assert len(every) == 3 and "m4-n5-k6" in every[2]


def test_pick_and_best_takes_the_fastest_named_tile_and_geomeans_the_flushed_rows(pf, tmp_path):
    path = tmp_path / "tiles.csv"
    path.write_text(
        "shape,mode,flush,provider,us,tflops,ratio\n"
        "1x1x1,bf16,1,pick tma:a,10,1,0.5\n1x1x1,bf16,1,tma:b,5,1,1.0\n"
        "1x1x1,bf16,1,tma:c,8,1,0.625\n1x1x1,bf16,1,vendor,5,1,1.0\n"
        "1x1x1,bf16,0,tma:c,1,1,9.0\n"                       # L2 warm: not read
        "2x2x2,bf16,1,pick tma:a,4,1,2.0\n2x2x2,bf16,1,tma:b,8,1,1.0\n"
        "2x2x2,bf16,1,vendor,8,1,1.0\n")
    assert pf.pick_and_best(path).splitlines()[2:] == [
        "| 1x1x1 | bf16 | 5 | tma:a | 0.500 | tma:b | 1.000 |",
        "| 2x2x2 | bf16 | 8 | tma:a | 2.000 | tma:b | 1.000 |",   # the pick was faster
        "| geomean | | | | 1.000 | pick or fastest named | 1.414 |"]


def test_tile_matrix_has_a_column_a_tile_and_geomeans_what_each_ran(pf, tmp_path):
    path = tmp_path / "tiles.csv"
    path.write_text(
        "shape,mode,flush,provider,us,tflops,ratio\n"
        "1x1x1,bf16,1,pick tma:a,10,1,0.5\n1x1x1,bf16,1,tma:b,5,1,2.0\n"
        "1x1x1,bf16,1,vendor,5,1,1.0\n1x1x1,bf16,0,tma:b,1,1,9.0\n"   # L2 warm: not read
        "2x2x2,bf16,1,pick tma:b,4,1,2.0\n2x2x2,bf16,1,vendor,8,1,1.0\n")
    assert pf.tile_matrix(path).splitlines() == [
        "| shape | pick | tma:b |", "|---|---:|---:|",
        "| 1x1x1 | 0.500 | 2.000 |",
        "| 2x2x2 | 2.000 | - |",                 # the named tile failed here: not counted
        "| geomean | 1.000 | 2.000 |"]


def test_moved_forms_groups_each_draws_picks_by_old_and_new_form(pf, tmp_path):
    cases, moved = tmp_path / "c.csv", tmp_path / "m.csv"
    cases.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n"
                     "P-r1,bf16,m1-n1-k1,1,1,1,ab:0.8000,t\nP-r2,bf16,m1-n1-k1,1,1,1,ab:1.2500,t\n"
                     "P-r1,fp16,m2-n2-k2,1,1,1,ab:2.0000,t\nQ-r1,bf16,m3-n3-k3,1,1,1,ab:9.0,t\n")
    moved.write_text("set,mode,case,old,new,predicted\n"
                     "r1,bf16,m1-n1-k1,tma 1x1x1 g8 [A],wide 2x2x2 g8,1.2\n"
                     "r2,bf16,m1-n1-k1,tma 1x1x1 g8,wide 2x2x2 g8 s3,1.2\n"
                     "r1,fp16,m2-n2-k2,tma 1x1x1,tall 3x3x3,-\n"
                     "r1,bf16,m3-n3-k3,tma 1x1x1,tall 3x3x3,1.0\n")   # not run under P-
    assert pf.moved_forms(cases, "P-", moved).splitlines()[2:] == [
        "| tma 1x1x1 | wide 2x2x2 | 2 | 1.200 | 1.000 | 0.800 | 1 |",
        "| tma 1x1x1 | tall 3x3x3 | 1 | - | 2.000 | 2.000 | 1 |",
        "| all |  | 3 | 1.200 (2) | 1.260 | 0.800 | 2 |"]
    with pytest.raises(ValueError, match="no moved pick joins"):
        pf.moved_forms(cases, "Z-", moved)


def test_alignment_split_parts_a_runs_cases_by_the_alignment_of_their_dimensions(pf, tmp_path):
    cases = tmp_path / "c.csv"
    cases.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n"
                     "L,bf16,m16-n32-k64,1,1,0.5,,t\nL,bf16,m16-n32-k64-rc,1,1,2.0,,t\n"
                     "L,bf16,m8-n32-k64,1,1,1.3,,t\nL,bf16,m7-n32-k64,1,1,0.9,,t\n"
                     "M,bf16,m7-n32-k64,1,1,9.0,,t\n")
    assert pf.alignment_split(cases, "L").splitlines()[2:] == [
        "| bf16 | multiples of 16 | 2 | 1.000 | 1 | 1 | m16-n32-k64 0.50 |",
        "| bf16 | multiples of 8 | 1 | 1.300 | 1 | 0 | m8-n32-k64 1.30 |",
        "| bf16 | other | 1 | 0.900 | 0 | 0 | m7-n32-k64 0.90 |"]
