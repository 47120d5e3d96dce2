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
    lowest = pf.targets_table({"pr": {"bf16": (a, "c1-pr"), "fp8": (b, "c9-pr")},
                               "nightly": {"bf16": (a, "none")}}, lowest=True).splitlines()
    assert lowest[3:] == ["| pr | 1.100 (1.000) | 0.900 (0.900) |", "| nightly |  |  |"]
    a.write_text("\n".join([head, "c1-pr,bf16,m1-n1-k1,1,1,1.2100,,t",   # the lowest second
                            "c1-pr,bf16,m2-n2-k2,1,1,0.7990,,t"]) + "\n")
    assert "| pr | 0.983 (0.799) |" in pf.targets_table({"pr": {"bf16": (a, "c1-pr")}},
                                                        lowest=True)


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


def test_tile_matrix_takes_one_calls_rows_of_a_labelled_file(pf, tmp_path):
    path = tmp_path / "tiles.csv"
    path.write_text("label,shape,mode,flush,provider,us,tflops,ratio\n"
                    "call2,8x8x8,fp16,1,tma:64x128x128:s4:w4,2.0,1,0.5000\n"
                    "call3,8x8x8,fp16,1,tma:64x128x128:s4:w4,1.0,1,0.9000\n"
                    "call3,8x8x8,fp16,1,vendor,0.9,1,1.0000\n")
    lines = pf.tile_matrix(path, "1", "call3").splitlines()
    assert lines[2] == "| 8x8x8 | 0.900 |" and len(lines) == 4


def test_kernel_times_sets_cublas_kernels_beside_ours_per_shape(pf, tmp_path):
    path = tmp_path / "kernels.csv"
    path.write_text("shape,mode,provider,tile,kernel,device_us\n"
                    "8x8x8,bf16,triton,tma 64x64x64 s4 w4,_tma_kernel,3.0\n"
                    "8x8x8,bf16,vendor,,nvjet_a,1.5\n"
                    "8x8x8,bf16,vendor,,splitk_reduce,0.5\n"
                    "9x9x9,bf16,triton,t,_k,1.0\n")               # no vendor row: left out
    assert pf.kernel_times(path).splitlines()[2:] == [
        "| 8x8x8 | bf16 | tma 64x64x64 s4 w4 | 3.00 | nvjet_a + splitk_reduce | 2.00 | 1.50 |"]


def test_plan_times_sets_each_tree_beside_the_last_per_state_and_mode(pf, tmp_path):
    path = tmp_path / "plan_time.csv"
    path.write_text("state,tree,sha,mode,shapes,rounds,best_us,median_us,table_hits\n"
                    "steady,ref a,aaa,bf16,200,6,200.0,210.0,5\n"
                    "steady,tree,bbb,bf16,200,6,100.0,101.0,5\n"
                    "cold,ref a,aaa,bf16,8,12,300.0,320.0,4\n"
                    "cold,tree,bbb,bf16,8,12,200.0,230.0,4\n")
    assert pf.plan_times(path).splitlines()[2:] == [
        "| steady | bf16 | ref a | aaa | 200.0 | 210.0 | 200 x 6 | 5 | x2.00 |",
        "| steady | bf16 | tree | bbb | 100.0 | 101.0 | 200 x 6 | 5 | x1.00 |",
        "| cold | bf16 | ref a | aaa | 300.0 | 320.0 | 8 x 12 | 4 | x1.50 |",
        "| cold | bf16 | tree | bbb | 200.0 | 230.0 | 8 x 12 | 4 | x1.00 |"]


def test_tile_kernels_lists_each_providers_kernel_and_resources(pf, tmp_path):
    path = tmp_path / "k.csv"
    path.write_text("label,shape,mode,provider,kernel,grid,block,registers,smem,occupancy,us\n"
                    "r,8x8x8,bf16,vendor,nvjet_x,2x65x1,384x1x1,168,210172,0,4.0\n")
    assert pf.tile_kernels(path).splitlines()[2:] == [
        "| 8x8x8 | vendor | nvjet_x | 2x65x1 | 384x1x1 | 168 | 205 | 4.00 |"]


def test_call_audit_summarises_functions_and_groups_flagged_kernels(pf, tmp_path):
    summary, flagged = tmp_path / "s.csv", tmp_path / "f.csv"
    summary.write_text("kernel,kernels,calls,max_shared,max_registers,spilling,serialized,"
                       "refused\n_tma_kernel,3,9,232448,255,2,0,0\n")
    flagged.write_text(
        "kernel,warps,stages,shared,registers,spill_stores,k_loop_spills,serialized,asked,"
        "resident,verdict,calls,first_call,constexprs\n"
        "_tma_kernel,4,3,49168,255,520,165,0,1,1,ok,2,fp32 m1-n1-k1 a,X=1\n"
        "_tma_kernel,4,3,49168,255,480,0,0,1,1,ok,1,fp32 m2-n2-k2 b,X=2\n"
        "_split,8,5,163880,90,0,,1,,1,ok,2,bf16 m3-n3-k3-rc c,\n")
    lines = pf.call_audit(summary, flagged).splitlines()
    assert lines[2] == "| _tma_kernel | 3 | 9 | 227.0 | 255 | 2 | 0 | 0 |"
    assert lines[6:] == [
        "| _tma_kernel | 4 | 3 | 48.0 | 255 | ok |  | 480-520 | 0-165 | 1 / 1 | 2 | 3 | "
        "fp32 m1-n1-k1 a |",
        "| _split | 8 | 5 | 160.0 | 90 | ok | yes |  |  |  | 1 | 2 | bf16 m3-n3-k3-rc c |"]


def test_call_audit_versions_pairs_each_gemm_tile_across_triton_versions(pf, tmp_path):
    head = ("kernel,warps,stages,shared,registers,spill_stores,k_loop_spills,serialized,"
            "asked,resident,verdict,calls,first_call,constexprs\n")
    old, new = tmp_path / "a.csv", tmp_path / "b.csv"
    old.write_text(head + "_tma_kernel,4,3,1,96,0,,0,,1,ok,1,c,BLOCK_K=32 BLOCK_M=64 "
                   "BLOCK_N=64\n_copy_kernel,4,3,1,32,0,,0,,1,ok,1,c,BLOCK_R=64 BLOCK_C=64\n")
    new.write_text(head + "_tma_kernel,4,3,1,255,520,165,0,,1,ok,1,c,BLOCK_M=64 BLOCK_N=64 "
                   "BLOCK_K=32\n_tma_kernel,4,3,1,255,480,150,0,,1,ok,1,d,BLOCK_M=64 "
                   "BLOCK_N=64 BLOCK_K=32\n_tiled_kernel,8,4,1,170,0,0,0,,1,ok,1,e,"
                   "BLOCK_M=128 BLOCK_N=128 BLOCK_K=32 SPLIT=1\n")
    lines = pf.call_audit_versions({"3.6": old, "3.9": new}).splitlines()
    assert lines[0] == ("| kernel | tile | warps | stages | 3.6 registers | 3.6 K-loop spills "
                        "| 3.9 registers | 3.9 K-loop spills | kernels |")
    assert lines[2:] == ["| _tiled_kernel | 128x128x32 | 8 | 4 |  |  | 170 | 0 | 0 / 1 |",
                         "| _tma_kernel | 64x64x32 | 4 | 3 | 96 | 0 | 255 | 150-165 | 1 / 2 |"]


def test_first_calls_judge_the_tree_named_against_twice_its_second_call(pf, tmp_path):
    calls, parts = tmp_path / "c.csv", tmp_path / "p.csv"
    head = "tree,shape,mode,own_ms,second_call_ms\n"
    calls.write_text(head + "new,1x1x1,bf16,9.0,0.1\nnew,8x8x8,bf16,0.15,0.1\n"
                     "new,9x9x9,bf16,0.5,0.1\nold,1x1x1,bf16,9.0,0.1\nold,8x8x8,bf16,0.3,0.1\n"
                     "old,9x9x9,bf16,0.7,0.1\n")
    parts.write_text("tree,shape,mode,part,ms,calls\nnew,1x1x1,bf16,lookup,9.0,1\n"
                     "new,8x8x8,bf16,lookup,0.2,1\nnew,9x9x9,bf16,lookup,0.4,1\n"
                     "old,8x8x8,bf16,lookup,0.5,1\n")
    lines = pf.first_calls(calls, parts, "new").splitlines()
    assert lines[0] == ("| shape | mode | old own ms | new own ms | second call ms | "
                        "target ms | met |")
    assert lines[2:4] == ["| 8x8x8 | bf16 | 0.300 | 0.150 | 0.100 | 0.200 | yes |",
                          "| 9x9x9 | bf16 | 0.700 | 0.500 | 0.100 | 0.200 | no |"]
    assert lines[-1] == "| bf16 | lookup | 0.500 | 0.300 |"   # the first shape left out


def test_host_calls_gives_each_trees_excess_over_its_reference_in_the_same_run(pf, tmp_path):
    """Per mode: the reference's us a call (the first run's), this tree's before and
    after, each against the reference timed in its own run, signed (a tree faster than
    its reference reads -, not +-)."""
    head = "state,tree,sha,mode,shapes,rounds,best_us,median_us,table_hits\n"
    before, after = tmp_path / "before.csv", tmp_path / "after.csv"
    before.write_text(head + "eager,ref r,rrrrrrrr,bf16,13,7,5.7,5.8,0\n"
                      "eager,tree,tttt,bf16,13,7,7.4,7.5,0\n")
    after.write_text(head + "eager,ref r,rrrrrrrr,bf16,13,7,6.0,6.1,0\n"
                     "eager,tree,uuuu,bf16,13,7,5.5,5.6,0\n")
    assert pf.host_calls(before, after).splitlines()[2:] == [
        "| bf16 | rrrrrrr | 5.7 | 7.4 | +1.7 | 5.5 | -0.5 |"]


def test_accum_model_sets_the_measured_error_beside_each_splits_prediction(pf, tmp_path):
    """Per K: each chip's measured Triton error (its default rows; '-' where no shape has
    that K), then the model's per split, bold past fp8's max_error."""
    model, meas = tmp_path / "model.csv", tmp_path / "accum.csv"
    model.write_text("k,split,bits,chunk,error\n4096,1,11,32,2.4e-3\n4096,2,11,32,2.0e-3\n"
                     "65536,1,11,32,6.9e-3\n65536,2,11,32,4.9e-3\n")
    meas.write_text("shape,mode,provider,promote,error,block_error,excess,ms,tflops\n"
                    "64x64x4096,fp8,triton,default,2.1e-3,0,0,1,1\n"
                    "64x64x4096,fp8,triton,block,1.6e-3,0,0,1,1\n"
                    "64x64x4096,fp8,cublas,default,1.6e-3,0,0,1,1\n")
    lines = pf.accum_model(model, ("H200", meas)).splitlines()
    assert lines[0] == "| K | H200 measured | model, split 1 | model, split 2 |"
    assert lines[2:4] == ["| 4096 | 2.10e-03 | 2.40e-03 | 2.00e-03 |",
                          "| 65536 | - | **6.90e-03** | 4.90e-03 |"]
    assert "11 bits" in lines[-1]


def test_split_prices_lists_each_shapes_splits_as_priced(pf, tmp_path):
    path = tmp_path / "price.csv"
    path.write_text("shape,pick,tile,split,ms,speed\n"
                    "64x64x65536,tma 64x64x64 g8 s4 w4,64x64x64:s4:w4,2,0.5,0.900\n")
    assert pf.split_prices(path).splitlines()[2] == \
        "| 64x64x65536 | tma 64x64x64 g8 s4 w4 | 2 | 0.5 | 0.900 |"


def test_accum_fit_sets_each_chips_fit_side_by_side(pf, tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("bits,geomean,min,max,ks\n11,1.056,0.950,1.132,1024\n12,0.722,0.5,0.9,1024\n")
    b.write_text("bits,geomean,min,max,ks\n11,1.065,0.950,1.243,1024\n")
    assert pf.accum_fit(("H200", a), ("H100", b)).splitlines()[2:] == [
        "| 11 | 1.056 | 0.950-1.132 | 1.065 | 0.950-1.243 |",
        "| 12 | 0.722 | 0.5-0.9 | - | - |"]


def test_provider_cases_gives_both_ratios_and_counts_the_faster(pf, tmp_path):
    path = tmp_path / "cases.csv"
    path.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n"
                    "c8,bf16,m1-n1-k1,1,1,0.9000,inductor:1.2100 xs_triton:1e-05,t1\n"
                    "c8,bf16,m2-n2-k2,1,1,1.0000,inductor:0.8100,t2\n"
                    "c9,bf16,m3-n3-k3,1,1,1.0000,inductor:0.5000,t3\n")
    lines = pf.provider_cases(path, "c8", "inductor").splitlines()
    assert lines[0] == "| case | mode | tile | Triton/cuBLAS | Triton/inductor |"
    assert lines[2:] == ["| m1-n1-k1 | bf16 | t1 | 0.900 | 1.210 |",
                         "| m2-n2-k2 | bf16 | t2 | 1.000 | 0.810 |",
                         "| geomean (1 of 2 faster than inductor) | | | 0.949 | 0.990 |"]
    with pytest.raises(ValueError, match="no case labelled c7"):
        pf.provider_cases(path, "c7", "inductor")


def test_block_excess_gives_each_modes_largest_block_and_its_whole(pf, tmp_path):
    path = tmp_path / "cases.csv"
    path.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n"
                    "x,bf16,m1-n1-k1,1,1,1.0,xs_triton:2.00e-04 bx_triton:6.00e-04 "
                    "xs_vendor:2.00e-04 bx_vendor:4.00e-04,t\n"
                    "x,bf16,m2-n2-k2,1,1,1.0,xs_triton:1.00e-05 bx_triton:1.00e-04,t\n"
                    "x,fp16,m1-n1-k1,1,1,1.0,xs_triton:1.00e-04,t\n"
                    "y,bf16,m3-n3-k3,1,1,1.0,xs_triton:1.00e-04 bx_triton:9.00e-03,t\n")
    lines = pf.block_excess(path, "x").splitlines()
    assert lines[2:] == ["| bf16 | 3 | 6.00e-04 | triton m1-n1-k1 | 2.00e-04 | 10.0 |"]


def test_worst_elements_gives_each_providers_largest_and_its_margin(pf, tmp_path):
    path = tmp_path / "cases.csv"
    path.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n"
                    "a,bf16,m1-n1-k1,1,1,1.0,el_triton:2.00e-02 el_vendor:1.00e-02,t\n"
                    "b,bf16,m2-n2-k2,1,1,1.0,el_triton:5.00e-02 el_vendor:0.00e+00,t\n"
                    "a,fp8,m3-n3-k3,1,1,1.0,el_triton:1.00e-01,t\n"
                    "c,fp8,m4-n4-k4,1,1,1.0,el_triton:2.00e-01,t\n")
    lines = pf.worst_elements(path, ("a", "b"), 0.25).splitlines()
    assert lines[2:] == ["| bf16 | triton | 2 | 5.00e-02 | m2-n2-k2 | 5.0x |",
                         "| bf16 | vendor | 2 | 1.00e-02 | m1-n1-k1 | 25.0x |",
                         "| fp8 | triton | 1 | 1.00e-01 | m3-n3-k3 | 2.5x |"]
    with pytest.raises(ValueError, match="no element figure under d, e"):
        pf.worst_elements(path, ("d", "e"), 0.25)


def test_the_power_table_names_each_level_as_trials_does(pf, tmp_path):
    """Levels as percentages with their decimals: as whole percents, 0.5% read "0%" (and
    its misses "missed at 0%"), 1.5% and 2.5% both "2%"."""
    from gemmgate.trials import power, read_csv

    extra = "".join(f"check_{i}_{lv},{lv},bf16,m1,unchanged\n"
                    for i, lv in enumerate((0.005, 0.015, 0.025), 5))
    path = tmp_path / "checks.csv"
    path.write_text(CSV + extra)
    rows = read_csv(path)
    table = pf.power_table([("", power(rows))])
    firsts = [line.split(" | ")[0] for line in table.splitlines()[2:]]
    assert firsts == ["| 0% (A/A: false alarms)", "| 0.5%", "| 1.5%", "| 2.5%", "| 3%"]
    assert "| 3% | 2 | 3 | 2 | **66.7%** |" in table   # (the failed case check: unjudged)
    wrong = pf.wrong_cases(rows)
    assert "missed at 0.5%:" in wrong and "missed at 0%" not in wrong
    assert "false alarms at 0%:\n  bf16-m2: 1" in wrong


def test_tuned_against_lookup_pairs_rows_by_mode_and_case(pf, tmp_path):
    """A run of two modes has two rows a case: keyed by case alone, one mode's lookup row
    was paired with it and the other's lost (the table said 3 cases of 6)."""
    f = tmp_path / "c.csv"
    head = "label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile"
    f.write_text("\n".join([head, "look,bf16,m1-n1-k1,1,1,0.8000,,a",
                            "look,fp16,m1-n1-k1,1,1,0.5000,,b",
                            "tune,bf16,m1-n1-k1,1,1,0.9600,,c",
                            "tune,fp16,m1-n1-k1,1,1,1.0000,,d"]) + "\n")
    lines = pf.tuned_against_lookup(f, "look", "tune").splitlines()
    assert lines[2:] == ["| m1-n1-k1 | bf16 | a | 0.800 | c | 0.960 | x1.200 |",
                         "| m1-n1-k1 | fp16 | b | 0.500 | d | 1.000 | x2.000 |",
                         "| geomean (2) | | | 0.632 | | 0.980 | x1.549 |"]
