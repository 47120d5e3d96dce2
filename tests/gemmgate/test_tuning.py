"""gemmgate.tuning: budgeted tuning, pruning by shared memory, pins and the local cache.
Pure logic: the benchmark is a fake, so no GPU is needed."""

import json
import math
from pathlib import Path

import pytest

from gemmgate import tuning
from gemmgate.tuning import Tuner, TuningError, TuningSetup
from kernels.tile import TileConfig

BIG = TileConfig(128, 256, 64, 8, 3, 8)
MID = TileConfig(128, 128, 64, 8, 4, 4)
SMALL = TileConfig(64, 64, 64, 8, 4, 4)
CANDIDATES = (BIG, MID, SMALL)
KEY = "16bit m4096 n4096 k4096 a4096,1 b4096,1"


def fake_bench(times: dict, calls: list, default: float | None = None):
    def bench(cfg):
        calls.append(cfg)
        return times[cfg] if default is None else times.get(cfg, default)
    return bench


def setup_for(tmp_path, **kw) -> TuningSetup:
    return TuningSetup("h200", cache_dir=str(tmp_path / "cache"), **{"search": True, **kw})


def test_tune_picks_the_fastest_and_records_every_timing():
    calls = []
    best, timings = tuning.tune(CANDIDATES, fake_bench({BIG: 2.0, MID: 1.0, SMALL: 3.0}, calls),
                                budget_s=10)
    assert best == MID and calls == list(CANDIDATES)
    assert timings == {"128x256x64 g8 s3 w8": 2.0, "128x128x64 g8 s4 w4": 1.0,
                       "64x64x64 g8 s4 w4": 3.0}


def test_tune_stops_when_the_budget_is_spent_but_measures_one():
    ticks = iter([0.0, 5.0, 11.0, 12.0])
    calls = []
    best, timings = tuning.tune(CANDIDATES, fake_bench({BIG: 2.0, MID: 1.0, SMALL: 0.5}, calls),
                                budget_s=10, clock=lambda: next(ticks))
    assert calls == [BIG, MID] and best == MID and len(timings) == 2


def test_the_budget_stops_a_search_only_once_a_tile_ran():
    """A first tile that failed after the budget was spent (a held tile that no longer
    compiles) ended the search with none: "no candidate config ran" (a review)."""
    ticks = iter([0.0, 12.0, 13.0, 14.0])
    calls = []
    best, timings = tuning.tune(CANDIDATES, fake_bench({BIG: math.inf, MID: 1.0, SMALL: 0.5},
                                                       calls),
                                budget_s=10, clock=lambda: next(ticks))
    assert calls == [BIG, MID] and best == MID
    assert timings == {"128x256x64 g8 s3 w8": None, "128x128x64 g8 s4 w4": 1.0}


def test_a_tuned_choice_records_what_it_was_offered_and_whether_the_budget_cut_it(
        tmp_path, monkeypatch):
    ticks = iter([0.0, 5.0, 11.0, 12.0])
    real = tuning.tune
    monkeypatch.setattr(tuning, "tune", lambda c, b, s: real(c, b, s, clock=lambda: next(ticks)))
    chooser = Tuner(setup_for(tmp_path, budget_s=10)).chooser("k1")
    chooser(KEY, CANDIDATES, fake_bench({BIG: 2.0, MID: 1.0, SMALL: 0.5}, []))
    assert chooser.last.offered == 3 and len(chooser.last.timings_ms) == 2
    assert len(chooser.last.timings_ms) < chooser.last.offered   # the budget cut it
    assert chooser.last.to_json()["offered"] == 3
    again = Tuner(setup_for(tmp_path)).chooser("k1")   # from the cache: still known
    again(KEY, CANDIDATES, fake_bench({BIG: 2.0, MID: 1.0, SMALL: 0.5}, []))
    assert again.last.source == tuning.CACHED and again.last.offered == 3
    assert len(again.last.timings_ms) == 2


def test_tune_skips_configs_that_fail_and_raises_when_none_runs():
    best, timings = tuning.tune(CANDIDATES, fake_bench({BIG: math.inf, MID: 4.0, SMALL: 5.0}, []),
                                budget_s=10)
    assert best == MID and timings["128x256x64 g8 s3 w8"] is None
    with pytest.raises(RuntimeError, match="no candidate config ran"):
        tuning.tune(CANDIDATES, lambda c: math.inf, budget_s=10)
    with pytest.raises(ValueError, match="no candidate"):
        tuning.tune((), lambda c: 1.0, budget_s=10)


def test_tuner_tunes_once_then_reuses_the_cache_in_a_new_process(tmp_path):
    calls = []
    times = {BIG: 2.0, MID: 1.0, SMALL: 3.0}
    first = Tuner(setup_for(tmp_path)).chooser("k1")
    assert first(KEY, CANDIDATES, fake_bench(times, calls)) == MID
    assert first.last.source == tuning.TUNED and len(calls) == 3
    assert first(KEY, CANDIDATES, fake_bench(times, calls)) == MID
    assert len(calls) == 3  # memoised in-process
    cache = json.loads(setup_for(tmp_path).cache_path.read_text())
    assert cache["schema"] == tuning.SCHEMA and cache["chip"] == "h200"
    # a new process (new Tuner) reads the file: no benchmarking, same tile
    times_now = {BIG: 0.1, MID: 1.0, SMALL: 3.0}
    again = Tuner(setup_for(tmp_path)).chooser("k1")
    assert again(KEY, CANDIDATES, fake_bench(times_now, calls)) == MID
    assert again.last.source == tuning.CACHED and len(calls) == 3


def test_retune_ignores_pins_and_cache_and_overwrites_the_cache(tmp_path):
    Tuner(setup_for(tmp_path)).choose(KEY, CANDIDATES, fake_bench({BIG: 2, MID: 1, SMALL: 3}, []))
    t = Tuner(setup_for(tmp_path, retune=True))
    assert t.choose(KEY, CANDIDATES, fake_bench({BIG: 0.5, MID: 1, SMALL: 3}, [])) == BIG
    assert Tuner(setup_for(tmp_path)).choose(KEY, CANDIDATES, lambda c: 9.0) == BIG


def test_a_search_times_the_named_incumbent_first_so_the_budget_cannot_skip_it(
        tmp_path, monkeypatch):
    """`first` (a stale entry's tile, `gemmgate tune --stale`) leads the search; a tile
    measured more than KEEP_MARGIN faster replaces it, and other keys keep the kernel's
    order."""
    from dataclasses import asdict

    ticks = iter([0.0, 5.0, 11.0] * 6)   # each search: two candidates within the budget
    real = tuning.tune
    monkeypatch.setattr(tuning, "tune", lambda c, b, s: real(c, b, s, clock=lambda: next(ticks)))
    times = {BIG: 2.0, MID: 1.0, SMALL: 1.5}
    first = ((KEY.split(" k")[0] + " ", tuple(sorted(asdict(SMALL).items()))),)
    t = Tuner(setup_for(tmp_path, budget_s=10, retune=True, first=first))
    calls = []
    assert t.choose(KEY, CANDIDATES, fake_bench(times, calls)) == SMALL
    assert calls == [SMALL, BIG]       # without `first`, the budget stops before SMALL
    calls.clear()
    other = "16bit m8 n4096 k4096 a4096,1 b4096,1"
    assert t.choose(other, CANDIDATES, fake_bench(times, calls)) == MID
    assert calls == [BIG, MID]
    calls.clear()   # within KEEP_MARGIN of the fastest: the incumbent stays
    t = Tuner(setup_for(tmp_path, budget_s=10, retune=True, first=first))
    assert t.choose(KEY, CANDIDATES, fake_bench({**times, BIG: 1.49}, calls)) == SMALL
    t = Tuner(setup_for(tmp_path, budget_s=10, retune=True, first=first))
    assert t.choose(KEY, CANDIDATES, fake_bench({**times, BIG: 1.44}, calls)) == BIG
    lead = ((first[0][0], tuple(sorted(asdict(BIG).items()))),)   # already first: kept too
    t = Tuner(setup_for(tmp_path, budget_s=10, retune=True, first=lead))
    assert t.choose(KEY, CANDIDATES, fake_bench({**times, MID: 1.95}, calls)) == BIG
    assert tuning.incumbent(KEY, CANDIDATES, ()) is None
    other = TileConfig(16, 16, 16, 1, 1, 1)   # not a candidate: timed all the same
    named = ((KEY, tuple(sorted(asdict(other).items()))),)
    assert tuning.incumbent(KEY, CANDIDATES, named) == other
    calls.clear()
    t = Tuner(setup_for(tmp_path, budget_s=10, retune=True, first=named))
    assert t.choose(KEY, CANDIDATES, fake_bench({**times, other: 1.2}, calls)) == other
    assert calls == [other, BIG]
    bad = ((KEY, tuple(sorted({**asdict(other), "block_m": 24}.items()))),)
    assert tuning.incumbent(KEY, CANDIDATES, bad) is None   # the class refuses it
    # the kernel's full 30 and a held tile they lack: 30 timed, not 31 (a review)
    thirty = tuple(TileConfig(bm, bn, 32, 8, st, 4) for st in (3, 4)
                   for bm in (16, 32, 64, 128, 256) for bn in (16, 32, 64, 128, 256)
                   )[:tuning.MAX_TIMED]
    assert other not in thirty
    seen = []
    monkeypatch.setattr(tuning, "tune", real)   # (the real clock: no budget cut)
    t = Tuner(setup_for(tmp_path, budget_s=1e9, retune=True, first=named))
    t.choose(KEY, thirty, fake_bench({}, seen, default=1.0))
    assert seen[0] == other and len(seen) == tuning.MAX_TIMED
    assert t.memo[(KEY, thirty)].offered == tuning.MAX_TIMED


def _baseline_with_pin(tmp_path, cfg: TileConfig, kernel="k1"):
    from dataclasses import asdict

    p = tmp_path / "h200.json"
    p.write_text(json.dumps({"cases": {"bf16-x": {"tuning": {
        "key": KEY, "config": asdict(cfg), "source": "tuned", "kernel": kernel}}}}))
    return p


def test_pins_win_over_the_cache_and_are_flagged_stale_for_another_kernel(tmp_path):
    Tuner(setup_for(tmp_path)).choose(KEY, CANDIDATES, fake_bench({BIG: 2, MID: 1, SMALL: 3}, []))
    pins = _baseline_with_pin(tmp_path, SMALL, kernel="old")
    t = Tuner(setup_for(tmp_path, pins_from=str(pins))).chooser("new")
    calls = []
    assert t(KEY, CANDIDATES, fake_bench({}, calls)) == SMALL and not calls
    assert t.last.source == tuning.PINNED and t.last.stale
    t2 = Tuner(setup_for(tmp_path, pins_from=str(pins))).chooser("old")
    t2(KEY, CANDIDATES, fake_bench({}, []))
    assert not t2.last.stale


@pytest.mark.parametrize("search", [True, False])
def test_a_pin_that_is_no_longer_a_candidate_runs_all_the_same(tmp_path, search):
    """`run --pin-tiles` ran the kernel's own pick where the pinned tile was not among
    its candidates (a table change moves them), said nowhere (a review)."""
    pinned = TileConfig(32, 32, 32, 4, 2, 4)
    pins = _baseline_with_pin(tmp_path, pinned)
    t = Tuner(setup_for(tmp_path, pins_from=str(pins), search=search)).chooser()
    calls = []
    assert t(KEY, CANDIDATES, fake_bench({BIG: 2, MID: 1, SMALL: 3}, calls)) == pinned
    assert t.last.source == tuning.PINNED and not calls


def test_a_pin_the_kernels_tile_class_refuses_is_tuned_again(tmp_path):
    pins = _baseline_with_pin(tmp_path, TileConfig(32, 32, 32, 4, 2, 4))
    data = json.loads(pins.read_text())
    for c in data["cases"].values():
        c["tuning"]["config"]["no_such_field"] = 1
    pins.write_text(json.dumps(data))
    t = Tuner(setup_for(tmp_path, pins_from=str(pins))).chooser()
    assert t(KEY, CANDIDATES, fake_bench({BIG: 2, MID: 1, SMALL: 3}, [])) == MID
    assert t.last.source == tuning.TUNED


def test_missing_pin_file_means_no_pins_but_a_bad_one_is_an_error(tmp_path):
    assert tuning.load_pins(tmp_path / "absent.json") == {}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TuningError, match="cannot read tuning pins"):
        tuning.load_pins(bad)
    bad.write_text("[]")
    with pytest.raises(TuningError, match="no cases"):
        tuning.load_pins(bad)


@pytest.mark.parametrize("content, match", [
    ("{oops", "unreadable"),
    (b"\xff\xfe{", "unreadable"),                                  # not UTF-8 text
    (json.dumps({"schema": "other", "version": 1, "chip": "h200", "entries": {}}), "not a"),
    (json.dumps({"schema": tuning.SCHEMA, "version": 99, "chip": "h200", "entries": {}}),
     "not a"),
    (json.dumps({"schema": tuning.SCHEMA, "version": 1, "chip": "a100", "entries": {}}),
     "for chip 'a100'"),
])
def test_a_corrupt_or_foreign_cache_is_a_clear_error(tmp_path, content, match):
    path = setup_for(tmp_path).cache_path
    path.parent.mkdir(parents=True)
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    with pytest.raises(TuningError, match=match):
        Tuner(setup_for(tmp_path))
    with pytest.raises(TuningError, match=match):   # nor replaced by a save (--retune)
        tuning.save_cache(path, "h200", {"k": {"config": {}}})
    assert path.read_bytes() == (content if isinstance(content, bytes) else content.encode())


def test_a_cache_that_cannot_be_written_is_an_error_before_any_search(tmp_path):
    """Each search ends in a save: found there, its timing would be lost (the review's
    read-only cache directory failed after three candidates were timed)."""
    from gemmgate.files import InputError

    (tmp_path / "cache").write_text("a file where the cache directory should be")
    with pytest.raises(InputError, match="cannot write the tuning cache .*GEMMGATE_TUNING_DIR"):
        Tuner(setup_for(tmp_path))
    Tuner(setup_for(tmp_path, search=False))   # not searching: never saves, not checked


def test_a_cached_tile_tuned_on_other_kernel_source_is_tuned_again(tmp_path):
    Tuner(setup_for(tmp_path)).chooser("old")(KEY, CANDIDATES,
                                               fake_bench({BIG: 2, MID: 1, SMALL: 3}, []))
    calls = []
    again = Tuner(setup_for(tmp_path)).chooser("new")
    assert again(KEY, CANDIDATES, fake_bench({BIG: 0.5, MID: 1, SMALL: 3}, calls)) == BIG
    assert again.last.source == tuning.TUNED and len(calls) == 3


def _save_keys(path: str, prefix: str) -> None:
    for i in range(60):
        tuning.save_cache(Path(path), "h200", {f"{prefix}{i}": {"config": {}}})


def test_processes_saving_at_once_lose_no_key(tmp_path):
    """Workers of --devices save their keys as they tune them (unlocked, two processes of
    150 keys each kept 153 of 300: each read the file, then renamed its own over it)."""
    import multiprocessing

    path = setup_for(tmp_path).cache_path
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_save_keys, args=(str(path), p)) for p in "ab"]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert all(proc.exitcode == 0 for proc in procs)
    assert len(json.loads(path.read_text())["entries"]) == 120


def test_save_cache_merges_with_what_another_process_wrote(tmp_path):
    path = setup_for(tmp_path).cache_path
    tuning.save_cache(path, "h200", {"a": {"config": {}}})
    tuning.save_cache(path, "h200", {"b": {"config": {}}})
    assert set(json.loads(path.read_text())["entries"]) == {"a", "b"}
    left = sorted(p.name for p in path.parent.iterdir())
    assert left == ["h200.json", "h200.json.lock"]          # no temp files left


def test_setup_validates_and_defaults_the_cache_dir_from_the_environment(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="positive"):
        TuningSetup(budget_s=0)
    monkeypatch.setenv("GEMMGATE_TUNING_DIR", str(tmp_path))
    assert TuningSetup("mi300x").cache_path == tmp_path / "mi300x.json"


def test_a_kernel_with_other_candidates_gets_its_own_choice(tmp_path):
    """The A/B reference kernel may come from a commit with other configs: its choice
    must not leak into the current kernel's, nor the other way round."""
    t = Tuner(setup_for(tmp_path))
    assert t.choose(KEY, CANDIDATES, fake_bench({BIG: 2, MID: 1, SMALL: 3}, [])) == MID
    older = (BIG, SMALL)  # the reference's configs.py lacked MID
    assert t.choose(KEY, older, fake_bench({BIG: 2, SMALL: 3}, [])) == BIG
    assert t.choose(KEY, CANDIDATES, lambda c: 9.0) == MID
    assert t.choose(KEY, older, lambda c: 9.0) == BIG
    # and the cache keeps both, so the next process agrees
    fresh = Tuner(setup_for(tmp_path))
    assert fresh.choose(KEY, CANDIDATES, lambda c: 9.0) == MID
    assert fresh.choose(KEY, older, lambda c: 9.0) == BIG


def test_the_reference_kernels_own_tile_class_still_takes_pins_and_the_cache(tmp_path):
    """The A/B reference imports its commit's kernels/configs.py: its TileConfig is another
    class with the same fields. Pins and cache entries match by value, and the choice is
    the candidate itself (H200, session 3: matched by class, the reference ignored every
    pin and tuned in each process; 44 of 845 case checks then ran another tile)."""
    import dataclasses

    Other = dataclasses.make_dataclass(
        "TileConfig", [(f.name, int) for f in dataclasses.fields(TileConfig)], frozen=True)
    theirs = tuple(Other(**dataclasses.asdict(c)) for c in CANDIDATES)
    assert theirs[2] != SMALL  # not equal across classes: the trap
    pins = _baseline_with_pin(tmp_path, SMALL)
    choose = Tuner(setup_for(tmp_path, pins_from=str(pins))).chooser()
    calls = []
    got = choose(KEY, theirs, fake_bench({}, calls))
    assert got is theirs[2] and not calls and choose.last.source == tuning.PINNED
    Tuner(setup_for(tmp_path)).choose(KEY, CANDIDATES, fake_bench({BIG: 2, MID: 1, SMALL: 3}, []))
    fresh = Tuner(setup_for(tmp_path)).chooser()
    assert fresh(KEY, theirs, fake_bench({}, calls)) is theirs[1] and not calls
    assert fresh.last.source == tuning.CACHED


def test_a_chooser_reports_the_tile_it_returned_and_its_kernel(tmp_path):
    """The kernel's `choose` hook is how the harness learns the tile a case ran: each
    provider gets its own chooser, which remembers its last choice (no module global)."""
    t = Tuner(setup_for(tmp_path, budget_s=1))
    mine, theirs = t.chooser("hash-a"), t.chooser("hash-b")
    assert mine.last is None
    assert mine(KEY, CANDIDATES, fake_bench({BIG: 2, MID: 1, SMALL: 3}, [])) == MID
    assert mine.last.config == MID and mine.last.kernel == "hash-a"
    assert mine.last.source == tuning.TUNED and theirs.last is None
    assert theirs(KEY, CANDIDATES, lambda c: 9.0) == MID  # memo: not tuned again
    assert theirs.last.name == "128x128x64 g8 s4 w4" == tuning.config_name(MID)


def test_names_read_well_for_every_variant():
    from kernels.tile import TileConfig

    assert tuning.config_name(TileConfig(128, 128, 64, 8, 4, 4)) == "128x128x64 g8 s4 w4"
    assert tuning.config_name(TileConfig(128, 256, 64, 8, 3, 8, "tma")) == \
        "tma 128x256x64 g8 s3 w8"
    assert tuning.config_name(TileConfig(64, 64, 64, 8, 4, 4, split_k=8)) == \
        "64x64x64 g8 s4 w4 k8"


@pytest.mark.parametrize("tile", [
    TileConfig(128, 256, 64, 8, 3, 8, "tma"), TileConfig(64, 128, 32, 8, 4, 4, "tma_split", 6),
    TileConfig(64, 64, 256, 8, 5, 4, "tma", 1, 2), TileConfig(16, 128, 64, 8, 4, 4, split_k=4),
    TileConfig(1, 128, 64, 1, 1, 4, "gemv", 8), TileConfig(320, 128, 64, 8, 3, 8, "tma_tall")])
def test_a_tile_reads_back_from_its_name_alone_or_among_other_words(tile):
    """`parse_config_name` reads `config_name`'s words back, also where a source comes
    before them and operand copies after (scripts/lookup_diff.py's picks)."""
    name = tuning.config_name(tile)
    assert TileConfig(**tuning.parse_config_name(name)) == tile
    assert TileConfig(**tuning.parse_config_name(f"heuristic {name} [A pitch, B kmajor]")) \
        == tile
    assert tuning.parse_config_name("{'block_m': 64}") is None


def test_a_tile_at_one_program_per_sm_stores_as_tiles_did_before_occupancy():
    """Tables, pins, caches and baselines written before `occupancy` existed hold tiles
    without it: such a tile's JSON leaves it out, names and specs show it only at 2, and
    a stored tile without the field matches the candidate at one program per SM."""
    one = TileConfig(128, 64, 64, 8, 4, 4, "tma")
    two = TileConfig(128, 64, 64, 8, 4, 4, "tma", occupancy=2)
    assert "occupancy" not in tuning.tile_dict(one)
    assert tuning.tile_dict(two)["occupancy"] == 2
    assert TileConfig(**tuning.tile_dict(one)) == one
    assert TileConfig(**tuning.tile_dict(two)) == two
    assert tuning.config_name(one) == "tma 128x64x64 g8 s4 w4"
    assert tuning.config_name(two) == "tma 128x64x64 g8 s4 w4 o2"
    assert tuning.config_spec(two) == "tma:128x64x64:s4:w4:o2"
    stored = {"block_m": 128, "block_n": 64, "block_k": 64, "group_m": 8, "num_stages": 4,
              "num_warps": 4, "variant": "tma", "split_k": 1}
    assert tuning._candidate(stored, [two, one]) is one
    assert tuning._candidate({**stored, "occupancy": 2}, [one, two]) is two
    assert tuning.Choice("k", two, "tuned").to_json()["config"] == {**stored, "occupancy": 2}
    assert tuning.Choice("k", one, "tuned").to_json()["config"] == stored



def test_an_incumbent_outside_the_candidates_counts_among_those_offered(tmp_path):
    """`tune --stale` times a stale entry's own tile first, also where the candidates lack
    it: offered counts it, so a search the budget cut short of a candidate still reads
    as cut (tried < offered)."""
    from dataclasses import asdict

    from kernels.tile import TileConfig as T

    odd = T(64, 32, 32, 8, 3, 4)
    setup = setup_for(tmp_path, first=((KEY.split(" k")[0] + " ",
                                        tuple(sorted(asdict(odd).items()))),))
    assert odd not in CANDIDATES
    choice = Tuner(setup).choice(KEY, CANDIDATES, fake_bench({odd: 1, BIG: 2, MID: 1,
                                                              SMALL: 3}, []))
    assert choice.offered == len(CANDIDATES) + 1


def test_an_ab_reference_kernel_with_the_same_candidates_keeps_its_own_cache_entry(tmp_path):
    """The A/B reference kernel (other source, its own TileConfig class, the same
    candidate list) shared the current kernel's cache entry: each saved over the other's,
    so every later calibration run tuned both again while measuring (a review)."""
    import importlib.util
    import sys
    from dataclasses import asdict

    spec = importlib.util.spec_from_file_location("ref_tile_for_test", "kernels/tile.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    try:
        spec.loader.exec_module(mod)
        ref = tuple(mod.TileConfig(**asdict(c)) for c in CANDIDATES)
    finally:
        del sys.modules[spec.name]
    times = {BIG: 2.0, MID: 1.0, SMALL: 3.0}
    ref_times = {r: times[c] for r, c in zip(ref, CANDIDATES)}
    first = Tuner(setup_for(tmp_path, retune=True))   # the calibration's first run
    first.chooser("current")(KEY, CANDIDATES, fake_bench(times, []))
    first.chooser("reference")(KEY, ref, fake_bench(ref_times, []))
    calls = []
    later = Tuner(setup_for(tmp_path))   # a later run: both from the cache, none tuned
    cur, old = later.chooser("current"), later.chooser("reference")
    cur(KEY, CANDIDATES, fake_bench(times, calls))
    old(KEY, ref, fake_bench(ref_times, calls))
    assert (cur.last.source, old.last.source, calls) == (tuning.CACHED, tuning.CACHED, [])
