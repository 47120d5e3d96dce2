"""gemmgate/trials.py: the check row, the power count, the trial schedule, and the
`gemmgate trials` loop with its checks faked (each check is a fresh process: here a fake
subprocess writes a synthetic check JSON, so nothing is timed)."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from gemmgate import trial_summaries, trials
from gemmgate.cli import main
from gemmgate.shapes import Case
from gemmgate.starter import PARENT_ENV

A, B = Case(32, 32, 32), Case(48, 16, 64)


def _check_json(record, verdicts: dict, level: float) -> dict:
    data = record.to_json()
    data["gate"] = {"verdicts": [{"id": k, "verdict": v, "remeasured": v == "regressed",
                                  "ratio": {"change": -0.05, "tolerance": 0.015},
                                  "ab": None, "tflops": None, "note": ""}
                                 for k, v in verdicts.items()],
                    "inject_slowdown": level, "ab_ref": None}
    return data


def test_check_rows_one_per_judged_case(synthetic_record):
    rec = synthetic_record([("fp32", A), ("fp32", B)])
    rows = trials.check_rows("check_1_0", _check_json(
        rec, {"fp32-m32-n32-k32": "regressed", "fp32-m48-n16-k64": "unchanged"}, 0.0), 1)
    assert [(r["mode"], r["case"], r["verdict"]) for r in rows] == [
        ("fp32", "m32-n32-k32", "regressed"), ("fp32", "m48-n16-k64", "unchanged")]
    assert rows[0]["ratio_change"] == "-0.05" and rows[0]["rc"] == 1
    assert set(rows[0]) == set(trials.COLUMNS)


def test_power_counts_false_alarms_misses_improved_and_red_checks():
    def row(src, level, verdict, rc=""):
        return {"source": src, "injected": str(level), "verdict": verdict, "mode": "fp32",
                "case": "m1", "rc": rc}

    rows = [row("c1", 0, "unchanged", 0), row("c1", 0, "improved", 0),
            row("c2", 0, "regressed", 1), row("c3", 0.03, "regressed", 1),
            row("c3", 0.03, "unchanged", 1), row("c3", 0.03, "failed", 1)]
    p = trials.power(rows)
    assert p[0.0] == {**p[0.0], "checks": 2, "red": 1, "judged": 3, "regressed": 1,
                      "improved": 1}
    assert p[0.0]["wrong"] == {"fp32-m1": 1}                      # the false alarm
    assert p[0.03]["judged"] == 2 and p[0.03]["wrong"] == {"fp32-m1": 1}   # the miss


def test_an_empty_output_counts_neither_as_caught_nor_missed():
    """The `empty` verdict (M or N is 0: nothing timed) was counted judged, a miss at every
    level above 0: a trials run over `tail` reported too little power (a review). Power
    from the rows and from the summaries agree."""
    rows = [{"source": "c1", "injected": "0.03", "verdict": v, "mode": "fp32", "case": c,
             "rc": 1, "stored_verdict": "", "ab_verdict": ""}
            for c, v in (("m32", "regressed"), ("m0", "empty"))]
    p = trials.power(rows)[0.03]
    assert (p["judged"], p["regressed"], p["wrong"]) == (1, 1, {})
    q = trial_summaries.power_from_summaries(trial_summaries.summarize_checks(rows),
                                    trial_summaries.summarize_cases(rows))[0.03]
    assert (q["judged"], q["regressed"], q["wrong"]) == (1, 1, {})
    assert trial_summaries.summarize_checks(rows)[0]["empty"] == 1


def test_levels_and_schedule():
    assert trials.parse_levels("0,0.03") == (0.0, 0.03)
    assert trials.schedule((0, 0.03), 2) == [0, 0.03, 0, 0.03]
    for bad in ("", "x", "-1", "11"):
        with pytest.raises(ValueError, match="--levels"):
            trials.parse_levels(bad)


def test_trials_command_runs_fresh_checks_and_writes_the_csv(tmp_path, monkeypatch,
                                                             synthetic_record, capsys):
    base = tmp_path / "b.json"
    (tmp_path / "s.csv").write_text("m,n,k\n32,32,32\n")
    assert main(["baseline", "update", "--chip", "cpu", "--modes", "fp32", "--budget", "0.1",
                 "--shapes", str(tmp_path / "s.csv"), "--output", str(base)]) == 0
    seen = []

    def fake_run(cmd, stdout=None, stderr=None, env=None):
        seen.append(cmd)
        assert env[PARENT_ENV] == str(os.getpid())   # it ends with trials (starter.py)
        level = float(cmd[cmd.index("--inject-slowdown") + 1])
        verdict = "regressed" if level > 0 else "unchanged"
        data = _check_json(synthetic_record([("fp32", A)]), {"fp32-m32-n32-k32": verdict},
                           level)
        with open(cmd[cmd.index("--json") + 1], "w") as f:
            json.dump(data, f)
        return subprocess.CompletedProcess(cmd, int(level > 0))

    monkeypatch.setattr(trials.subprocess, "run", fake_run)
    out = tmp_path / "trials"
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--baseline", str(base),
                 "--levels", "0,0.03", "--repeats", "2", "--case-timeout", "77",
                 "--out", str(out)]) == 0
    assert len(seen) == 4 and all(c[3] == "check" for c in seen)
    assert not any("--retune" in c for c in seen)            # not asked for, not passed
    assert all(c[c.index("--case-timeout") + 1] == "77.0" for c in seen)
    assert [c[c.index("--inject-slowdown") + 1] for c in seen] == ["0.0", "0.03"] * 2
    assert all("--baseline" in c and "--modes" in c for c in seen)
    rows = trials.read_csv(out / "checks.csv")
    assert len(rows) == 4
    p = trials.power(rows)
    assert p[0.0]["regressed"] == 0 and p[0.03]["regressed"] == 2 and p[0.03]["red"] == 2
    assert "gate power on cpu" in capsys.readouterr().out


def test_retune_is_forwarded_to_every_check():
    """On a GPU (the CPU refuses --retune: the interpreter runs one tile) each check
    retunes as the trials were asked."""
    import argparse

    from gemmgate.cli_trials import _forwarded

    args = argparse.Namespace(chip="nvidia-h200", shapes="pr", modes="bf16", timing=None,
                              budget=None, block=None, devices=None, case_timeout=77.0,
                              retune=True)
    assert _forwarded(args) == ["--chip", "nvidia-h200", "--shapes", "pr", "--modes", "bf16",
                                "--case-timeout", "77.0", "--retune"]
    assert "--retune" not in _forwarded(argparse.Namespace(**{**vars(args), "retune": False}))


def test_trials_refuses_bad_arguments_before_any_check(tmp_path, capsys):
    assert main(["trials", "--chip", "cpu", "--levels", "0,x", "--out", str(tmp_path)]) == 2
    assert main(["trials", "--chip", "cpu", "--repeats", "0", "--out", str(tmp_path)]) == 2
    assert main(["trials", "--chip", "cpu", "--baseline", str(tmp_path / "none.json"),
                 "--out", str(tmp_path / "o")]) == 2
    assert "no baseline at" in capsys.readouterr().err
    for bad, said in ((["--shapes", "bogus"], "unknown shape set 'bogus'"),
                      (["--modes", "fp64"], "fp64"), (["--budget", "-1"], "--budget")):
        assert main(["trials", "--chip", "cpu", *bad, "--out", str(tmp_path / "p")]) == 2
        assert said in capsys.readouterr().err        # the checks' own arguments, up front


def test_a_child_check_that_does_not_judge_is_exit_2_naming_its_log(tmp_path, monkeypatch,
                                                                    capsys):
    base = tmp_path / "b.json"
    (tmp_path / "s.csv").write_text("m,n,k\n32,32,32\n")
    assert main(["baseline", "update", "--chip", "cpu", "--modes", "fp32", "--budget", "0.1",
                 "--shapes", str(tmp_path / "s.csv"), "--output", str(base)]) == 0
    monkeypatch.setattr(trials.subprocess, "run",
                        lambda cmd, stdout=None, stderr=None, env=None:
                        subprocess.CompletedProcess(cmd, 2))
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--baseline", str(base),
                 "--levels", "0", "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert "trial 1 (slowdown 0) failed with exit 2; see" in err and "Traceback" not in err
    # a check not measured to its end (exit 3: a case past --case-timeout) is exit 3, not
    # a usage error's 2 (a review); an --out whose name holds rich markup is printed as is
    monkeypatch.setattr(trials.subprocess, "run",
                        lambda cmd, stdout=None, stderr=None, env=None:
                        subprocess.CompletedProcess(cmd, 3))
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--baseline", str(base),
                 "--levels", "0", "--out", str(tmp_path / "o[/]")]) == 3
    err = capsys.readouterr().err.replace("\n", "")
    assert "failed with exit 3" in err and "o[/]" in err and "Traceback" not in err


def test_a_child_that_writes_no_json_is_not_counted_by_an_earlier_runs_file(
        tmp_path, monkeypatch, synthetic_record, capsys):
    """A check that exits 1 without writing its JSON (a traceback) left an earlier run's
    check_1_0.json in --out counted as this trial's, rc 0 (a review)."""
    from gemmgate.shapes import Case

    base = tmp_path / "b.json"
    (tmp_path / "s.csv").write_text("m,n,k\n32,32,32\n")
    assert main(["baseline", "update", "--chip", "cpu", "--modes", "fp32", "--budget", "0.1",
                 "--shapes", str(tmp_path / "s.csv"), "--output", str(base)]) == 0
    out = tmp_path / "t"
    out.mkdir()
    old = synthetic_record([("fp32", Case(32, 32, 32))])
    (out / "check_1_0.json").write_text(json.dumps(old.to_json()))   # an earlier run's
    monkeypatch.setattr(trials.subprocess, "run",
                        lambda cmd, stdout=None, stderr=None, env=None:
                        subprocess.CompletedProcess(cmd, 1))   # wrote nothing
    # (the command refuses such a folder up front, below; run_trials guards on its own)
    with pytest.raises(trials.TrialError, match="trial 1 \\(slowdown 0\\) failed with "
                                                "exit 1") as e:
        trials.run_trials(["--chip", "cpu", "--baseline", str(base)], [0.0], 1, out)
    assert e.value.code == 3


def test_an_out_folder_holding_an_earlier_trials_run_is_refused_and_kept(tmp_path, capsys):
    """A second trials run into the same --out mixed with the first: its checks.csv
    listed the new checks beside the old check files, and a failed run left the old
    checks.csv looking current (a review). Hours of checks: refused, kept."""
    out = tmp_path / "t"
    out.mkdir()
    for name in ("check_1_0.json", "check_2_0.03.txt", "checks.csv", "notes.md"):
        (out / name).write_text("earlier")
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--levels", "0",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert f"--out {out} holds an earlier trials run" in err and "3 file(s)" in err
    assert all((out / n).read_text() == "earlier" for n in ("check_1_0.json", "checks.csv"))
    (out / "check_1_0.json").unlink()
    (out / "check_2_0.03.txt").unlink()
    (out / "checks.csv").unlink()
    assert trials.earlier_trials(out) == []   # a folder of other files is taken


def test_an_out_folder_holding_only_a_kept_runs_summaries_is_refused_and_kept(tmp_path,
                                                                             capsys):
    """checks_summary.csv and cases_summary.csv are what docs/results keeps of a trials
    run: a new run into such a folder wrote over them, exit 0, where one holding
    checks.csv is refused (a review)."""
    out = tmp_path / "kept"
    out.mkdir()
    for name in ("checks_summary.csv", "cases_summary.csv"):
        (out / name).write_text("earlier")
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--levels", "0",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert f"--out {out} holds an earlier trials run" in err and "2 file(s)" in err
    assert all((out / n).read_text() == "earlier"
               for n in ("checks_summary.csv", "cases_summary.csv"))


def test_a_child_check_that_did_not_end_is_no_trial(tmp_path, monkeypatch,
                                                    synthetic_record):
    """A check ended outright (a provider's os._exit(0)) exits 0 over its --json marked
    running (cli_run.mark_running): not counted as a trial, exit 3."""
    from gemmgate.cli_run import RUNNING

    unended = synthetic_record([("fp32", Case(32, 32, 32))], environment={
        "chip": "cpu", "incomplete": RUNNING})

    def ended_outright(cmd, stdout=None, stderr=None, env=None):
        Path(cmd[cmd.index("--json") + 1]).write_text(json.dumps(unended.to_json()))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(trials.subprocess, "run", ended_outright)
    with pytest.raises(trials.TrialError, match="exited 0, but its check did not end "
                                                r"\(running: ") as e:
        trials.run_trials(["--chip", "cpu"], [0.0], 1, tmp_path / "t")
    assert e.value.code == 3


def test_a_failed_child_checks_own_reason_is_said(tmp_path, monkeypatch):
    """The reason a child check refused its input was only in its log (a review)."""
    def refuses(cmd, stdout=None, stderr=None, env=None):
        stdout.write("chip cpu ...\ngemmgate: error: no case of 8x8x8 (fp32) is in the "
                     "baseline b.json\n")
        return subprocess.CompletedProcess(cmd, 2)

    monkeypatch.setattr(trials.subprocess, "run", refuses)
    with pytest.raises(trials.TrialError) as e:
        trials.run_trials(["--chip", "cpu"], [0.0], 1, tmp_path / "t")
    assert "failed with exit 2: error: no case of 8x8x8 (fp32) is in the baseline b.json; " \
        "see" in str(e.value) and e.value.code == 2


def test_the_summaries_kept_in_the_repository_give_the_same_power(tmp_path):
    """docs/results keeps checks_summary.csv and cases_summary.csv, not every case check:
    the power counts from them must equal those from the full rows."""
    import csv

    def row(src, level, case, verdict, stored, ab, rc):
        return {"source": src, "injected": str(level), "mode": "bf16", "case": case,
                "verdict": verdict, "stored_verdict": stored, "ab_verdict": ab, "rc": rc,
                "level": "machine", "ratio_change": "-0.01", "ratio_tolerance": "0.02",
                "ab_change": "0.001", "ab_tolerance": "0.015", "gpu": "GPU-1"}

    rows = [row("c1", 0, "m1", "unchanged", "improved", "unchanged", 0),
            row("c1", 0, "m2", "regressed", "regressed", "unchanged", 0),
            row("c2", 0.03, "m1", "regressed", "unchanged", "regressed", 1),
            row("c2", 0.03, "m2", "unchanged", "unchanged", "unchanged", 1),
            # a check without --ab-ref: no A/B verdict (counted as judged; a review)
            row("c3", 0.03, "m1", "unchanged", "unchanged", "", 0)]
    trials.write_summaries(tmp_path, rows)
    with open(tmp_path / "checks_summary.csv") as f:
        checks = list(csv.DictReader(f))
    with open(tmp_path / "cases_summary.csv") as f:
        cases = list(csv.DictReader(f))
    for column, prefix in (("verdict", ""), ("stored_verdict", "stored_"),
                           ("ab_verdict", "ab_")):
        full = trials.power(rows, column)
        kept = trial_summaries.power_from_summaries(checks, cases, prefix)
        for level in full:
            for key in ("checks", "red", "judged", "regressed", "improved", "wrong"):
                assert full[level][key] == kept[level][key], (column, level, key)


def test_rejudge_judges_recorded_checks_against_another_baseline(tmp_path, synthetic_record,
                                                                  capsys):
    """`trials --rejudge`: no measuring; the recorded cases against the baseline given.
    A baseline 10% faster than the recorded ratios says regressed, one equal to them
    unchanged, and the CSV and exit column follow."""
    from gemmgate import baselines as bl

    rec = synthetic_record([("fp32", A), ("fp32", B)])
    check = tmp_path / "g0" / "check_1_0.json"
    check.parent.mkdir()
    check.write_text(json.dumps(_check_json(rec, dict.fromkeys(
        ("fp32-m32-n32-k32", "fp32-m48-n16-k64"), "unchanged"), 0.0)))
    same = bl.build([rec], "cpu", "test")
    for name, scale, want in (("same", 1.0, "unchanged"), ("faster", 1.1, "regressed")):
        base = bl.Baseline(same.chip, same.provenance, {
            k: trials_replace(c, scale) for k, c in same.cases.items()})
        path = tmp_path / f"{name}.json"
        bl.save(path, base)
        out = tmp_path / f"out-{name}"
        assert main(["trials", "--rejudge", str(check), "--baseline", str(path),
                     "--out", str(out)]) == 0
        rows = trials.read_csv(out / "checks.csv")
        assert {r["verdict"] for r in rows} == {want} and len(rows) == 2
        assert {r["source"] for r in rows} == {"g0/check_1_0"}
        assert {r["rc"] for r in rows} == {str(int(want == "regressed"))}
    assert main(["trials", "--rejudge", str(check), "--out", str(tmp_path / "x")]) == 2
    assert "--rejudge needs --baseline FILE" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["trials", "--rejudge", str(bad), "--baseline", str(path),
                 "--out", str(tmp_path / "y")]) == 2
    assert f"check file {bad} is not JSON" in capsys.readouterr().err.replace("\n", "")
    other = tmp_path / "h200.json"                       # another chip's baseline
    bl.save(other, bl.Baseline("nvidia-h200", same.provenance, dict(same.cases)))
    for argv, said in (
            (["--baseline", str(other)], "was checked on cpu; the baseline is nvidia-h200's"),
            (["--baseline", str(path), "--floor", "5"], "--floor must be a fraction"),
            (["--baseline", str(path), "--levels", "0.1"], "--levels would change nothing"),
            (["--baseline", str(path), "--repeats", "3", "--deadline", "9"],
             "--repeats, --deadline would change nothing"),
            (["--baseline", str(path), "--modes", "fp16", "--budget", "99", "--shapes",
              "16x16x16", "--block", "2", "--ab-ref", "HEAD", "--retune"],
             "--ab-ref, --retune, --shapes, --modes, --budget, --block would change nothing"),
            (["--baseline", str(path), "--chip", "cpu"], "--chip would change nothing")):
        assert main(["trials", "--rejudge", str(check), *argv,
                     "--out", str(tmp_path / "z")]) == 2
        assert said in capsys.readouterr().err.replace("\n", " ")
    assert main(["trials", "--chip", "cpu", "--floor", "0.02", "--out", str(tmp_path / "w")]) == 2
    assert "--floor is --rejudge's" in capsys.readouterr().err
    # a recorded floor is checked as --floor is (0 became the default, -0.02 a negative
    # tolerance that called a +0.4% change improved; a review)
    for recorded in (0, -0.02, "0.015", 1.5, True):
        data = json.loads(check.read_text())
        data["gate"]["floor"] = recorded
        spoilt = tmp_path / "g1" / "check_1_0.json"
        spoilt.parent.mkdir(exist_ok=True)
        spoilt.write_text(json.dumps(data))
        assert main(["trials", "--rejudge", str(spoilt), "--baseline", str(path),
                     "--out", str(tmp_path / "v")]) == 2
        assert f"gate.floor is {recorded!r}, not a fraction" in \
            capsys.readouterr().err.replace("\n", "")
        assert main(["trials", "--rejudge", str(spoilt), "--baseline", str(path), "--floor",
                     "0.015", "--out", str(tmp_path / "v")]) == 0
    assert main(["trials", "--chip", "cpu", "--deadline", "-5", "--out", str(tmp_path / "w")]) == 2
    assert "--deadline must be > 0 seconds" in capsys.readouterr().err


def test_rejudge_reads_a_check_as_the_run_loader_checked_it(tmp_path, synthetic_record,
                                                              capsys):
    """Rows come from the typed record, not the raw file: a case without its (optional)
    id, a commit that is not a string (now refused by name), an unreadable ratio
    (recomputed from the samples) were a traceback or an unnamed error; the same check
    twice is refused (its verdicts would count twice)."""
    from gemmgate import baselines as bl

    rec = synthetic_record([("fp32", A), ("fp32", B)])
    path = tmp_path / "same.json"
    bl.save(path, bl.build([rec], "cpu", "test"))   # (before the check's commit is spoilt)
    data = _check_json(rec, {}, 0.0)
    for c in data["cases"]:
        del c["id"]
    data["cases"][0]["ratio"] = "x"
    data["environment"]["commit"] = 5   # a commit that is not text: refused, naming it
    check = tmp_path / "g0" / "check_1_0.json"
    check.parent.mkdir()
    check.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert main(["trials", "--rejudge", str(check), "--baseline", str(path),
                 "--out", str(out)]) == 2
    assert f"{check}: environment.commit is 5, not a string" in \
        capsys.readouterr().err.replace("\n", "")
    data["environment"]["commit"] = "5"
    check.write_text(json.dumps(data))
    assert main(["trials", "--rejudge", str(check), "--baseline", str(path),
                 "--out", str(out)]) == 0
    rows = trials.read_csv(out / "checks.csv")
    assert [r["case"] for r in rows] == ["m32-n32-k32", "m48-n16-k64"]
    assert {r["commit"] for r in rows} == {"5"} and float(rows[0]["ratio"]) > 0   # recomputed
    copy = tmp_path / "copy.json"
    copy.write_text(check.read_text())
    assert main(["trials", "--rejudge", str(check), str(copy), "--baseline", str(path),
                 "--out", str(tmp_path / "out2")]) == 2
    assert f"check file {copy} is the same check as {check}" in \
        capsys.readouterr().err.replace("\n", "")


def trials_replace(case, scale: float):
    """A baseline case with its stored ratio (and runs) scaled, noise from one run."""
    from dataclasses import replace

    noise = replace(case.noise, ratio_runs=tuple(r * scale for r in case.noise.ratio_runs))
    return replace(case, ratio=case.ratio * scale, noise=noise)


def test_rejudge_keeps_checks_of_one_folder_and_name_apart_and_needs_a_judged_case(
        tmp_path, synthetic_record, capsys):
    """a/res/check_1 and b/res/check_1 were one source, their rows folded into one check
    in the summary; checks none of whose cases the baseline holds judged nothing and
    passed (a review). The power table names a level of 0.4% as such, not 0%."""
    from gemmgate import baselines as bl

    rec = synthetic_record([("fp32", A), ("fp32", B)])
    paths = []
    for folder, level in (("a", 0.0), ("b", 0.004)):
        check = tmp_path / folder / "res" / "check_1.json"
        check.parent.mkdir(parents=True)
        check.write_text(json.dumps(_check_json(rec, dict.fromkeys(
            ("fp32-m32-n32-k32", "fp32-m48-n16-k64"), "unchanged"), level)))
        paths.append(str(check))
    path = tmp_path / "same.json"
    bl.save(path, bl.build([rec], "cpu", "test"))
    out = tmp_path / "out"
    assert main(["trials", "--rejudge", *paths, "--baseline", str(path), "--out", str(out)]) == 0
    assert {r["source"] for r in trials.read_csv(out / "checks.csv")} == set(paths)
    assert len(trials.read_csv(out / "checks_summary.csv")) == 2
    printed = capsys.readouterr().out
    assert "0.4%" in printed
    other = bl.build([synthetic_record([("fp32", Case(64, 64, 64))])], "cpu", "test")
    bl.save(tmp_path / "other.json", other)
    assert main(["trials", "--rejudge", *paths, "--baseline", str(tmp_path / "other.json"),
                 "--out", str(tmp_path / "none")]) == 2
    assert "nothing to judge" in capsys.readouterr().err


def test_case_summaries_take_the_median_and_largest_change():
    rows = [{"injected": "0", "mode": "bf16", "case": "m1", "verdict": "unchanged",
             "stored_verdict": "unchanged", "ab_verdict": "unchanged", "level": "machine",
             "ratio_change": str(x), "ratio_tolerance": "0.02", "ab_change": "",
             "ab_tolerance": ""} for x in (0.01, -0.03, 0.02, 0.0)]
    (case,) = trial_summaries.summarize_cases(rows)
    assert float(case["ratio_change_median"]) == pytest.approx(0.005)   # (0 + 0.01) / 2
    assert float(case["ratio_change_max_abs"]) == pytest.approx(0.03)
    assert case["ab_change_median"] == "" and case["checks"] == 4


def test_checks_csv_is_rewritten_whole_or_not_at_all(tmp_path, monkeypatch):
    """checks.csv is rewritten after every trial: a write stopped part way (rows that
    raise after the first; the file's own write stopped before it is on disk) leaves the
    file as it was, not cut off after the header."""
    path = tmp_path / "checks.csv"
    first = [{"case": "m1-n1-k1", "level": 0.0}, {"case": "m2-n2-k2", "level": 0.03}]
    trials.write_csv(path, first)
    before = path.read_text()
    assert [r["case"] for r in trials.read_csv(path)] == ["m1-n1-k1", "m2-n2-k2"]

    def rows():
        yield {"case": "m3-n3-k3", "level": 0.0}
        raise KeyboardInterrupt   # as SIGTERM lands mid-write

    with pytest.raises(KeyboardInterrupt):
        trials.write_csv(path, rows())
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["checks.csv"]   # no temp file left

    def stopped(fd):   # as SIGTERM lands in the write itself (the rows above raise before
        raise KeyboardInterrupt   # any file is opened: a plain write passed them; a review)

    from gemmgate import files
    monkeypatch.setattr(files.os, "fsync", stopped)
    with pytest.raises(KeyboardInterrupt):
        trials.write_csv(path, [{"case": "m3-n3-k3", "level": 0.0}])
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["checks.csv"]


@pytest.mark.parametrize("edit, said", [
    (lambda d: d.update(gate="x"), "gate is str, not an object"),
    (lambda d: d["gate"].update(ab_ref=5), "gate.ab_ref is 5, not a commit"),
    (lambda d: d["gate"].update(inject_slowdown="abc"), "gate.inject_slowdown is 'abc'"),
    (lambda d: d["gate"].update(inject_slowdown=-5), "gate.inject_slowdown is -5"),
    (lambda d: d["environment"].update(block=3), "was timed with --block 3, the baseline"),
    (lambda d: d["environment"].update(copies="per-call"), "was timed with --copies per-call"),
    (lambda d: d["environment"].update(incomplete="interrupted"),
     "did not end (interrupted): it is no trial to count"),
    (lambda d: d["cases"][0]["telemetry"].update(injected_slowdown=0.03),
     "telemetry.injected_slowdown is 0.03, not an object"),
])
def test_rejudge_refuses_a_record_it_cannot_judge_naming_it(tmp_path, synthetic_record,
                                                            capsys, edit, said):
    """A hand-edited gate was a traceback (exit 1) or a row of -500%; a check timed at
    --block 3 or with per-call copies was judged against a block-1, kept-copies baseline
    as speed-ups of 81x and 129x, unsaid (a review)."""
    from gemmgate import baselines as bl

    rec = synthetic_record([("fp32", A), ("fp32", B)])
    path = tmp_path / "base.json"
    bl.save(path, bl.build([rec], "cpu", "test"))
    data = _check_json(rec, {}, 0.0)
    edit(data)
    check = tmp_path / "g" / "check_1_0.json"
    check.parent.mkdir()
    check.write_text(json.dumps(data))
    assert main(["trials", "--rejudge", str(check), "--baseline", str(path),
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert said in err and "Traceback" not in err


def test_rejudge_names_a_check_given_without_its_folder_by_its_name(tmp_path, synthetic_record,
                                                                  monkeypatch):
    """Its rows said "/check_1_0" (a review)."""
    from gemmgate import baselines as bl

    rec = synthetic_record([("fp32", A)])
    path = tmp_path / "base.json"
    bl.save(path, bl.build([rec], "cpu", "test"))
    (tmp_path / "check_1_0.json").write_text(json.dumps(_check_json(rec, {}, 0.0)))
    monkeypatch.chdir(tmp_path)
    rows = trials.rejudge(["check_1_0.json"], bl.load(path), tmp_path / "o")
    assert {r["source"] for r in rows} == {"check_1_0"}


def test_rejudge_into_a_measured_trials_folder_is_refused(tmp_path, synthetic_record, capsys):
    """Its checks.csv (the children's exits, its own judgement) was replaced by the
    rejudge's, beside check files judged against another baseline (a review); an earlier
    rejudge's output is replaced, as asked."""
    from gemmgate import baselines as bl

    rec = synthetic_record([("fp32", A), ("fp32", B)])
    path = tmp_path / "base.json"
    bl.save(path, bl.build([rec], "cpu", "test"))
    measured = tmp_path / "trials"
    measured.mkdir()
    check = measured / "check_1_0.json"
    check.write_text(json.dumps(_check_json(rec, {}, 0.0)))
    (measured / "checks.csv").write_text("kept\n")
    assert main(["trials", "--rejudge", str(check), "--baseline", str(path),
                 "--out", str(measured)]) == 2
    assert "holds a measured trials run (check_1_0.json)" in capsys.readouterr().err
    assert (measured / "checks.csv").read_text() == "kept\n"
    again = tmp_path / "rejudged"
    for _ in range(2):
        assert main(["trials", "--rejudge", str(check), "--baseline", str(path),
                     "--out", str(again)]) == 0


def test_the_deadline_counts_from_the_command_s_start(tmp_path):
    """`--deadline S`: no check starts S seconds after the command did; a calibration
    before the checks counts (it was left out: a check began 25 s into a 4 s deadline,
    a review). The CLI passes its start; here one 10 s ago, and no check runs."""
    said = []
    rows = trials.run_trials(["--chip", "cpu"], [0.0], 1, tmp_path / "o", deadline_s=5,
                             on_trial=said.append, started=time.monotonic() - 10)
    assert rows == [] and said == ["deadline: stopping before trial 1"]


def _cpu_baseline(tmp_path):
    base = tmp_path / "b.json"
    (tmp_path / "s.csv").write_text("m,n,k\n32,32,32\n")
    assert main(["baseline", "update", "--chip", "cpu", "--modes", "fp32", "--budget", "0.1",
                 "--shapes", str(tmp_path / "s.csv"), "--output", str(base)]) == 0
    return base


def test_trials_refuses_a_block_unlike_the_baseline_s_before_any_check(tmp_path, monkeypatch,
                                                                      capsys):
    """`trials --block 3` against a block-1 baseline ran every check (each warning only in
    its log) and reported an A/A's 100% false alarms, exit 0, where `--rejudge` refuses
    those very checks (a review)."""
    base = _cpu_baseline(tmp_path)
    monkeypatch.setattr(trials.subprocess, "run", lambda *a, **k: pytest.fail("a check ran"))
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--baseline", str(base),
                 "--block", "3", "--levels", "0", "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert "--block 3, but the baseline" in err and "measured with 1" in err


def test_a_deadline_before_the_first_check_is_no_power_and_unrun_levels_are_said(
        tmp_path, monkeypatch, synthetic_record, capsys):
    """No check ran (the deadline passed first): an empty power table, exit 0; a level
    the deadline left unchecked was silently absent from the table (a review)."""
    base = _cpu_baseline(tmp_path)
    ticks = iter(range(0, 10**9, 100))   # 100 s a call: the deadline passes at once
    monkeypatch.setattr(trials.time, "monotonic", lambda: next(ticks))
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--baseline", str(base),
                 "--deadline", "5", "--levels", "0", "--out", str(tmp_path / "t")]) == 3
    assert "no check ran" in capsys.readouterr().err
    monkeypatch.undo()
    calls = []

    def fake_run(cmd, stdout=None, stderr=None, env=None):   # one check, then the deadline
        calls.append(cmd)
        monkeypatch.setattr(trials.time, "monotonic", lambda: 1e12)   # deadline passed
        return _a_passing_check(cmd, synthetic_record)

    monkeypatch.setattr(trials.subprocess, "run", fake_run)
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--baseline", str(base),
                 "--deadline", "1000", "--levels", "0,0.03", "--out", str(tmp_path / "u")]) == 0
    assert len(calls) == 1
    assert "no check at injected 3%" in capsys.readouterr().err


def _a_passing_check(cmd, synthetic_record) -> subprocess.CompletedProcess:
    """A stand-in `gemmgate check` child: A unchanged, written to its --json, exit 0."""
    data = _check_json(synthetic_record([("fp32", A)]), {"fp32-m32-n32-k32": "unchanged"},
                       0.0)
    with open(cmd[cmd.index("--json") + 1], "w") as f:
        json.dump(data, f)
    return subprocess.CompletedProcess(cmd, 0)


def test_rejudge_says_the_recorded_cases_the_baseline_leaves_out(tmp_path, synthetic_record,
                                                                 capsys):
    """A check of two cases rejudged against a baseline of one counted one case check,
    the other left out unsaid (`check` notes the cases not in its baseline; a review)."""
    from gemmgate import baselines as bl

    rec = synthetic_record([("fp32", A), ("fp32", B)])
    check = tmp_path / "g" / "check_1_0.json"
    check.parent.mkdir()
    check.write_text(json.dumps(_check_json(rec, dict.fromkeys(
        ("fp32-m32-n32-k32", "fp32-m48-n16-k64"), "unchanged"), 0.0)))
    path = tmp_path / "one.json"
    bl.save(path, bl.build([synthetic_record([("fp32", A)])], "cpu", "test"))
    assert main(["trials", "--rejudge", str(check), "--baseline", str(path),
                 "--out", str(tmp_path / "o")]) == 0
    assert len(trials.read_csv(tmp_path / "o" / "checks.csv")) == 1
    err = capsys.readouterr().err.replace("\n", " ")
    assert "1 recorded case check(s) not in the baseline, not judged: fp32-m48-n16-k64" in err


def test_an_interrupted_trials_run_says_what_checks_csv_keeps(tmp_path, monkeypatch,
                                                              synthetic_record, capsys):
    """Ctrl-C during the second check: exit 130, the first check's rows kept, and said
    (it printed only "gemmgate: interrupted"; a review)."""
    base = _cpu_baseline(tmp_path)
    calls = []

    def fake_run(cmd, stdout=None, stderr=None, env=None):
        calls.append(cmd)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return _a_passing_check(cmd, synthetic_record)

    monkeypatch.setattr(trials.subprocess, "run", fake_run)
    out = tmp_path / "t"
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--baseline", str(base),
                 "--levels", "0,0.03", "--out", str(out)]) == 130
    assert len(trials.read_csv(out / "checks.csv")) == 1
    err = capsys.readouterr().err.replace("\n", "")
    assert "stopped during trial 2 (slowdown 0.03, not counted)" in err
    assert "keeps the 1 check(s) before it" in err


def test_rejudge_refuses_one_check_given_twice_as_two_files(tmp_path, synthetic_record,
                                                            capsys):
    """A check saved again otherwise (reindented) is the same check, its run id the same:
    its verdicts counted twice in the rates, "2 checks" of one (a review); `report` and
    `baseline merge` refuse a run id given twice too."""
    from gemmgate import baselines as bl

    rec = synthetic_record([("fp32", A)], environment={"chip": "cpu", "timing": "wall",
                                                       "run_id": "0123456789abcdef"})
    data = _check_json(rec, {"fp32-m32-n32-k32": "unchanged"}, 0.0)
    one, two = tmp_path / "a" / "check_1.json", tmp_path / "b" / "check_1.json"
    for p, indent in ((one, None), (two, 2)):
        p.parent.mkdir()
        p.write_text(json.dumps(data, indent=indent))
    path = tmp_path / "base.json"
    bl.save(path, bl.build([rec], "cpu", "test"))
    out = tmp_path / "out"
    assert main(["trials", "--rejudge", str(one), str(two), "--baseline", str(path),
                 "--out", str(out)]) == 2
    assert f"check file {two} is the same check as {one} (the same run id)" in \
        capsys.readouterr().err.replace("\n", "")
    assert not out.exists()


@pytest.mark.parametrize("given", [True, False])
def test_a_summary_over_the_shape_file_the_checks_read_is_refused_before_any_check(
        tmp_path, monkeypatch, capsys, given):
    """Only checks.csv was checked: a shape file in --out named cases_summary.csv (given as
    --shapes, or named by the baseline's provenance.shapes, which each check reads without
    --shapes) was overwritten after the first check, and the next check failed on the
    summary's columns (a review)."""
    out = tmp_path / "t"
    out.mkdir()
    shapes = out / "cases_summary.csv"
    shapes.write_text("m,n,k\n32,32,32\n")
    base = tmp_path / "b.json"
    assert main(["baseline", "update", "--chip", "cpu", "--modes", "fp32", "--budget", "0.1",
                 "--shapes", str(shapes), "--output", str(base)]) == 0
    capsys.readouterr()
    monkeypatch.setattr(trials.subprocess, "run", lambda *a, **k: pytest.fail("a check ran"))
    assert main(["trials", "--chip", "cpu", "--modes", "fp32", "--baseline", str(base),
                 *(["--shapes", str(shapes)] if given else []), "--levels", "0",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    # (a summary's name in --out is also an earlier run's file now, whichever is said first)
    assert f"{shapes} is also " + ("--shapes" if given else "the baseline's shape file") in err \
        or "holds an earlier trials run (cases_summary.csv" in err, err
    assert shapes.read_text() == "m,n,k\n32,32,32\n"


def test_an_out_folder_a_check_cannot_write_is_refused_before_any_check(tmp_path,
                                                                        monkeypatch, capsys):
    """--out kernels/tuned: each check's --json there is a new "tuning table", which the
    child check refused (exit 2) only after any --calibrate had run."""
    import kernels

    tuned = Path(kernels.__file__).parent / "tuned"
    before = sorted(p.name for p in tuned.iterdir())
    monkeypatch.setattr(trials.subprocess, "run", lambda *a, **k: pytest.fail("a check ran"))
    try:
        assert main(["trials", "--chip", "cpu", "--levels", "0", "--out", str(tuned)]) == 2
        assert "where the kernel reads every *.json as a tuning table" in \
            capsys.readouterr().err.replace("\n", "")
    finally:   # (without the fix: a check's log written there before the check ran)
        left = [p for p in tuned.iterdir() if p.name not in before]
        for p in left:
            p.unlink()
    assert not left


def test_rejudge_keeps_which_cases_the_check_measured_again(tmp_path, synthetic_record):
    """A rejudged check's figures are its final ones, a re-measured case's the second
    measurement's: its row said remeasured 0 (docs/results/README.md: "1 if the check
    measured the case again"; a review)."""
    from gemmgate import baselines as bl

    rec = synthetic_record([("fp32", A), ("fp32", B)])
    check = tmp_path / "g0" / "check_1_0.json"
    check.parent.mkdir()
    check.write_text(json.dumps(_check_json(rec, {"fp32-m32-n32-k32": "regressed",
                                                  "fp32-m48-n16-k64": "unchanged"}, 0.0)))
    path = tmp_path / "same.json"
    bl.save(path, bl.build([rec], "cpu", "test"))
    out = tmp_path / "out"
    assert main(["trials", "--rejudge", str(check), "--baseline", str(path),
                 "--out", str(out)]) == 0
    rows = {r["case"]: r["remeasured"] for r in trials.read_csv(out / "checks.csv")}
    assert rows == {"m32-n32-k32": "1", "m48-n16-k64": "0"}
