"""gemmgate/tune.py and `gemmgate tune`: table entries from tuned cases, merging, the
file written atomically and readable by the kernel, stale entries, and the CPU refusal.
The GPU search itself runs on the device (docs/PERF.md); here tuned results are synthetic."""

import json
from dataclasses import asdict, replace

import pytest

from gemmgate.cli import main
from gemmgate.results import CaseResult, ProviderResult
from gemmgate.shapes import Case
from gemmgate.tune import entry_of, incumbents, merged, orphans, stale_items, write_table
from gemmgate.tuning import config_name
from kernels import table, table_file
from kernels.tile import TileConfig

TMA = TileConfig(128, 256, 64, 8, 3, 8, "tma")
ENV = {"driver": "580.159.04", "triton": "3.6.0", "torch": "2.11.0", "date": "2026-11-30"}


KEY = "16bit bf16 rr tma | m4096 n4096 k4096 a4096,1 b4096,1"


def _result(config=TMA, accuracy="pass", key=KEY):
    tele = {"tuning": {"key": key, "config": asdict(config), "source": "tuned",
                       "kernel": "x", "timings_ms": {"a": 0.2, "b": 0.25, "c": None}}}
    return CaseResult("bf16", Case(4096, 4096, 4096), {
        "triton": ProviderResult("triton", accuracy, 1e-3, samples_ms=(0.2, 0.21, 0.2)),
        "vendor": ProviderResult("vendor", "pass", 1e-3, samples_ms=(0.22, 0.22, 0.23))},
        telemetry=tele)


def test_an_entry_records_what_it_was_tuned_on():
    e = entry_of(_result(), ENV)
    assert e["bucket"] == "16bit bf16 rr tma" and (e["m"], e["n"], e["k"]) == (4096,) * 3
    assert e["config"] == asdict(TMA) and e["kernel"] == table_file.variant_hash("tma")
    assert e["tuned_ms"] == 0.2 and e["tried"] == 3          # a failed candidate: None,
    # but tried: 3 of 3 offered is no budget cut (counting only those that ran said one)
    from gemmgate.cli_tune import budget_cut_line

    assert budget_cut_line([{**e, "offered": 3}], 10) is None
    assert e["triton_ms"] == 0.2 and e["vendor_ms"] == 0.22
    assert (e["driver"], e["triton"], e["torch"]) == ("580.159.04", "3.6.0", "2.11.0")
    kept = _result()   # a retune that kept its incumbent: the tile's own time, not the min
    kept.telemetry["tuning"]["timings_ms"][config_name(TMA)] = 0.22
    assert entry_of(kept, ENV)["tuned_ms"] == 0.22


def test_an_entry_records_how_many_candidates_the_search_had():
    r = _result()
    assert entry_of(r, ENV)["offered"] == 0          # not recorded (older caches, pins)
    r.telemetry["tuning"]["offered"] = 29
    assert entry_of(r, ENV)["offered"] == 29


def test_tune_warns_when_the_budget_cut_a_search():
    from gemmgate.cli_tune import budget_cut_line

    e = entry_of(_result(), ENV)
    full = {**e, "tried": 29, "offered": 29}
    assert budget_cut_line([full, {**e, "offered": 0}], 10) is None
    line = budget_cut_line([full, {**e, "tried": 21, "offered": 29, "m": 1280},
                            {**e, "tried": 25, "offered": 29}], 10)
    assert line.startswith("2 of 3 keys spent --budget-per-key 10 s")
    assert "m1280-n4096-k4096, 21 of 29" in line


def test_failed_or_untuned_cases_make_no_entry():
    assert entry_of(_result(accuracy="fail"), ENV) is None
    assert entry_of(_result(key="old-style key"), ENV) is None
    r = _result()
    r.telemetry.clear()
    assert entry_of(r, ENV) is None


def test_write_merges_replaces_the_same_key_and_the_kernel_reads_it(tmp_path):
    path = tmp_path / "tuned" / "nvidia-h200.json"
    first = entry_of(_result(), ENV)
    other = dict(first, m=1024, n=1024, k=1024)
    write_table(path, "nvidia-h200", ("h200",), [first, other])
    newer = dict(first, config=asdict(TileConfig(128, 128, 64, 8, 4, 8, "tma")))
    data = write_table(path, "nvidia-h200", ("h200",), [newer])
    assert len(data["entries"]) == 2                       # other kept, first replaced
    assert json.loads(path.read_text()) == data
    table.reload()
    got = table.lookup("NVIDIA H200", "16bit bf16 rr tma", 4096, 4096, 4096,
                       directory=path.parent)
    assert got == (TileConfig(128, 128, 64, 8, 4, 8, "tma"), "table")
    assert merged([first], []) == [first]


def test_a_retune_keeps_the_devices_the_table_lends_itself_to(tmp_path):
    """`borrowed_by` (kernels/table_file.py) is the table's, not the tuning's: a write
    keeps it, and a table without it gets none."""
    path = tmp_path / "nvidia-h200.json"
    write_table(path, "nvidia-h200", ("h200",), [entry_of(_result(), ENV)])
    assert "borrowed_by" not in json.loads(path.read_text())
    data = json.loads(path.read_text())
    path.write_text(json.dumps(dict(data, borrowed_by=["h100"])))
    other = dict(entry_of(_result(), ENV), m=1024, n=1024, k=1024)
    assert write_table(path, "nvidia-h200", ("h200",), [other])["borrowed_by"] == ["h100"]
    assert json.loads(path.read_text())["borrowed_by"] == ["h100"]


def test_each_entry_names_its_chip_and_a_table_holds_one_chips(tmp_path):
    """The issue asks each entry to carry its chip: a device reading a lent table holds
    its own and the lent entries in one list (a review). Written with the table's; an
    entry naming another chip is refused, the file as it was."""
    path = tmp_path / "nvidia-h200.json"
    data = write_table(path, "nvidia-h200", ("h200",),
                       [dict(entry_of(_result(), ENV), chip="nvidia-h100")])
    assert [e["chip"] for e in data["entries"]] == ["nvidia-h200"]
    before = path.read_text()
    bad = json.loads(before)
    bad["entries"][0]["chip"] = "nvidia-h100"
    with pytest.raises(table_file.TableError, match="entry 0 is invalid .chip is 'nvidia-h100'"):
        table_file.check_table(bad, "t")
    assert all(e["chip"] == json.loads(p.read_text())["chip"] for p in
               sorted(table_file.DEFAULT_DIR.glob("*.json"))
               for e in json.loads(p.read_text())["entries"])   # the committed tables


def test_a_retune_keeps_the_device_names_a_table_was_given(tmp_path):
    """A name added to `match` by hand (another device the table serves) was dropped at
    the next tune, and that device lost its table unsaid (a review): kept, the chip's own
    names after it."""
    path = tmp_path / "nvidia-h200.json"
    write_table(path, "nvidia-h200", ("h200",), [entry_of(_result(), ENV)])
    data = json.loads(path.read_text())
    path.write_text(json.dumps(dict(data, match=["h200 nvl", "h200"])))
    other = dict(entry_of(_result(), ENV), m=1024, n=1024, k=1024)
    assert write_table(path, "nvidia-h200", ("h200",), [other])["match"] == ["h200 nvl", "h200"]


def test_an_unreadable_table_is_not_overwritten(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("{broken")
    with pytest.raises(table_file.TableError, match="unreadable"):
        write_table(path, "nvidia-h200", ("h200",), [entry_of(_result(), ENV)])
    assert path.read_text() == "{broken"


def test_another_chips_table_and_an_entry_that_would_not_load_leave_the_table_as_it_is(
        tmp_path):
    path = tmp_path / "t.json"
    write_table(path, "nvidia-h100", ("h100",), [entry_of(_result(), ENV)])
    before = path.read_text()
    with pytest.raises(table_file.TableError, match="is nvidia-h100's, not nvidia-h200's"):
        write_table(path, "nvidia-h200", ("h200",), [entry_of(_result(), ENV)])
    bad = dict(entry_of(_result(), ENV), m=64, config=dict(entry_of(_result(), ENV)["config"],
                                                           num_warps=3))
    with pytest.raises(table_file.TableError, match="t.json, as written,: entry . is invalid"):
        write_table(path, "nvidia-h100", ("h100",), [bad])
    assert path.read_text() == before and sorted(x.name for x in tmp_path.iterdir()) == [
        "t.json", "t.json.lock"]


def test_stale_entries_become_cases_to_retune(tmp_path):
    path = tmp_path / "t.json"
    e = dict(entry_of(_result(), ENV), kernel="0123456789ab", layout="cr", pad=8)
    write_table(path, "nvidia-h200", ("h200",), [e, entry_of(_result(), ENV) | {"m": 8}])
    assert stale_items(path) == [("bf16", Case(4096, 4096, 4096, "cr", 8))]
    (prefix, fields), = incumbents(path)   # its tile, to be timed first when retuned
    assert dict(fields) == asdict(TMA)
    assert KEY.startswith(prefix) and not KEY.replace("m4096", "m40960").startswith(prefix)
    again = dict(e, bucket="16bit bf16 cr tma_split")   # the case stale in another bucket
    write_table(path, "nvidia-h200", ("h200",), [again])
    assert stale_items(path) == [("bf16", Case(4096, 4096, 4096, "cr", 8))]   # tuned once


def test_a_stale_entry_whose_case_retuned_under_another_bucket_is_an_orphan(tmp_path):
    path = tmp_path / "t.json"
    old = dict(entry_of(_result(), ENV), kernel="0123456789ab", bucket="16bit bf16 rc tma",
               chip="nvidia-h200")   # (each entry as written: its chip named)
    other = dict(old, m=8)   # stale, but its case was not retuned: kept
    write_table(path, "nvidia-h200", ("h200",), [old, other])
    fresh = dict(entry_of(_result(), ENV), chip="nvidia-h200")   # the same case, filed
    # under today's bucket
    write_table(path, "nvidia-h200", ("h200",), [fresh])
    assert orphans(path, [fresh]) == [old]
    left = write_table(path, "nvidia-h200", ("h200",), [], drop=orphans(path, [fresh]))
    assert left["entries"] == sorted([other, fresh], key=lambda e: (e["bucket"], e["m"]))
    assert orphans(path, []) == []


def test_incumbent_prefixes_match_the_keys_the_dispatcher_writes():
    """The prefix is the bucket and shape of kernels.dispatch's key, whatever strides."""
    from kernels.decide import _key

    key = _key("16bit bf16 rr tma", 4096, 4096, 4096, (4104, 1), (4096, 1))
    e = entry_of(_result(key=key), ENV)
    assert key.startswith(f"{e['bucket']} | m{e['m']} n{e['n']} k{e['k']} ")


def test_tune_refuses_the_cpu_and_bad_budgets(capsys):
    assert main(["tune", "--chip", "cpu"]) == 2
    assert "needs a GPU" in capsys.readouterr().err
    for bad in ("0", "-1", "nan", "inf", "1e10", "3601"):
        assert main(["tune", "--chip", "cpu", "--budget-per-key", bad]) == 2
        err = capsys.readouterr().err
        assert "--budget-per-key must be > 0 and at most 3600 seconds, got " in err
        assert "--case-timeout" not in err
    assert main(["tune", "--chip", "nvidia-h200", "--stale", "--shapes", "16x16x16"]) == 2
    assert "--stale retunes the table's stale entries" in capsys.readouterr().err


@pytest.mark.parametrize("device, chip_id, match", [
    ("NVIDIA L40S", "generic-gpu", ()),                 # no profile names it
    ("AMD Radeon Graphics", "amd-mi300x", ("mi300x",)),   # found by its gfx942 arch
])
def test_tune_refuses_a_device_whose_table_the_kernel_would_not_read(
        tmp_path, monkeypatch, capsys, device, chip_id, match):
    """The kernel finds its table by the device's name (`match`); tune wrote `match: []`
    for a generic GPU, and ["mi300x"] for an MI300X that names itself "AMD Radeon
    Graphics": exit 0, and never read (a review)."""
    from dataclasses import replace

    from gemmgate import cli_run, cli_tune

    def ctx_of(args, **kw):
        args.chip = "cpu"
        ctx = cli_run.context_from_args(args, **kw)
        chip = replace(ctx.chip, id=chip_id, vendor="nvidia", match=match)
        return replace(ctx, selection=replace(ctx.selection, chip=chip, device_name=device))

    monkeypatch.setattr(cli_tune, "context_from_args", ctx_of)
    monkeypatch.setattr(cli_tune, "tune", lambda *a, **k: pytest.fail("tuned"))
    table = tmp_path / f"{chip_id}.json"
    assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32", "--table", str(table)]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert f"this device ({device!r}) is {chip_id}" in err and "never read" in err
    assert not table.exists()


@pytest.fixture
def not_cpu(monkeypatch):
    """`gemmgate tune` past its CPU refusal: the CPU's context (the interpreter), its chip
    claiming a GPU vendor. Measuring a case fails the test: these inputs must be refused
    before any tuning."""
    from dataclasses import replace

    from gemmgate import cli_run, cli_tune

    def ctx_of(args, **kw):
        args.chip = "cpu"
        ctx = cli_run.context_from_args(args, **kw)
        chip = replace(ctx.chip, vendor="nvidia", match=("cpu",))
        return replace(ctx, selection=replace(ctx.selection, chip=chip))

    def no_tuning(*a, **k):
        raise AssertionError("tuned before refusing its input")

    monkeypatch.setattr(cli_tune, "context_from_args", ctx_of)
    monkeypatch.setattr(cli_tune, "tune", no_tuning)


def test_tune_refuses_an_empty_table_path_before_tuning(not_cpu, capsys):
    """An unset CI variable (`--table "$TABLE"`) must not send the writes into the
    committed table."""
    assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32", "--table", ""]) == 2
    assert "--table is an empty path" in capsys.readouterr().err


def test_tune_refuses_holdout_shapes_for_the_kernels_table_before_tuning(not_cpu, tmp_path,
                                                                       monkeypatch, capsys):
    """Holdout shapes measure how the table carries to shapes it was not tuned on: a tune
    wrote them into kernels/tuned (only a CI test caught it, after the GPU tune; a
    review). Into a --table elsewhere they may go (a measurement)."""
    import gemmgate.cli_tune
    from gemmgate.shapes import SETS

    class Reached(Exception):
        pass

    def no_tuning(*a, **k):
        raise Reached

    monkeypatch.setattr(gemmgate.cli_tune, "tune", no_tuning)
    c = SETS["holdout"][0]
    assert main(["tune", "--shapes", f"16x16x16,{c.m}x{c.n}x{c.k}", "--modes", "fp32"]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert f"{c.id}: 1 case(s) of a holdout set" in err and "--table outside" in err
    with pytest.raises(Reached):
        main(["tune", "--shapes", f"{c.m}x{c.n}x{c.k}", "--modes", "fp32", "--table",
              str(tmp_path / "x.json")])


def test_tune_refuses_another_chips_or_a_broken_table_before_tuning(not_cpu, tmp_path, capsys):
    other = tmp_path / "h100.json"
    write_table(other, "nvidia-h100", ("h100",), [entry_of(_result(), ENV)])
    broken = tmp_path / "broken.json"
    broken.write_text("{broken")
    for path, said in ((other, "is nvidia-h100's, not cpu's"), (broken, "is unreadable")):
        before = path.read_text()
        assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32",
                     "--table", str(path)]) == 2
        assert said in capsys.readouterr().err and path.read_text() == before


def test_tune_refuses_a_second_table_of_the_device_in_the_kernels_folder(
        not_cpu, tmp_path, monkeypatch, capsys):
    """A candidate table tuned into kernels/tuned beside the device's own named the same
    device, and every kernel call on it raised TableError from then on (a review): refused
    before tuning, nothing written. The own table itself, or a file elsewhere, is not."""
    from gemmgate.tune import claimed_elsewhere

    monkeypatch.setattr(table_file, "DEFAULT_DIR", tmp_path)   # the kernel's table folder
    own = tmp_path / "cpu.json"
    write_table(own, "cpu", ("cpu",), [entry_of(_result(), ENV)])
    table_file.reload()
    candidate = tmp_path / "cpu-candidate.json"
    assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32",
                 "--table", str(candidate)]) == 2
    err = capsys.readouterr().err
    assert "already names this device" in err and "cpu.json" in err
    assert not candidate.exists()
    assert claimed_elsewhere(candidate, "cpu") == str(own)
    assert claimed_elsewhere(own, "cpu") == ""
    assert claimed_elsewhere(tmp_path.parent / "cpu-candidate.json", "cpu") == ""
    assert claimed_elsewhere(candidate, "NVIDIA H200") == ""   # no table names it
    table_file.reload()


def test_a_tune_stopped_part_way_leaves_its_keys_in_its_json(not_cpu, tmp_path, monkeypatch,
                                                             capsys):
    """--json was written at the end only: a tune stopped part way left an earlier run's
    file there, looking like its own (a review). It holds the keys measured before the
    stop now, marked incomplete, as a run's does; the table has them too."""
    from gemmgate import cli_tune

    def stopped(ctx, budget_s, items, on_case):
        on_case(_result())
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_tune, "tune", stopped)
    out, table = tmp_path / "tune.json", tmp_path / "cpu.json"
    out.write_text(json.dumps({"old": "an earlier run"}))
    assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32", "--table", str(table),
                 "--json", str(out)]) == 130
    got = json.loads(out.read_text())
    assert got["environment"]["incomplete"] and len(got["cases"]) == 1
    assert len(json.loads(table.read_text())["entries"]) == 1


def test_a_tune_stopped_part_way_keeps_its_keys_in_case_order(not_cpu, tmp_path,
                                                              monkeypatch, capsys):
    """`tune --devices` hands each key on as its worker finishes it: a stopped tune's
    --json listed them in that order, where a whole one lists them in case order (a
    review). Here the workers' finishing order is given."""
    from dataclasses import replace

    from gemmgate import cli_tune

    def stopped(ctx, budget_s, items, on_case):
        done = [replace(_result(), mode=m.name, case=c, telemetry={}) for m, c in ctx.items]
        for r in (done[2], done[0]):
            on_case(r)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_tune, "tune", stopped)
    out, table = tmp_path / "tune.json", tmp_path / "cpu.json"
    assert main(["tune", "--shapes", "16x16x16,32x32x32,48x48x48", "--modes", "fp32",
                 "--table", str(table), "--json", str(out)]) == 130
    got = json.loads(out.read_text())
    assert got["environment"]["incomplete"] and [c["m"] for c in got["cases"]] == [16, 48]


def test_a_tune_says_the_stale_entries_it_leaves(not_cpu, tmp_path, monkeypatch, capsys):
    """A plain tune wrote its keys and said nothing of the table's stale ones (only a
    lookup's warning did; a review): it counts them and names the command."""
    from gemmgate import cli_tune

    monkeypatch.setattr(cli_tune, "tune", lambda ctx, b, items, on_case: [
        on_case(_result()) or _result()])
    monkeypatch.setattr(cli_tune, "_device", lambda ctx: ("cpu", 1, (0, 0)))
    table = tmp_path / "cpu.json"
    old = dict(entry_of(_result(), ENV), m=1024, kernel="0123456789ab")
    write_table(table, "cpu", ("cpu",), [old])
    assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32",
                 "--table", str(table)]) == 0
    assert "1 entries of" in (err := capsys.readouterr().err) and "tune --stale" in err
    assert "cases)" not in err
    # one case stale in two buckets: two entries, one case (the count said cases, "1
    # entries", a review)
    write_table(table, "cpu", ("cpu",), [dict(old, bucket=old["bucket"] + " x")])
    assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32",
                 "--table", str(table)]) == 0
    assert "2 entries of" in (err := " ".join(capsys.readouterr().err.split())) and \
        "retunes them (1 cases)" in err, err


def test_tune_stale_with_a_table_that_is_not_there_is_an_error(not_cpu, tmp_path, capsys):
    """A misspelt --table would otherwise say "no stale entries" and pass."""
    assert main(["tune", "--stale", "--table", str(tmp_path / "nvidia-h20.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_tune_runs_cases_through_the_run_path_and_writes_entries(tmp_path):
    """On the CPU the interpreter offers one tile, so nothing is timed, but the whole
    path (Runner.run_case with a searching tuner, entries, the file) runs."""
    from gemmgate.context import make_context
    from gemmgate.run import environment_of
    from gemmgate.tune import tune

    ctx = make_context("cpu", "smoke", "fp32", budget_s=0.05)
    results = tune(ctx, budget_s=1.0)
    assert len(results) == len(ctx.items) and all(r.passed for r in results)
    entries = [entry_of(r, environment_of(ctx)) for r in results]
    assert all(e is not None and e["bucket"].startswith("fp32 fp32 ") for e in entries)
    data = write_table(tmp_path / "cpu.json", "cpu", ("cpu",), entries)
    assert len(data["entries"]) == len(ctx.cases) > 0


def test_each_key_is_in_the_table_as_its_search_ends(tmp_path):
    """A tune stopped after its first key (a CI timeout) keeps that key: the writer
    merges each entry into the file when its case finishes, not once at the end."""
    from gemmgate.tune import KeyWriter

    path = tmp_path / "chip.json"
    write = KeyWriter(path, "chip", ("chip",), ENV)
    write(_result())
    assert [e["m"] for e in table_file.read_table(path)["entries"]] == [4096]
    second = _result(key="16bit bf16 rr tma | m2048 n4096 k4096 a4096,1 b4096,1")
    second = CaseResult("bf16", Case(2048, 4096, 4096), second.providers,
                        telemetry=second.telemetry)
    write(_result(accuracy="fail"))   # a failed key is not written
    write(second)
    assert sorted(e["m"] for e in table_file.read_table(path)["entries"]) == [2048, 4096]
    assert [e["m"] for e in write.entries] == [4096, 2048]


def test_a_device_reading_a_lent_table_tunes_over_it(tmp_path, monkeypatch):
    """`lent_table`: the lender's file name and the fresh lent entries the device reads,
    those whose bucket and shape its own table (`path`) lacks, before and after it has
    one; ('', []) for a device whose own table is matched and for a device nothing names.
    `incumbents_of` makes them a tune's first tiles: timed first, kept unless another
    measures KEEP_MARGIN faster."""
    from gemmgate.tune import incumbents_of, lent_table

    monkeypatch.setattr(table_file, "DEFAULT_DIR", tmp_path)   # the kernel's table folder
    lender = tmp_path / "nvidia-h200.json"
    r2 = replace(_result(key=KEY.replace("m4096 n4096", "m2048 n4096")),
                 case=Case(2048, 4096, 4096))
    write_table(lender, "nvidia-h200", ("h200",), [entry_of(_result(), ENV), entry_of(r2, ENV)])
    lender.write_text(json.dumps(dict(json.loads(lender.read_text()), borrowed_by=["h100"])))
    table_file.reload()
    own = tmp_path / "nvidia-h100.json"
    name, lent = lent_table("NVIDIA H100 SXM5", own)
    assert name == "nvidia-h200.json" and sorted(e["m"] for e in lent) == [2048, 4096]
    assert lent_table("NVIDIA H200", tmp_path / "other.json") == ("", [])   # its own match
    assert lent_table("NVIDIA A100", tmp_path / "nvidia-a100.json") == ("", [])
    write_table(own, "nvidia-h100", ("h100",), [entry_of(_result(), ENV)])   # m4096 tuned
    table_file.reload()
    name, lent = lent_table("NVIDIA H100 SXM5", own)
    assert name == "nvidia-h200.json" and [e["m"] for e in lent] == [2048]
    # another tune writes the file after the folder was read: the lent list is the read's
    # (a second read of `own` had counted 2 own entries and cut the lent one, a review)
    before = own.read_text()
    data = json.loads(before)   # (written as another process would: this one's read kept)
    data["entries"].append(dict(data["entries"][0], m=1024))
    own.write_text(json.dumps(data))
    assert [e["m"] for e in lent_table("NVIDIA H100 SXM5", own)[1]] == [2048]
    own.write_text(before)
    (prefix, fields), = incumbents_of(lent)
    assert prefix == "16bit bf16 rr tma | m2048 n4096 k4096 " and dict(fields) == asdict(TMA)
    # another table of this device's in the folder is what it reads: nothing lent to `path`
    assert lent_table("NVIDIA H100 SXM5", tmp_path / "elsewhere.json") == ("", [])
    write_table(own, "nvidia-h100", ("h100",), [entry_of(r2, ENV)])          # both tuned
    table_file.reload()
    assert lent_table("NVIDIA H100 SXM5", own) == ("", [])
    # a stale own entry hides nothing: the lent tile is read, and timed first again
    data = json.loads(own.read_text())
    data["entries"][0]["kernel"] = "0123456789ab"
    own.write_text(json.dumps(data))
    table_file.reload()
    name, lent = lent_table("NVIDIA H100 SXM5", own)
    assert name == "nvidia-h200.json" and [e["m"] for e in lent] == [2048]
    # a --table outside the kernel's folder is not what the device reads: nothing lent,
    # and that folder's other JSON files (a run's --json) are never parsed as tables
    other = tmp_path / "out"
    other.mkdir()
    (other / "tune.json").write_text("{}")
    assert lent_table("NVIDIA H100 SXM5", other / "h100.json") == ("", [])
    table_file.reload()




def test_the_hint_after_a_tune_is_a_lookup_diff_command_that_runs(tmp_path, monkeypatch,
                                                                  load_script):
    """After writing keys, `gemmgate tune` prints the lookup_diff call that lists the
    untuned shapes the new keys move (session 65); the command it prints runs."""
    import shlex
    from pathlib import Path

    from gemmgate.cli_tune import moved_hint

    kernel_table = table_file.DEFAULT_DIR / "nvidia-h100.json"
    assert moved_hint("NVIDIA H100 80GB HBM3", 132, (9, 0), tmp_path / "x.json") == ""  # --table
    assert moved_hint("NVIDIA A100-SXM4-80GB", 108, (8, 0), kernel_table) == ""   # not sm_90
    hint = moved_hint("NVIDIA H100 80GB HBM3", 114, (9, 0), kernel_table)
    assert hint.startswith("before committing nvidia-h100.json: ")
    argv = shlex.split(hint.split("`")[1])
    assert argv[:2] == ["python3", "scripts/lookup_diff.py"]
    assert argv[argv.index("--device") + 1] == "NVIDIA H100 80GB HBM3"
    assert argv[argv.index("--sms") + 1] == "114"
    root = Path(__file__).resolve().parents[2]
    ld = load_script(root / argv[1])
    monkeypatch.chdir(root)
    argv = [str(tmp_path / a) if a == "moved.csv" else a for a in argv]
    assert ld.main(argv[2:] + ["--sets", "pr", "--modes", "fp8"]) == 0
    assert (tmp_path / "moved.csv").read_text().startswith("m,n,k,layout,pad")


def test_a_tune_times_its_own_entries_tiles_first_then_the_lent_ones(tmp_path):
    """`tune_first`: the table's own entries' tiles, stale or current, before the lent ones
    (`tuning.incumbent` takes a key's first match), each kept unless a candidate measures
    KEEP_MARGIN faster: a plain tune of current entries held nothing and traded a tile
    for one 0.45% faster (a review)."""
    from gemmgate.cli_tune import tune_first
    from gemmgate.tuning import incumbent

    own = tmp_path / "nvidia-h100.json"
    lent = dict(entry_of(_result(TileConfig(64, 64, 64, 8, 3, 4, "tma")), ENV))
    assert [dict(f)["block_m"] for _, f in tune_first(own, [lent])] == [64]   # no table yet
    write_table(own, "nvidia-h100", ("h100",), [entry_of(_result(), ENV)])
    current = tune_first(own, [lent])
    data = json.loads(own.read_text())
    data["entries"][0]["kernel"] = "0123456789ab"              # stale: its tile is TMA
    own.write_text(json.dumps(data))
    stale = tune_first(own, [lent])
    for first in (current, stale):
        assert [dict(f)["block_m"] for _, f in first] == [128, 64]
        assert incumbent(KEY, [TMA], first) == TMA             # the own tile wins


def test_tune_refuses_a_chip_the_device_is_not(not_cpu, monkeypatch, tmp_path, capsys):
    """`--chip nvidia-h200` on an H100 would merge the H100's timings into the H200's
    table (which the H100 also reads, lent): refused before any tuning, the table as it was
    (a review, session 67)."""
    from dataclasses import replace

    from gemmgate import cli_tune

    made = cli_tune.context_from_args

    def mismatched(args, **kw):
        ctx = made(args, **kw)
        return replace(ctx, selection=replace(
            ctx.selection, mismatched=True,
            warning="--chip says cpu but the device is 'NVIDIA H100 80GB HBM3'"))

    monkeypatch.setattr(cli_tune, "context_from_args", mismatched)
    table = tmp_path / "cpu.json"
    assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32", "--table", str(table)]) == 2
    err = capsys.readouterr().err
    assert "the device is 'NVIDIA H100 80GB HBM3'" in err and "tunes on that device only" in err
    assert not table.exists()


def test_a_stale_tune_with_nothing_to_retune_leaves_no_earlier_json(not_cpu, tmp_path, capsys):
    """`tune --stale --json F` with no stale entry returned before F was cleared: an
    earlier tune's F stayed there after exit 0, looking like this run's (a review)."""
    table, out = tmp_path / "cpu.json", tmp_path / "tune.json"
    write_table(table, "cpu", ("cpu",), [entry_of(_result(), ENV)])   # fresh: nothing stale
    out.write_text(json.dumps({"old": "an earlier tune"}))
    assert main(["tune", "--stale", "--table", str(table), "--json", str(out)]) == 0
    assert "nothing to retune" in capsys.readouterr().err
    assert not out.exists()


def test_a_case_that_made_no_key_is_said_not_written(not_cpu, tmp_path, monkeypatch, capsys):
    """A case the kernel chose no tile for (M or N 0: nothing to compute) passed, made no
    entry and was named nowhere: "tuned 1 keys" of 2 cases, exit 0 (a review)."""
    from gemmgate import cli_tune

    none = _result()
    none.telemetry.clear()
    none = replace(none, case=Case(0, 4096, 4096))
    monkeypatch.setattr(cli_tune, "tune", lambda ctx, b, items, on_case: [
        on_case(r) or r for r in (_result(), none)])
    monkeypatch.setattr(cli_tune, "_device", lambda ctx: ("cpu", 1, (0, 0)))
    table = tmp_path / "cpu.json"
    assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32",
                 "--table", str(table)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "bf16 m0-n4096-k4096: the kernel chose no tile for it" in err, err
    assert "m4096-n4096-k4096: the kernel chose" not in err


def test_a_kernels_package_that_does_not_import_is_exit_2_naming_it(tmp_path):
    """A syntax error in kernels/: `run` says so with exit 2, where `tune` (whose first
    look at the table imports kernels) raised a traceback, exit 1 (a review)."""
    from tests.gemmgate.broken_kernels import run_broken

    r, _ = run_broken(tmp_path, "tune", "--chip", "cpu", "--shapes", "16x16x16", "--modes",
                      "fp32", "--table", str(tmp_path / "t.json"))
    assert r.returncode == 2, r.stderr[-2000:]
    assert "kernels/ cannot be imported: SyntaxError" in r.stderr
    assert "Traceback" not in r.stderr


def test_an_unusable_tuning_cache_leaves_an_earlier_json_as_it_was(not_cpu, tmp_path,
                                                                   monkeypatch, capsys):
    """Bad input is exit 2 with the --json untouched, as `run` leaves it (its preflight):
    tune cleared the --json, then its Runner found the tuning cache unusable (a review)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "cpu.json").write_text("{broken")
    monkeypatch.setenv("GEMMGATE_TUNING_DIR", str(cache))
    out = tmp_path / "tune.json"
    out.write_text(json.dumps({"old": "an earlier run"}))
    assert main(["tune", "--shapes", "16x16x16", "--modes", "fp32", "--table",
                 str(tmp_path / "cpu.json"), "--json", str(out)]) == 2
    assert "tuning cache" in capsys.readouterr().err
    assert json.loads(out.read_text()) == {"old": "an earlier run"}


def test_tune_refuses_holdout_shapes_for_a_table_linked_into_the_kernels_folder(
        not_cpu, tmp_path, monkeypatch, capsys):
    """A --table that is a symbolic link to a table of kernels/tuned is written through to
    it (files.write_text_atomic): its holdout shapes are refused as that file's own path's
    are (the link's folder was checked, and the tune went on to tune them; a review)."""
    from gemmgate.shapes import SETS
    from kernels import table_file

    monkeypatch.setattr(table_file, "DEFAULT_DIR", tmp_path / "tuned")
    target = tmp_path / "tuned" / "cpu.json"
    write_table(target, "cpu", ("cpu",), [entry_of(_result(), ENV)])
    link = tmp_path / "elsewhere" / "table.json"
    link.parent.mkdir()
    link.symlink_to(target)
    before = target.read_text()
    c = SETS["holdout"][0]
    assert main(["tune", "--shapes", f"{c.m}x{c.n}x{c.k}", "--modes", "fp32",
                 "--table", str(link)]) == 2
    assert f"{c.id}: 1 case(s) of a holdout set" in capsys.readouterr().err.replace("\n", "")
    assert target.read_text() == before
