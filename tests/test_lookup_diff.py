"""scripts/lookup_diff.py: the picks of two `kernels` packages compared on the CPU, as
decide + the H200 table would make them (no device)."""

import re
import types
from pathlib import Path

import pytest

import kernels
from gemmgate.shapes import Case

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "lookup_diff.py"


@pytest.fixture
def ld(load_script):
    return load_script(SCRIPT)


SETS = [("few", (Case(1024, 1024, 1024), Case(256, 4096, 512), Case(1000, 1000, 1000)))]


def test_the_same_package_picks_the_same_tiles(ld):
    # 1024^3 bf16 has an exact entry in the committed table
    assert re.fullmatch(r"((tma|tma_split) )?\d+x\d+x\d+ g\d+ s\d+ w\d+( k\d+)?",
                        ld.pick(kernels, "bf16", Case(1024, 1024, 1024), 132))
    assert ld.diff(kernels, kernels, SETS, ["bf16", "fp16"], 132) == []


def test_a_table_with_nothing_near_shows_every_case_as_the_heuristic(ld):
    bare = types.SimpleNamespace(dispatch=kernels.dispatch, modes=kernels.modes,
                                 configs=kernels.configs,
                                 table=types.SimpleNamespace(lookup=lambda *a, **k: None))
    rows = ld.diff(kernels, bare, SETS, ["bf16"], 132)
    assert [(r[0], r[1], r[2]) for r in rows] == [("few", "bf16", c.id) for c in SETS[0][1]]
    for r, c in zip(rows, SETS[0][1]):   # the heuristic's own tile, named as such
        tile = kernels.configs.heuristic("16bit", c.m, c.n, c.k, tma=True, num_sms=132,
                                         smem_limit=ld.SMEM)
        copies = ld._operands(ld._decided(kernels, "bf16", c))   # kept copies, whole lines
        assert r[4] == "heuristic " + ld._text(tile) + copies
        assert not r[3].startswith("heuristic")


def test_a_heuristic_change_shows_where_the_table_has_nothing_near(ld):
    """With a table that has nothing near IEEE fp32 2048^3 cr, the heuristic's pick is
    what changes."""
    cr = Case(2048, 2048, 2048, "cr")
    empty = types.SimpleNamespace(**{**vars(kernels.table), "lookup": lambda *a, **k: None})
    new = types.SimpleNamespace(dispatch=kernels.dispatch, modes=kernels.modes,
                                configs=kernels.configs, table=empty)
    tile, heuristic, _, _ = ld._choice(new, "fp32", cr, 132)
    assert heuristic and (tile.block_m, tile.block_n) == (64, 64)   # the FMA units' tile
    big = types.SimpleNamespace(**{**vars(kernels.configs), "heuristic": lambda *a, **k:
                                   kernels.configs.heuristic(*a, **{**k, "fma": False})})
    old = types.SimpleNamespace(dispatch=kernels.dispatch, modes=kernels.modes,
                                configs=big, table=empty)
    rows = ld.diff(old, new, [("pr", (cr,))], ["fp32"], 132)
    assert [r[3:] for r in rows] == [("heuristic 128x128x32 g8 s3 w8",
                                      "heuristic " + ld._text(tile))]


def test_a_bad_ref_is_exit_2(ld, capsys):
    assert ld.main(["--ref", "no-such-ref-anywhere", "--sets", "smoke"]) == 2
    assert "no-such-ref-anywhere" in capsys.readouterr().err


def test_predict_adds_the_models_time_for_each_pick_and_the_gain(ld):
    """--predict: the time this tree's table model predicts for the old and the new pick
    (kernels.table.predict), '-' where it has none (the heuristic)."""
    from kernels import table, table_file

    cube = Case(1000, 1000, 1000)
    new, _, bucket, variants = ld._choice(kernels, "bf16", cube, 132)
    rows = table._index(ld.DEVICE, str(table_file.DEFAULT_DIR))[1][bucket]
    other = next(r.config for r in table._near(rows, 1000, 1000, 1000, variants)
                 if r.config != new)                        # a near entry's other tile
    fixed = types.SimpleNamespace(dispatch=kernels.dispatch, modes=kernels.modes,
                                  table=types.SimpleNamespace(
                                      lookup=lambda *a, **k: (other, "table")))
    got = ld.diff(fixed, kernels, [("few", (cube,))], ["bf16"], 132, predict=True)
    copies = ld._operands(ld._decided(kernels, "bf16", cube))
    assert [r[:5] for r in got] == [("few", "bf16", cube.id, ld._text(other) + copies,
                                     ld._text(new) + copies)]
    old_us, new_us = map(float, re.fullmatch(r"([\d.]+) -> ([\d.]+) us", got[0][5]).groups())
    assert old_us > 0 < new_us and abs(float(got[0][6][1:]) - old_us / new_us) < 0.02
    bare = types.SimpleNamespace(dispatch=kernels.dispatch, modes=kernels.modes,
                                 configs=kernels.configs,
                                 table=types.SimpleNamespace(lookup=lambda *a, **k: None))
    rows = ld.diff(bare, kernels, SETS, ["bf16"], 132, predict=True)
    assert rows
    for r in rows:   # the heuristic's tile: a figure only where a near entry has it
        old_us, new_us = re.fullmatch(r"([\d.]+|-) -> ([\d.]+) us", r[5]).groups()
        assert (r[6] == "x-") == (old_us == "-")


def test_a_change_of_operand_copies_alone_shows(ld):
    """The same tile on other operands is another pick (session 20: fp32 4096^3 cr ran its
    tile 8% slower on a row-major copy of A)."""

    def no_copies(*a, **k):
        fam, key, bucket, _, _, variants = kernels.dispatch.decide(*a, **k)
        return fam, key, bucket, "", "", variants

    bare = types.SimpleNamespace(dispatch=types.SimpleNamespace(decide=no_copies),
                                 modes=kernels.modes, configs=kernels.configs,
                                 table=kernels.table)
    cc = Case(4096, 4096, 4096, "cc")
    (row,) = ld.diff(bare, kernels, [("x", (cc,))], ["fp32"], 132)
    assert row[4] == row[3] + " [A rowmajor, B rowmajor]"
    assert ld.pick(kernels, "fp32", cc, 132) == row[4]


def test_csv_writes_each_changed_case_once_as_a_shape_file(ld, tmp_path):
    """--csv: the cases whose pick differs in any mode, once each across sets and modes,
    read back by the harness's shape-file reader (`gemmgate run --shapes FILE`)."""
    from gemmgate.shapes import load_shape_file

    odd = Case(64, 64, 64, "cr", 3)
    sets = [("a", (Case(1024, 1024, 1024), odd)), ("b", (odd, Case(8, 8, 8)))]
    rows = [("a", "bf16", odd.id, "x", "y"), ("a", "fp16", odd.id, "x", "y"),
            ("b", "bf16", odd.id, "x", "y"), ("b", "bf16", "m8-n8-k8", "x", "y")]
    path = tmp_path / "changed.csv"
    assert ld.write_cases(str(path), sets, rows) == 2
    assert load_shape_file(path) == (odd, Case(8, 8, 8))
    assert ld.write_cases(str(path), sets, []) == 0   # the header alone: no cases to run
    assert path.read_text() == "m,n,k,layout,pad\n"


def test_moved_writes_the_differing_picks_for_perf_formats(ld, tmp_path):
    """--moved: one CSV row per differing pick, a shape file's set named by its stem, the
    predicted gain without its 'x' ('-' where not predicted), read as moved_ab reads it."""
    import csv

    rows = [("/tmp/rand41.csv", "fp16", "m8-n8-k8", "tma 8", "tma 16", "1.0 -> 0.5 us",
             "x2.000"),
            ("holdout6", "bf16", "m1-n2-k3", "a, b", "c", "- -> 1.0 us", "x-")]
    path = tmp_path / "moved.csv"
    ld.write_moved(str(path), rows)
    got = list(csv.DictReader(path.open()))
    assert [(r["set"], r["mode"], r["case"], r["old"], r["new"], r["predicted"])
            for r in got] == [("rand41", "fp16", "m8-n8-k8", "tma 8", "tma 16", "2.000"),
                              ("holdout6", "bf16", "m1-n2-k3", "a, b", "c", "-")]
    ld.write_moved(str(path), [rows[0][:5]])   # without --predict
    assert next(csv.DictReader(path.open()))["predicted"] == "-"


def test_forms_shows_a_pick_whose_warp_specialized_form_alone_changed(ld):
    """--forms: the tile the dispatcher runs (`dispatch._ws`), so a change to that rule
    alone shows, though the lookup's pick is the same."""
    cube = Case(2888, 3880, 264)   # holdout6's: a 128x128x64 pick, run warp-specialized
    plain = types.SimpleNamespace(
        dispatch=types.SimpleNamespace(decide=kernels.dispatch.decide,
                                       _ws=lambda tile, bucket: tile),
        modes=kernels.modes, configs=kernels.configs, table=kernels.table)
    pick, _, bucket, _ = ld._choice(kernels, "bf16", cube, 132)
    ran = kernels.dispatch._ws(pick, bucket)
    assert ran.variant == "tma_ws" != pick.variant
    assert ld.diff(plain, kernels, [("x", (cube,))], ["bf16"], 132) == []
    rows = ld.diff(plain, kernels, [("x", (cube,))], ["bf16"], 132, forms=True)
    copies = ld._operands(ld._decided(kernels, "bf16", cube))
    assert [r[3:] for r in rows] == [(ld._text(pick) + copies, ld._text(ran) + copies)]
    assert ld.diff(kernels, kernels, SETS, ["bf16", "fp8"], 132, forms=True) == []


def test_forms_shows_the_split_fp8_runs_past_its_unsplit_range(ld):
    """--forms applies the dispatcher's fp8 split (`dispatch.fast_ranges`) before the
    warp-specialized form, so a change to the split rule alone shows; a package without
    the rule (before session 63) runs its pick as it is."""
    long_k = Case(640, 640, 65536)
    old = types.SimpleNamespace(
        dispatch=types.SimpleNamespace(decide=kernels.dispatch.decide,
                                       _ws=lambda tile, bucket: tile),
        modes=kernels.modes, configs=kernels.configs, table=kernels.table)
    pick, _, bucket, _ = ld._choice(kernels, "fp8", long_k, 132)
    decided = ld._decided(kernels, "fp8", long_k)
    ran = ld._ran(kernels, pick, bucket, long_k, 132, decided)
    assert ran.variant == "tma_split" and -(-65536 // ran.split_k) <= \
        kernels.dispatch.FP8_MAX_RANGE < -(-65536 // pick.split_k)
    assert ld._ran(old, pick, bucket, long_k, 132, decided) is pick
    rows = ld.diff(old, kernels, [("x", (long_k,))], ["fp8"], 132, forms=True)
    copies = ld._operands(decided)
    assert [r[3:] for r in rows] == [(ld._text(pick) + copies, ld._text(ran) + copies)]


def test_device_reads_that_devices_tables(ld, monkeypatch):
    """--device: the lookup reads that device's tables (an H100: its own over the H200's
    lent one), so a package whose lookup sees other tables for that name alone shows."""
    h100 = "NVIDIA H100 80GB HBM3"
    four = Case(4096, 4096, 4096)
    assert ld.pick(kernels, "fp8", four, 132, h100) != ld.pick(kernels, "fp8", four, 132)
    seen = []
    spy = types.SimpleNamespace(**{**vars(kernels.table), "lookup": lambda name, *a, **k:
                                   seen.append(name) or kernels.table.lookup(name, *a, **k)})
    new = types.SimpleNamespace(dispatch=kernels.dispatch, modes=kernels.modes,
                                configs=kernels.configs, table=spy)
    assert ld.diff(kernels, new, [("pr", (four,))], ["fp8"], 132, device=h100) == []
    assert seen == [h100]
    monkeypatch.setattr(ld, "diff", lambda *a, **k: seen.append(a[-1]) or [])
    assert ld.main(["--ref", "HEAD", "--sets", "pr", "--modes", "fp8", "--device", h100]) == 0
    assert seen[-1] == h100


@pytest.mark.parametrize("argv, said", [
    (["--device", "NVIDIA H2OO"], "no tuning table"),   # (a typo: every pick heuristic)
    (["--sms", "0"], "--sms must be 1 or more"),
    (["--sms", "-5"], "--sms must be 1 or more"),
])
def test_input_that_makes_every_pick_the_same_is_exit_2(ld, capsys, monkeypatch, argv, said):
    """A --device no table names read no table in either tree: both picked the heuristic's
    tile, and a changed table said "0 picks differ" (exit 0); --sms 0 or below alike. Refused
    before any work (the diff is never run)."""
    monkeypatch.setattr(ld, "diff", lambda *a, **k: pytest.fail("diffed"))
    assert ld.main(["--ref", "HEAD", "--sets", "pr", "--modes", "bf16", *argv]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--csv", "--moved"])
def test_an_output_that_cannot_be_written_is_exit_2_before_the_diff(ld, capsys, monkeypatch,
                                                                     tmp_path, flag):
    """--csv or --moved naming a directory: a traceback (exit 1) after the whole diff ran."""
    monkeypatch.setattr(ld, "diff", lambda *a, **k: pytest.fail("diffed"))
    assert ld.main(["--ref", "HEAD", "--sets", "pr", "--modes", "bf16", flag,
                    str(tmp_path)]) == 2
    assert f"cannot write {flag} file" in capsys.readouterr().err
