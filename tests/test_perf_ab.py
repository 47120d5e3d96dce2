"""scripts/perf_ab.py: the A/B tables (a change's A/B on the picks it moves, or on the
cases it changes, beside the run's other cases) on small synthetic cases.csv and moved or
padded files."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "perf_ab.py"


@pytest.fixture
def pf(load_script):
    return load_script(SCRIPT)


def _ab_files(tmp_path, cases_rows: str, moved_rows: str):
    """An A/B's cases.csv and lookup_diff's moved-picks file, their headers written here,
    their rows each test's own."""
    cases, moved = tmp_path / "c.csv", tmp_path / "m.csv"
    cases.write_text("label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile\n"
                     + cases_rows)
    moved.write_text("set,mode,case,old,new,predicted\n" + moved_rows)
    return cases, moved


def test_moved_ab_judges_the_moved_picks_against_the_runs_unmoved_cases(pf, tmp_path):
    cases, moved = _ab_files(
        tmp_path,
        "L,bf16,m1-n1-k1,1,1,1,ab:0.8000,t\nL,bf16,m2-n2-k2,1,1,1,ab:1.2500,t\n"
        "L,bf16,m3-n3-k3,1,1,1,ab:1.0100,t\nL,fp8,m3-n3-k3,1,1,1,ab:0.9900,t\n"
        "M,bf16,m1-n1-k1,1,1,1,ab:2.0000,t\n",
        "s,bf16,m1-n1-k1,a,b,1.2\ns,bf16,m2-n2-k2,a,c,1.2\ns,fp8,m9-n9-k9,a,b,1.5\n")
    assert pf.moved_ab(cases, "L", moved).splitlines()[2:] == [
        "| bf16 | 2 | 1.200 | 1.000 | 0.800 | 1.250 | 1 | 1 | 1.010 | 1.010–1.010 |",
        "| all | 2 | 1.200 | 1.000 | 0.800 | 1.250 | 1 | 2 | 1.000 | 0.990–1.010 |"]


def test_moved_ab_takes_the_predicted_picks_only_and_can_leave_controls_out(pf, tmp_path):
    cases, moved = _ab_files(
        tmp_path,
        "L,bf16,m1-n1-k1,1,1,1,ab:0.8000,t\nL,bf16,m2-n2-k2,1,1,1,ab:1.2500,t\n"
        "L,bf16,m3-n3-k3,1,1,1,ab:1.0100,t\n",
        "s,bf16,m1-n1-k1,a,b,1.44\ns,bf16,m2-n2-k2,a,c,-\n")
    assert pf.moved_ab(cases, "L", moved, controls=False).splitlines() == [
        "| mode | moved | predicted | A/B geomean | A/B min | A/B max | faster |",
        "|---|---:|---:|---:|---:|---:|---:|",
        "| bf16 | 2 | 1.440 (1) | 1.000 | 0.800 | 1.250 | 1 |",
        "| all | 2 | 1.440 (1) | 1.000 | 0.800 | 1.250 | 1 |"]


TILES = """\
label,shape,mode,flush,provider,us,tflops,ratio
a,7904x384x3744,bf16,1,tma:128x256x64:s3:w8,49.8,457.9,0.75
a,7904x384x3744,bf16,1,tma_wide:128x192x64:s4:w8,45.7,500.0,0.81
a,7904x384x3744,bf16,0,tma_wide:128x192x64:s4:w8,40.0,500.0,0.90
b,7904x384x3744,bf16,1,tma_wide:128x192x64:s4:w8,42.1,540.0,0.88
a,4096x4096x4096,bf16,1,tma:128x256x64:s3:w8,178.5,770.0,0.99
a,4096x4096x4096,bf16,1,tma_wide:128x192x64:s4:w8,228.8,600.0,0.77
"""


CASES = """\
label,mode,case,triton_tflops,vendor_tflops,ratio,extra,tile,accuracy,runs
c3-bf16,bf16,m1-n2-k3,1,1,0.89,ab:1.18,tma_wide 128x192x64 g8 s4 w8,pass,1
c3-bf16,bf16,m4-n5-k6,1,1,5.42,ab:1.00,tma 128x256x64 g8 s3 w8,pass,1
c3-fp16,fp16,m1-n2-k3,1,1,0.90,ab:0.97,tma_wide 128x192x64 g8 s4 w8,pass,1
c4-bf16,bf16,m1-n2-k3,1,1,0.90,ab:2.00,tma 64x64x64 g8 s4 w4,pass,1
"""


def test_moved_forms_groups_each_draws_picks_by_old_and_new_form(pf, tmp_path):
    cases, moved = _ab_files(
        tmp_path,
        "P-r1,bf16,m1-n1-k1,1,1,1,ab:0.8000,t\nP-r2,bf16,m1-n1-k1,1,1,1,ab:1.2500,t\n"
        "P-r1,fp16,m2-n2-k2,1,1,1,ab:2.0000,t\nQ-r1,bf16,m3-n3-k3,1,1,1,ab:9.0,t\n",
        # lookup_diff's picks: a source before the name, operand copies after it; the
        # tiled kernel's names carry no variant word
        "r1,bf16,m1-n1-k1,heuristic tma 128x128x64 g8 s4 w4 [A pitch],"
        "tma_wide 128x288x64 g8 s3 w8,1.2\n"
        "r2,bf16,m1-n1-k1,tma 128x128x64 g8 s5 w8,tma_wide 128x288x64 g8 s3 w8 o2,1.2\n"
        "r1,fp16,m2-n2-k2,64x64x32 g8 s4 w4 k2,tma_tall 320x128x64 g8 s3 w8,-\n"
        "r1,bf16,m3-n3-k3,tma 128x128x64 g8 s4 w4,tma_tall 320x128x64 g8 s3 w8,1.0\n")
    assert pf.moved_forms(cases, "P-", moved).splitlines()[2:] == [
        "| tma 128x128x64 | tma_wide 128x288x64 | 2 | 1.200 | 1.000 | 0.800 | 1 |",
        "| tiled 64x64x32 | tma_tall 320x128x64 | 1 | - | 2.000 | 2.000 | 1 |",
        "| all |  | 3 | 1.200 (2) | 1.260 | 0.800 | 2 |"]
    with pytest.raises(ValueError, match="no moved pick joins"):
        pf.moved_forms(cases, "Z-", moved)


def test_moved_ab_per_set_joins_each_pick_with_its_draws_run(pf, tmp_path):
    cases, moved = _ab_files(
        tmp_path,
        "P-r1,bf16,m1-n1-k1,1,1,1,ab:0.8000,t\nP-r2,bf16,m1-n1-k1,1,1,1,ab:1.2500,t\n"
        "P-r2,tf32,m2-n2-k2,1,1,1,ab:2.0000,t\nP-r2,bf16,m9-n9-k9,1,1,1,ab:1.0,t\n",
        "r1,bf16,m1-n1-k1,a,b,1.1\nr2,bf16,m1-n1-k1,a,b,1.3\n"
        "r2,tf32,m2-n2-k2,a,c,-\nr3,bf16,m1-n1-k1,a,b,1.0\n")   # r3: no run
    rows = pf.moved_ab(cases, "P-", moved, per_set=True).splitlines()
    assert rows[0].endswith("| faster |")                   # no A/A controls per draw
    assert rows[2:] == ["| tf32 | 1 | - | 2.000 | 2.000 | 2.000 | 1 |",
                        "| bf16 | 2 | 1.196 | 1.000 | 0.800 | 1.250 | 1 |",
                        "| all | 3 | 1.196 (2) | 1.260 | 0.800 | 2.000 | 2 |"]
    with pytest.raises(ValueError, match="no moved pick joins"):
        pf.moved_ab(cases, "Z-", moved, per_set=True)


def test_providers_ab_weighs_module_function_extras_against_the_pick_and_their_base(
        pf, tmp_path):
    cases, _ = _ab_files(tmp_path, (
        "r,bf16,m1-n1-k1,1,1,0.9,m.x:ws:0.8 named:t:1.0,t\n"      # ws 1.25 over the pick
        "r,bf16,m2-n2-k2,1,1,1.0,m.x:ws:1.0 named:t:0.8,t\n"   # the picks; 0.8 of its base
        "q,bf16,m3-n3-k3,1,1,1.0,m.x:ws:0.5,t\n"), "")             # another run: not read
    table = pf.providers_ab(cases, ("r",), (("m.x:ws", "named:t"), ("m.x:none", "")))
    rows = table.splitlines()[2:]
    assert len(rows) == 1                                   # no `none` extra: no row
    cells = [c.strip() for c in rows[0].split("|")[1:-1]]
    assert cells[:5] == ["r", "bf16", "ws", "t", "2"]
    assert cells[5] == "1.118" and cells[6] == "1.061"     # sqrt(1.25 x 1); x the ratios
    assert cells[7:] == ["1.000", "0.800", "1.250", "1"]   # base / ws: 1.25, 0.8


def test_providers_best_names_each_cases_fastest_extra(pf, tmp_path):
    cases, _ = _ab_files(tmp_path, "r,bf16,m1-n1-k1,1,1,0.8,m.x:a:1.25 m.x:b:0.8 ab:9,t\n", "")
    row = pf.providers_best(cases, "r", "m.x:").splitlines()[2]
    assert [c.strip() for c in row.split("|")[1:-1]] == [
        "m1-n1-k1", "bf16", "t", "0.800", "b", "1.000", "1.250"]


def test_runs_ab_per_run_and_mode(pf, tmp_path):
    cases, _ = _ab_files(tmp_path, "r,fp8,m1-n1-k1,1,1,0.5,ab:2.0,t\n"
                                   "r,fp8,m2-n2-k2,1,1,0.5,ab:0.5,t\n"
                                   "r,tf32,m1-n1-k1,1,1,1,,t\n", "")
    rows = pf.runs_ab(cases, ("r",)).splitlines()[2:]
    assert rows == ["| r | fp8 | all | 2 | 0.500 | 1.000 | 0.500 | 2.000 | 1 |"]
    cases, _ = _ab_files(tmp_path, "r,bf16,m1-n1-k1,1,1,0.5,ab:2.0,tma_ws 128x128\n"
                                   "r,bf16,m2-n2-k2,1,1,0.5,ab:0.5,tma 64x64\n", "")
    assert pf.runs_ab(cases, ("r",), "tma_ws").splitlines()[2:] == [
        "| r | bf16 | moved | 1 | 0.500 | 2.000 | 2.000 | 2.000 | 1 |",
        "| r | bf16 | control | 1 | 0.500 | 0.500 | 0.500 | 0.500 | 0 |"]


def test_runs_best_sets_another_runs_tile_beside_each_pick(pf, tmp_path):
    cases, _ = _ab_files(tmp_path, "p,bf16,m1-n1-k1,1,1,0.8,,t1\n"
                                   "p,bf16,m2-n2-k2,1,1,0.5,,t2\n"
                                   "b,bf16,m1-n1-k1,1,1,1.0,,u1\n"
                                   "b,bf16,m9-n9-k9,1,1,1.0,,u9\n", "")
    rows = pf.runs_best(cases, "p", "b").splitlines()[2:]
    assert rows == ["| m1-n1-k1 | bf16 | t1 | 0.800 | u1 | 1.000 | 1.250 |",
                    "| geomean (1) | | | 0.800 | | 1.000 | 1.250 |"]   # m2: no other row


def test_moved_ab_takes_one_sets_picks_where_asked(pf, tmp_path):
    cases, moved = _ab_files(tmp_path, "r,bf16,m1-n1-k1,1,1,1,ab:2.0,t\n"
                                       "r,bf16,m2-n2-k2,1,1,1,ab:0.5,t\n",
                             "a,bf16,m1-n1-k1,x,y,-\nb,bf16,m2-n2-k2,x,y,-\n")
    rows = pf.moved_ab(cases, "r", moved, controls=False, sets=("a",)).splitlines()[2:]
    assert rows[0] == "| bf16 | 1 | - | 2.000 | 2.000 | 2.000 | 1 |"
