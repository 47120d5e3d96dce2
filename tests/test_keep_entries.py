"""scripts/keep_entries.py: which of a tune call's entries stay, from the A/B of the picks
each one moves (CPU only: the H200 table and this tree's dispatcher)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "keep_entries.py"
TABLE = "kernels/tuned/nvidia-h200.json"


@pytest.fixture
def ke(load_script):
    return load_script(SCRIPT)


def _entry(m, n, k, tile="a", mode="bf16", date="d1", kernel=None):
    from kernels import table_file

    return {"bucket": f"16bit {mode} rr tma ld128", "mode": mode, "m": m, "n": n, "k": k,
            "layout": "rr", "pad": 0, "config": {"tile": tile}, "date": date,
            "kernel": kernel or table_file.variant_hash("tiled")}


def test_changed_entries_and_the_candidate_that_leaves_one_out(ke):
    base = [_entry(1, 2, 3), _entry(4, 5, 6)]
    new = [_entry(1, 2, 3), _entry(4, 5, 6, "b", date="d2"), _entry(7, 8, 9, date="d2"),
           _entry(4, 5, 6, "c", mode="fp16", date="d2")]
    assert [e["m"] for e in ke.changed_entries(base, new, {"bf16"})] == [4, 7]
    # a retuned key left out is REV's entry again; a new key left out is gone
    out = ke.candidate(base, new, {ke.key(new[1]), ke.key(new[2])})
    assert out == [base[0], base[1], new[3]]


def test_a_left_out_key_whose_ref_entry_is_stale_comes_back_only_if_the_tune_timed_it(
        ke, tmp_path):
    """REV's entry tuned on other kernel source is never restored as it was: with the
    tune's JSON timing its tile on this source, stamped anew with that time; else none."""
    from kernels import table_file
    from kernels.tile import TileConfig

    tile = {"block_m": 16, "block_n": 128, "block_k": 64, "group_m": 8, "num_stages": 4,
            "num_warps": 4, "variant": "tiled", "split_k": 4}
    old = dict(_entry(32, 3584, 6144, kernel="0123456789ab"), config=tile)
    new = dict(_entry(32, 3584, 6144, date="d2"), config={**tile, "block_m": 32})
    left = {ke.key(new)}
    assert ke.candidate([old], [new], left) == []          # nothing timed: no entry
    run = tmp_path / "tune.json"
    name = ke.config_name(TileConfig(**tile))
    run.write_text(json.dumps({"cases": [{"m": 32, "n": 3584, "k": 6144, "telemetry": {
        "tuning": {"key": f"{old['bucket']} | m32 n3584 k6144 a6144,1 b3584,1",
                   "timings_ms": {name: 0.0387, "32x128x64 g8 s4 w4 k4": 0.0364,
                                  "x": None}}}}]}))
    timed = ke.tune_timings([str(run)])
    (back,) = ke.candidate([old], [new], left, timed)
    assert back["config"] == tile and not table_file.is_stale(back)
    assert back["tuned_ms"] == back["triton_ms"] == 0.0387
    assert ke.candidate([old], [new], set(), timed) == [new]


@pytest.mark.parametrize("measured,keep", [
    ([], True),                                      # moves no pick by itself
    ([(1.10, 1.2), (0.95, 0.9)], True),              # x0.95: within SLOWER_OK
    ([(1.30, 1.2), (0.85, 1.07)], True),             # x0.85 but still faster than the vendor
    ([(1.10, 1.2), (0.85, 0.84)], False),            # x0.85 to below the vendor
    ([(1.02, 1.2), (0.97, 1.5)], False),             # slower on the whole
])
def test_the_verdict_wants_faster_on_the_whole_and_no_deep_loss_below_the_vendor(
        ke, measured, keep):
    assert ke.verdict([ke.Measured(ab, r, "t") for ab, r in measured]) is keep


def test_a_changed_pick_needs_an_ab_of_that_very_tile(ke):
    before = {("s", "bf16", "m1"): "tma 64x64x64 g8 s4 w4", ("s", "bf16", "m2"): "x"}
    now = {("s", "bf16", "m1"): "tma 64x128x128 g8 s4 w4 [B kmajor]",
           ("s", "bf16", "m2"): "x", ("s", "bf16", "m3"): "heuristic y"}
    tile = "tma 64x128x128 g8 s4 w4"
    ab = {("bf16", "m1", tile): ke.Measured(1.1, 1.0, tile)}
    assert ke.unmeasured(now, before, ab) == [("s", "bf16", "m3")]
    other = "tma 64x64x128 g8 s4 w4"
    ab = {("bf16", "m1", other): ke.Measured(1.1, 1.0, other)}   # another tile
    assert ke.unmeasured(now, before, ab) == [("s", "bf16", "m1"), ("s", "bf16", "m3")]


@pytest.mark.parametrize("argv,message", [
    (["--leave-out", "1024x1024"], "MxNxK"),
    (["--keep", "axbxc:rr"], "MxNxK"),
    (["--ref", "no-such-ref-anywhere"], "no-such-ref-anywhere"),
    (["--keep", "8x8x8", "--leave-out", "8x8x8:rr"], "both name"),
    (["--modes", "bf17"], "unknown precision mode 'bf17'"),   # was a traceback, exit 1
    (["--candidate", "{tmp}/kept.csv"], "the same file"),   # its shape file was written over it
])
def test_bad_input_exits_2_with_a_message(ke, tmp_path, capsys, argv, message):
    ab = tmp_path / "ab.json"
    ab.write_text(json.dumps({"cases": []}))
    args = {"--ref": "HEAD", "--table": str(ROOT / TABLE), "--ab": str(ab), "--modes": "bf16",
            "--sets": "pr"}
    for flag, value in zip(argv[::2], argv[1::2]):
        args[flag] = value.replace("{tmp}", str(tmp_path))
    assert ke.main([x for kv in args.items() for x in kv]) == 2
    assert message in capsys.readouterr().err


def test_a_retuned_entry_is_kept_or_left_out_by_its_measured_picks(ke, tmp_path, capsys):
    """HEAD's table with pr's 1024^3 bf16 entry retuned to another tile: faster in the
    A/B, the entry stays and its pick is measured; slower and below the vendor, it goes
    back to HEAD's entry and no pick differs."""
    shown = subprocess.run(["git", "show", f"HEAD:{TABLE}"], cwd=ROOT, capture_output=True,
                           text=True, check=True)
    data = json.loads(shown.stdout)
    e = next(e for e in data["entries"] if e["mode"] == "bf16" and e["bucket"].startswith(
        "16bit bf16 rr") and (e["m"], e["n"], e["k"]) == (1024, 1024, 1024))
    # the same variant (its kernel hash stays current), the tile at a stage fewer (one
    # that fits an SM twice would give 1000^3, which borrows it, its two-program twin)
    other = {**e["config"], "num_stages": e["config"]["num_stages"] - 1}
    e.update(config=other, date="2099-01-01T00:00:00+00:00")
    new = tmp_path / "new.json"
    new.write_text(json.dumps(data))
    prefix = "" if other["variant"] == "tiled" else other["variant"] + " "
    tile = (f"{prefix}{other['block_m']}x{other['block_n']}x{other['block_k']} "
            f"g{other['group_m']} s{other['num_stages']} w{other['num_warps']}")

    def run(ab_ratio, vendor_ratio):
        ab = tmp_path / "ab.json"
        ab.write_text(json.dumps({"cases": [
            _ab_case("bf16", 1024, vendor_ratio, ab_ratio, tile)]}))
        rc = ke.main(["--ref", "HEAD", "--table", str(new), "--ab", str(ab), "--modes",
                      "bf16", "--sets", "pr"])
        return rc, capsys.readouterr().out

    rc, out = run(1.2, 1.1)
    assert rc == 0 and "keep bf16 1024x1024x1024 rr: 1 picks: m1024-n1024-k1024 x1.20" in out
    assert "1 picks differ" in out and "1 measured" in out
    rc, out = run(0.8, 0.9)
    assert rc == 0 and "out  bf16 1024x1024x1024 rr" in out and "0 picks differ" in out
    # measured on another tile: unmeasured, exit 1; --candidate writes the kept table and
    # the case to measure it on
    cand = tmp_path / "kept.json"
    (tmp_path / "other.json").write_text((tmp_path / "ab.json").read_text().replace(
        tile, "tma 64x64x64 g8 s4 w4"))
    rc = ke.main(["--ref", "HEAD", "--table", str(new), "--ab", str(tmp_path / "other.json"),
                  "--modes", "bf16", "--sets", "pr", "--candidate", str(cand)])
    out = capsys.readouterr().out
    assert rc == 1 and "unmeasured: pr bf16 m1024-n1024-k1024" in out
    assert e in json.loads(cand.read_text())["entries"]
    assert cand.with_suffix(".csv").read_text() == "m,n,k,layout,pad\n1024,1024,1024,rr,0\n"
    # the same entry forced in: its one pick was measured, so exit 0
    rc = ke.main(["--ref", "HEAD", "--table", str(new), "--ab", str(tmp_path / "ab.json"),
                  "--modes", "bf16", "--sets", "pr", "--keep", "1024x1024x1024"])
    assert rc == 0 and "keep bf16 1024x1024x1024" in capsys.readouterr().out


def test_the_tune_calls_rows_name_both_tiles_and_replace_only_their_own_label(ke, tmp_path):
    def entry(m, config, tri, mode="bf16", layout="rr"):
        return {**_entry(m, 64, 128, mode=mode), "layout": layout, "config": config,
                "triton_ms": tri, "vendor_ms": 1.0, "tried": 7, "offered": 29}

    old = {"variant": "tma", "block_m": 64, "block_n": 128, "block_k": 128,
           "num_stages": 4, "num_warps": 4, "split_k": 1}
    split = {**old, "variant": "tma_split", "num_stages": 5, "split_k": 2}
    base = [entry(16, old, 1.25)]
    new = [entry(16, split, 0.8), entry(32, old, 2.0, layout="cr")]
    rows = ke.tuned_rows(base, new, {"bf16"}, {ke.key(new[1])}, "2")
    assert rows == [
        {"case": "16x64x128", "mode": "bf16", "before": "tma:64x128x128:s4:w4",
         "before_ratio": "0.800", "after": "tma_split:64x128x128:s5:w4:k2",
         "after_ratio": "1.250", "tried": "7/29", "call": "2", "kept": "yes"},
        {"case": "32x64x128-cr", "mode": "bf16", "before": "", "before_ratio": "",
         "after": "tma:64x128x128:s4:w4", "after_ratio": "0.500", "tried": "7/29",
         "call": "2", "kept": "no"}]
    path = tmp_path / "tuned.csv"
    first = ke.tuned_rows(base, new[:1], {"bf16"}, set(), "1")
    ke.write_tuned_csv(path, first, "1")
    ke.write_tuned_csv(path, rows, "2")
    ke.write_tuned_csv(path, rows[1:], "2")      # a label given again replaces its rows
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(ke.TUNED_COLUMNS)
    assert [line.split(",")[0] for line in lines[1:]] == ["16x64x128", "32x64x128-cr"]


def _ab_case(mode: str, size: int, ratio: float, ab: float, tile: str) -> dict:
    """A run file's case (size^3) of an A/B run: Triton 1 ms a round, the vendor `ratio`
    ms, the reference `ab` ms, the tile in its telemetry."""
    from gemmgate.results import CaseResult, ProviderResult
    from gemmgate.shapes import Case

    times = {"triton": 1.0, "vendor": ratio, "reference": ab}
    return CaseResult(mode, Case(size, size, size), {
        name: ProviderResult(name, "pass", 1e-3, "", (t,) * 6) for name, t in times.items()},
        telemetry={"triton_config": tile}).to_json()


def test_a_case_run_on_two_tables_keeps_each_tiles_ab(ke, tmp_path):
    """The tune call's A/B and a later A/B of the kept table can name one case with two
    tiles: each tile keeps its own figure, so an entry is judged on the tile it picks."""

    def run(path, tile, ref_ms):
        path.write_text(json.dumps({"cases": [_ab_case("fp8", 64, 0.9, ref_ms, tile)]}))
        return str(path)

    ab = ke.read_ab([run(tmp_path / "a.json", "t1", 1.2), run(tmp_path / "b.json", "t2", 0.9)])
    assert {k: round(m.ab, 2) for k, m in ab.items()} == {("fp8", "m64-n64-k64", "t1"): 1.2,
                                                         ("fp8", "m64-n64-k64", "t2"): 0.9}
    assert ke.measured(ab, ("s", "fp8", "m64-n64-k64"), "heuristic t2 [B kmajor]").ab == 0.9


def test_an_entry_that_inherits_a_left_out_entrys_picks_is_judged_again_on_them(ke, capsys):
    """Round 1 leaves out e2 (its one pick ran x0.80); its pick m190 falls to e1, kept on
    its own two picks in round 1, where it runs x0.85 below the vendor: round 2 leaves e1
    out too (session 26's fp8 table kept such an entry)."""

    class NearestPicker:
        """The tile of the entry nearest in m, for cases at m = 110, 140 and 190."""

        def picks(self, entries):
            return {("s", "bf16", f"m{m}"): min(entries, key=lambda e: abs(e["m"] - m))
                    ["config"]["tile"] for m in (110, 140, 190)}

    z, e1, e2 = _entry(0, 1, 1, "z"), _entry(100, 1, 1, "a"), _entry(200, 1, 1, "b")
    ab = {("bf16", "m110", "a"): ke.Measured(1.1, 1.2, "a"),
          ("bf16", "m140", "a"): ke.Measured(1.1, 1.2, "a"),
          ("bf16", "m190", "b"): ke.Measured(0.8, 0.9, "b"),
          ("bf16", "m190", "a"): ke.Measured(0.85, 0.8, "a")}
    picker = NearestPicker()
    before = picker.picks([z])
    named = {"out": set(), "keep": set()}
    left_out = ke.judge(picker, [z], [z, e1, e2], {"bf16"}, ab, before, named)
    assert left_out == {ke.key(e1), ke.key(e2)}
    assert "out  bf16 100x1x1 rr: 3 picks" in capsys.readouterr().out
    # kept by name, e1 stays whatever its picks did
    named = {"out": set(), "keep": {ke.key(e1)}}
    assert ke.judge(picker, [z], [z, e1, e2], {"bf16"}, ab, before, named) == {ke.key(e2)}


def test_twin_entries_that_each_move_nothing_alone_are_judged_on_what_they_move_together(
        ke, capsys):
    """A bf16 and an fp16 entry of one shape lend each other one tile (kernels.table's
    other-type lookup): left out one at a time, the other still moves the picks, so
    leave-one-out alone finds no pick for either and kept both (session 29: 1536 x 1664 x
    176's 128x64x64 moved nightly's K = 128 picks x0.93-1.00). Each is also judged on the
    picks it moves as the one changed entry: both go."""

    class LendingPicker:
        """Cases c1 (bf16) and c2 (fp16) run tile "t" where either twin is in the table."""

        def picks(self, entries):
            lent = any(e["config"]["tile"] == "t" for e in entries)
            return {("s", mode, "c"): "t" if lent else "z" for mode in ("bf16", "fp16")}

    z = _entry(0, 1, 1, "z")
    twins = [_entry(100, 1, 1, "t", mode="bf16"), _entry(100, 1, 1, "t", mode="fp16")]
    ab = {("bf16", "c", "t"): ke.Measured(0.92, 0.9, "t"),
          ("fp16", "c", "t"): ke.Measured(0.95, 0.9, "t")}
    picker = LendingPicker()
    before = picker.picks([z])
    left_out = ke.judge(picker, [z], [z, *twins], {"bf16", "fp16"}, ab, before,
                        {"out": set(), "keep": set()})
    assert left_out == {ke.key(t) for t in twins}
    out = capsys.readouterr().out
    assert "out  bf16 100x1x1 rr: 2 picks: c x0.92, fp16 c x0.95" in out
    # faster where they land: both stay
    ab = {k: ke.Measured(1.1, 1.2, "t") for k in ab}
    assert ke.judge(picker, [z], [z, *twins], {"bf16", "fp16"}, ab, before,
                    {"out": set(), "keep": set()}) == set()


def test_another_chips_unchanged_table_moves_no_pick(ke, tmp_path, capsys):
    """--chip nvidia-h100 with its committed table unchanged: no pick moves. The picks were
    an H200's ("NVIDIA H200" read no H100 table, nor the lent one beside it): every one
    the heuristic's, 13 of pr's tf32 cases "unmeasured", exit 1 (a review)."""
    from kernels import table_file

    same = tmp_path / "h100.json"
    same.write_text((table_file.DEFAULT_DIR / "nvidia-h100.json").read_text())
    ab = tmp_path / "ab.json"
    ab.write_text(json.dumps({"cases": []}))
    rc = ke.main(["--ref", "HEAD", "--chip", "nvidia-h100", "--table", str(same), "--ab",
                  str(ab), "--modes", "tf32", "--sets", "pr"])
    out = capsys.readouterr().out
    assert rc == 0 and "0 picks differ" in out and "heuristic" not in out
    # another chip's table under --chip: refused
    assert ke.main(["--ref", "HEAD", "--chip", "nvidia-h200", "--table", str(same), "--ab",
                    str(ab), "--modes", "tf32", "--sets", "pr"]) == 2
    assert "is nvidia-h100's" in capsys.readouterr().err


def test_write_refuses_a_kept_table_holding_a_holdout_shape(ke, tmp_path, capsys,
                                                            monkeypatch):
    """A holdout shape tuned into a --table outside kernels/tuned (tune allows it, to
    measure it) moves no pick of pr, so it is kept: --write put it into the kernel's table,
    exit 0, where no table there may hold one (a review)."""
    import gemmgate.files
    from gemmgate.shapes import SETS

    written = []
    monkeypatch.setattr(gemmgate.files, "write_json_atomic", lambda *a: written.append(a))
    shown = subprocess.run(["git", "show", f"HEAD:{TABLE}"], cwd=ROOT, capture_output=True,
                           text=True, check=True)
    data = json.loads(shown.stdout)
    e = next(e for e in data["entries"] if e["mode"] == "bf16")
    c = SETS["holdout"][0]
    data["entries"].append({**e, "m": c.m, "n": c.n, "k": c.k,
                            "date": "2099-01-01T00:00:00+00:00"})
    new = tmp_path / "new.json"
    new.write_text(json.dumps(data))
    ab = tmp_path / "ab.json"
    ab.write_text(json.dumps({"cases": []}))
    assert ke.main(["--ref", "HEAD", "--table", str(new), "--ab", str(ab), "--modes", "bf16",
                    "--sets", "pr", "--write"]) == 2
    assert f"holdout set ({c.id})" in capsys.readouterr().err and not written


def test_a_tuned_csv_of_another_kind_is_exit_2_and_kept(ke, tmp_path, capsys):
    """An existing --tuned-csv without tuned.csv's columns was a KeyError traceback (exit
    1) after the judging; with no rows, it was replaced by a tuned.csv, exit 0."""
    ab = tmp_path / "ab.json"
    ab.write_text(json.dumps({"cases": []}))
    for text in ("a,b\n1,2\n", "a,b\n"):
        other = tmp_path / "other.csv"
        other.write_text(text)
        assert ke.main(["--ref", "HEAD", "--table", str(ROOT / TABLE), "--ab", str(ab),
                        "--modes", "bf16", "--sets", "64x64x64", "--tuned-csv", str(other),
                        "--call", "c1"]) == 2
        assert "is not a tuned.csv" in capsys.readouterr().err
        assert other.read_text() == text
    new = tmp_path / "tuned.csv"
    assert ke.main(["--ref", "HEAD", "--table", str(ROOT / TABLE), "--ab", str(ab),
                    "--modes", "bf16", "--sets", "64x64x64", "--tuned-csv", str(new),
                    "--call", "c1"]) == 0
    assert new.read_text().startswith(",".join(ke.TUNED_COLUMNS))
