"""`gemmgate check` and `gemmgate baseline update|calibrate|merge` end to end on the CPU
path (chip cpu, Triton interpreter): exit codes, verdicts, noise levels, files, output.

Every verdict and exit code asserted here rests on synthetic timing (the
`synthetic_timing` fixture in tests/conftest.py: triton 1.0 ms, vendor 0.9 ms, reference
1.0 ms, seeded 0.2% jitter), never on wall-clock time: the kernels still run and are
checked for accuracy, only `measure` is replaced. `baseline calibrate` runs in fresh
processes, which the patch does not reach: those tests assert files and structure only.
fp32 only, two tiny cases from a user shape file.
"""

import json
import math
import os
import platform
import shutil
from pathlib import Path

import pytest

from gemmgate import baselines, stats
from gemmgate.cli import main
from gemmgate.compare import aa_noise, band, noise_factor, scaled
from gemmgate.env import machine_id

FAST = ["--chip", "cpu", "--modes", "fp32", "--budget", "0.3"]
KEYS = {"fp32-m32-n32-k32", "fp32-m48-n16-k64"}
# the CPU path's machine: host/machine id (the host alone where the machine has no id)
HERE = f"{platform.node()}/{machine_id()}" if machine_id() else platform.node()
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def work(tmp_path):
    (tmp_path / "shapes.csv").write_text("m,n,k\n32,32,32\n48,16,64\n")
    return tmp_path


@pytest.fixture
def base_file(work, synthetic_timing):
    """`baseline update` under synthetic timing -> exit 0 and a valid cpu baseline."""
    out = work / "b.json"
    assert main(["baseline", "update", *FAST, *_shapes(work), "--output", str(out)]) == 0
    return out


def _shapes(work) -> list[str]:
    return ["--shapes", str(work / "shapes.csv")]


def _edited(work, name: str, edit):
    """A copy of the baseline b.json, changed by `edit(data)`."""
    data = json.loads((work / "b.json").read_text())
    edit(data)
    p = work / name
    p.write_text(json.dumps(data))
    return p


def _scaled(work, name: str, scale: float):
    """A copy of the baseline with every case's ratio (and its runs) scaled and no
    measured noise."""
    def edit(data):
        for c in data["cases"].values():
            c["ratio"] *= scale
            c["noise"]["ratio_runs"] = [r * scale for r in c["noise"]["ratio_runs"]]
            c["noise"]["ratio"] = c["noise"]["tflops"] = None
    return _edited(work, name, edit)


def _on_host(work, name: str, host: str, scale: float = 1.0):
    """A copy of the baseline b.json (as `name`, not b.json) as if calibrated on `host`
    (its runs, provenance), every stored ratio scaled by `scale`."""
    def edit(data):
        data["provenance"].update(host=host, machines={host: {"host": host, "runs": 1}},
                                  run_ids=[f"run-on-{host}"])   # another calibration's
        for c in data["cases"].values():
            c["ratio"] *= scale
            runs = [r * scale for r in c["noise"]["ratio_runs"]]
            c["noise"].update(ratio_runs=runs, run_machines=[host] * len(runs))
    return _edited(work, name, edit)


def _listing(d) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in Path(d).rglob("*"))


def _check(work, baseline, *extra: str) -> tuple[int, dict]:
    """Run `check` with --json; (exit code, the JSON written)."""
    out = work / "check.json"
    rc = main(["check", *FAST, *_shapes(work), "--baseline", str(baseline), "--json", str(out),
               *extra])
    return rc, json.loads(out.read_text())


def _verdicts(data: dict) -> dict[str, str]:
    return {v["id"]: v["verdict"] for v in data["gate"]["verdicts"]}


def test_a_baseline_update_writes_valid_file(base_file, synthetic_timing):
    data = baselines.load(base_file, "cpu")
    assert set(data.cases) == KEYS
    assert data.provenance["modes"] == ["fp32"] and data.provenance["runs"] == 1
    assert data.provenance["host"] == platform.node() and data.machines == {HERE}
    for c in data.cases.values():
        assert c.ratio == pytest.approx(0.9, rel=0.01)       # vendor 0.9 ms / triton 1.0 ms
        assert c.providers["triton"].median_ms == pytest.approx(1.0, rel=0.01)
        assert c.noise.runs == 1 and c.noise.run_machines == (HERE,)   # the CPU: no GPU UUID
        assert c.noise.ratio is None and c.noise.machine is None
    assert synthetic_timing.measured == [("triton", "vendor")] * 2  # one timing per case


def test_b_check_against_fresh_baseline_is_unchanged(work, base_file, capsys):
    summary = work / "summary.md"
    rc, data = _check(work, base_file, "--summary", str(summary))
    assert rc == 0
    gate = data["gate"]
    assert gate["baseline"] == str(base_file) and gate["failed"] is False
    assert _verdicts(data) == dict.fromkeys(KEYS, "unchanged")
    assert not any(v["remeasured"] for v in gate["verdicts"])  # nothing suspect
    assert {v["level"] for v in gate["verdicts"]} == {"process"}  # calibrated here
    assert gate["missing"] == [] and gate["extra"] == [] and gate["inject_slowdown"] == 0.0
    assert {c["id"] for c in data["cases"]} == KEYS
    md = summary.read_text()
    assert "gemmgate check on cpu: passed" in md and all(k in md for k in KEYS)
    out = capsys.readouterr().out
    assert "regression gate" in out and "::error" not in out
    head = next(line for line in out.splitlines() if line.startswith("┃ case"))
    cols = [c.strip() for c in head.strip("┃ ").split("┃")]
    assert cols[:6] == ["case", "verdict", "ratio change", "95% CI", "tolerance", "level"]
    for key in KEYS:                                          # the gate table's level column
        row = next(line for line in out.splitlines() if line.startswith(f"│ {key} "))
        assert [c.strip() for c in row.strip("│ ").split("│")][5] == "process"
    assert "| level |" in md


def test_b_a_check_with_no_case_in_the_baseline_is_exit_2_before_any_work(work, base_file,
                                                                          capsys):
    rc = main(["check", *FAST, "--shapes", "16x16x16", "--baseline", str(base_file)])
    assert rc == 2
    err = capsys.readouterr().err
    assert "no case of" in err and "nothing to judge" in err and "regression gate" not in err


def test_b_cases_missing_from_the_run_or_the_baseline_are_named_on_the_console(
        work, base_file, capsys):
    rc = main(["check", *FAST, "--shapes", "32x32x32,16x16x16", "--baseline", str(base_file)])
    assert rc == 0
    err = capsys.readouterr().err
    assert "1 not run (in the baseline): fp32-m48-n16-k64" in err
    assert ("1 not in the baseline (new cases: accuracy, and A/B with --ab-ref): "
            "fp32-m16-n16-k16") in err


def test_b_a_baseline_of_other_software_is_named_in_the_check(work, base_file, capsys):
    """A baseline measured on another Triton: the verdicts stand, and the summary, the
    JSON and stderr say the stored ratios also carry the software's change."""
    import triton

    other = _edited(work, "t.json", lambda d: d["provenance"].update(triton="0.0.1"))
    summary = work / "summary.md"
    rc, data = _check(work, other, "--summary", str(summary))
    assert rc == 0 and _verdicts(data) == dict.fromkeys(KEYS, "unchanged")
    said = f"other software (triton 0.0.1 -> {triton.__version__})"
    assert said in data["gate"]["software"] and said in summary.read_text()
    assert said in capsys.readouterr().err.replace("\n", " ")
    rc, data = _check(work, base_file)                       # the same software: no note
    assert data["gate"]["software"] == ""


def test_c_three_times_higher_baseline_ratio_is_a_regression(work, base_file, synthetic_timing,
                                                             capsys):
    fake = _scaled(work, "slow.json", 3.0)
    before = fake.read_bytes()
    synthetic_timing.measured.clear()
    rc, data = _check(work, fake)
    assert rc == 1
    assert "::error title=gemmgate regression::" in capsys.readouterr().out
    gate = data["gate"]
    assert gate["failed"] is True
    assert _verdicts(data) == dict.fromkeys(KEYS, "regressed")
    assert all(v["remeasured"] for v in gate["verdicts"])     # the second measurement decided
    assert len(synthetic_timing.measured) == 4                # 2 cases, then both again
    for v in gate["verdicts"]:
        assert v["ratio"]["change"] == pytest.approx(-2 / 3, abs=0.01)
    assert fake.read_bytes() == before                        # check never writes a baseline


def test_d_three_times_lower_baseline_ratio_is_an_improvement(work, base_file, capsys):
    rc, data = _check(work, _scaled(work, "fast.json", 1 / 3))
    assert rc == 0
    assert "::error" not in capsys.readouterr().out
    assert data["gate"]["failed"] is False
    assert _verdicts(data) == dict.fromkeys(KEYS, "improved")


def test_e_injected_slowdown_is_caught(work, base_file, capsys):
    summary, pr = work / "summary.md", work / "comment.md"
    rc, data = _check(work, base_file, "--inject-slowdown", "2.0", "--summary", str(summary),
                      "--comment", str(pr))
    assert rc == 1
    out, err = capsys.readouterr()
    assert "::error title=gemmgate regression::" in out
    # slowed on purpose, and said so everywhere (it read as a real regression; a review)
    said = "This check was slowed on purpose (--inject-slowdown 2)"
    assert said in err.replace("\n", " ") and said in summary.read_text()
    assert said in pr.read_text()
    assert all(line.endswith("(injected slowdown 2)") for line in out.splitlines()
               if line.startswith("::error"))
    gate = data["gate"]
    assert gate["inject_slowdown"] == 2.0
    assert _verdicts(data) == dict.fromkeys(KEYS, "regressed")
    for v in gate["verdicts"]:                                # 3x Triton's time
        assert v["ratio"]["change"] == pytest.approx(-2 / 3, abs=0.01)
    for c in data["cases"]:
        assert c["telemetry"]["injected_slowdown"] == {"asked": 2.0, "sized": 2.0}


@pytest.mark.parametrize("triton_ms, verdict, rc", [
    (1.10, "regressed", 1),      # 9% slower: past the 1.5% floor
    (1.005, "unchanged", 0),     # 0.5% slower: within the floor
    (0.90, "improved", 0),
])
def test_e_a_slower_or_faster_kernel_against_the_floor(work, base_file, synthetic_timing,
                                                       triton_ms, verdict, rc):
    synthetic_timing.base_ms["triton"] = triton_ms
    got, data = _check(work, base_file)
    assert got == rc
    assert _verdicts(data) == dict.fromkeys(KEYS, verdict)


@pytest.mark.parametrize("what", ["missing", "corrupt", "other-chip", "null-noise",
                                  "negative-slowdown", "nan-slowdown", "calibrate-runs-0",
                                  "update-runs-0"])
def test_f_input_errors_exit_2_and_touch_no_file(work, base_file, capsys, what):
    out = work / f"f-{what}.json"
    if what == "missing":
        b = work / "nope.json"
        argv = ["check", *FAST, *_shapes(work), "--baseline", str(b)]
        msg = "gemmgate baseline calibrate"
    elif what == "corrupt":
        b = work / "corrupt.json"
        b.write_text('{"schema": "gemmgate.baseline", ')
        argv = ["check", *FAST, *_shapes(work), "--baseline", str(b)]
        msg = "corrupt"
    elif what == "other-chip":
        b = _edited(work, "h200.json", lambda d: d.update(chip="nvidia-h200"))
        argv = ["check", *FAST, *_shapes(work), "--baseline", str(b)]
        msg = "is for chip nvidia-h200, not cpu"
    elif what == "null-noise":
        b = _edited(work, "null-noise.json",
                    lambda d: [c.update(noise=None) for c in d["cases"].values()])
        argv = ["check", *FAST, *_shapes(work), "--baseline", str(b)]
        msg = "noise is not an object"
    elif what.endswith("slowdown"):
        b = work / f"copy-{what}.json"
        shutil.copy(base_file, b)
        f = "-1" if what.startswith("negative") else "nan"
        argv = ["check", *FAST, *_shapes(work), "--baseline", str(b), "--inject-slowdown", f]
        msg = "--inject-slowdown must be between 0 and 10"
    else:
        b = work / f"copy-{what}.json"
        shutil.copy(base_file, b)
        action = what.split("-")[0]
        argv = ["baseline", action, *FAST, *_shapes(work), "--runs", "0", "--output", str(b)]
        msg = "at least 2 runs" if action == "calibrate" else "update measures once"
    before = b.read_bytes() if b.exists() else None
    listing = sorted(p.name for p in work.iterdir())
    if argv[0] == "check":
        argv += ["--json", str(out), "--summary", str(work / f"f-{what}.md")]
    assert main(argv) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "gemmgate: error:" in err and msg in err
    assert "cases x" not in err                               # refused before any work
    assert (b.read_bytes() if b.exists() else None) == before
    assert sorted(p.name for p in work.iterdir()) == listing  # nothing created


def test_f_calibrate_runs_0_creates_nothing(work, capsys):
    out = work / "never.json"
    assert main(["baseline", "calibrate", *FAST, *_shapes(work), "--runs", "0",
                 "--output", str(out)]) == 2
    assert not out.exists()


def test_g_calibrate_two_fresh_runs(work, capsys):
    """Real timing in two fresh processes: files and fields only, no figure."""
    out = work / "b2.json"
    assert main(["baseline", "calibrate", *FAST, *_shapes(work), "--runs", "2",
                 "--output", str(out), "--keep-runs", str(work / "kept")]) == 0
    kept = sorted(p.name for p in (work / "kept").iterdir())
    assert kept == ["run1.json", "run2.json"]
    assert {c["id"] for c in json.loads((work / "kept" / "run2.json").read_text())["cases"]} \
        == KEYS
    data = baselines.load(out, "cpu")
    assert set(data.cases) == KEYS and data.provenance["runs"] == 2
    for c in data.cases.values():
        assert c.noise.runs == 2 and len(c.noise.ratio_runs) == 2
        r = c.noise.ratio
        assert isinstance(r, float) and math.isfinite(r) and r >= 0
        assert c.noise.run_machines == (HERE, HERE) and c.noise.machine is None
    assert len(set(data.provenance["run_ids"])) == 2 and "run_id" not in data.provenance
    assert "wrote" in capsys.readouterr().out
    # its own kept runs pooled again would count each run twice: refused, nothing written
    merged = work / "merged.json"
    assert main(["baseline", "merge", str(out), str(work / "kept" / "run2.json"),
                 "--output", str(merged)]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert f"a run is in both {out} and {work / 'kept' / 'run2.json'}" in err
    assert not merged.exists()


def test_h_update_over_existing_shows_old_beside_new(work, base_file, capsys):
    old = work / "h.json"
    data = json.loads(base_file.read_text())
    # synthetic timing: the update measures the same again
    new_geo = baselines.summary(baselines.from_json(data))["fp32"]["geomean_ratio"]
    for c in data["cases"].values():
        c["noise"] = {"ratio": 0.0123, "tflops": 0.0456, "runs": 5}
        c["ratio"] *= 2
    old.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["baseline", "update", *FAST, *_shapes(work), "--output", str(old)]) == 0
    out = capsys.readouterr().out
    assert "old beside new" in out
    row = next(line for line in out.splitlines() if "fp32" in line and "│" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells == ["fp32", "2", f"{2 * new_geo:.3f}", "2", f"{new_geo:.3f}"]
    new = baselines.load(old, "cpu")
    assert set(new.cases) == KEYS
    for c in new.cases.values():                                # single run: noise carried
        assert (c.noise.ratio, c.noise.tflops, c.noise.runs) == (0.0123, 0.0456, 5)
        assert c.noise.machine is None
        assert len(c.noise.ratio_runs) == 1 and c.noise.run_machines == (HERE,)  # the new run


def test_j_ab_ref_times_the_reference_and_catches_a_slowdown(work, base_file, kernels_repo,
                                                             monkeypatch, capsys):
    d, old, _ = kernels_repo
    monkeypatch.chdir(d)  # --ab-ref resolves in the working directory's repository
    rc, data = _check(work, base_file, "--ab-ref", old, "--inject-slowdown", "2")
    assert rc == 1 and data["gate"]["ab_ref"] == old
    assert _verdicts(data) == dict.fromkeys(KEYS, "regressed")
    for v in data["gate"]["verdicts"]:  # reference 1 ms, Triton 3 ms: -67%
        assert v["ab"]["verdict"] == "regressed" and v["remeasured"]
        assert v["ab"]["change"] == pytest.approx(-2 / 3, abs=0.01)
    assert "against the reference kernel" in capsys.readouterr().out
    assert all("reference" in c["providers"] for c in data["cases"])


def test_j_ab_alone_catches_what_the_baseline_cannot(work, base_file, clean_repo,
                                                     synthetic_timing, monkeypatch, capsys):
    """A baseline taken with the slow kernel judges it unchanged; the reference kernel,
    timed beside it, still shows it 9% slower: the case is regressed."""
    synthetic_timing.base_ms["triton"] = 1.1
    slow_base = work / "slow-base.json"
    assert main(["baseline", "update", *FAST, *_shapes(work), "--output", str(slow_base)]) == 0
    monkeypatch.chdir(clean_repo[0])
    rc, data = _check(work, slow_base, "--ab-ref", "HEAD")
    assert rc == 1
    for v in data["gate"]["verdicts"]:
        assert v["verdict"] == "regressed" and v["ratio"]["verdict"] == "unchanged"
        assert v["ab"]["change"] == pytest.approx(1 / 1.1 - 1, abs=0.01)
        assert "A/B: slower than the reference kernel" in v["note"]


def test_j_bad_ab_ref_is_exit_2_before_any_work(work, base_file, kernels_repo, monkeypatch,
                                                capsys):
    d, _, _ = kernels_repo
    monkeypatch.chdir(d)
    out = work / "never.json"
    assert main(["check", *FAST, *_shapes(work), "--baseline", str(base_file),
                 "--ab-ref", "no-such-ref", "--json", str(out)]) == 2
    assert "no such commit" in capsys.readouterr().err and not out.exists()


def test_j_ab_ref_baseline_recorded_dirty_is_exit_2_before_any_work(work, base_file,
                                                                   kernels_repo,
                                                                   monkeypatch, capsys):
    """The baseline's tree differed from its commit: timing that commit is not timing
    what the baseline measured."""
    d, old, _ = kernels_repo
    monkeypatch.chdir(d)
    data = json.loads(base_file.read_text())
    data["provenance"].update(commit=old, dirty=True)
    base_file.write_text(json.dumps(data))
    out = work / "never.json"
    assert main(["check", *FAST, *_shapes(work), "--baseline", str(base_file),
                 "--ab-ref", "baseline", "--json", str(out)]) == 2
    assert "provenance dirty" in capsys.readouterr().err and not out.exists()


def test_j_calibrate_ab_ref_stores_ab_noise(work, clean_repo, monkeypatch, capsys):
    """Real timing in fresh processes: the stored A/B fields, not their values."""
    d, head = clean_repo
    monkeypatch.chdir(d)  # the fresh processes load the reference from this repository
    out = work / "ab-cal.json"
    assert main(["baseline", "calibrate", *FAST, *_shapes(work), "--runs", "2",
                 "--ab-ref", "HEAD", "--output", str(out)]) == 0
    for c in baselines.load(out, "cpu").cases.values():
        assert set(c.providers) == {"triton", "vendor"}
        assert len(c.noise.ab_runs) == 2 and all(x > 0 for x in c.noise.ab_runs)
        assert c.noise.ab == max(abs(x - 1) for x in c.noise.ab_runs)


def test_j_calibrate_ab_ref_needs_the_trees_own_kernel(work, kernels_repo, monkeypatch,
                                                       capsys):
    d, old, _ = kernels_repo  # the working tree there has no kernels/: it differs
    monkeypatch.chdir(d)
    out = work / "never-ab.json"
    assert main(["baseline", "calibrate", *FAST, *_shapes(work), "--runs", "2",
                 "--ab-ref", old, "--output", str(out)]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "kernels/ differs from" in err and "calibration run" not in err
    assert not out.exists()


def test_j_check_names_the_cases_without_ab_noise_where_others_have_it(
        work, base_file, clean_repo, monkeypatch, capsys):
    """One case recalibrated without --ab-ref lost its A/B noise; check warned only where
    no case had any, and judged it at the floor without a word (a review)."""
    def one_with_ab(data):
        c = data["cases"]["fp32-m32-n32-k32"]
        c["noise"].update(ab=0.004, ab_runs=[1.0, 1.004, 0.996])
    b = _edited(work, "half_ab.json", one_with_ab)
    monkeypatch.chdir(clean_repo[0])
    capsys.readouterr()
    rc, _ = _check(work, b, "--ab-ref", "HEAD", "--no-remeasure")
    err = capsys.readouterr().err.replace("\n", " ")
    assert rc == 0, err
    assert "1 case(s) have no A/B noise in the baseline" in err and "fp32-m48-n16-k64" in err
    assert "the baseline has no A/B noise" not in err


def test_j_check_ab_ref_judges_cases_all_new_to_the_baseline(work, base_file, clean_repo,
                                                            monkeypatch, capsys):
    """With --ab-ref a case the baseline lacks is judged by A/B; a check of such cases only
    was refused as "nothing to judge" (a review)."""
    monkeypatch.chdir(clean_repo[0])
    out = work / "new.json"
    capsys.readouterr()
    rc = main(["check", *FAST, "--shapes", "24x24x24", "--baseline", str(base_file),
               "--ab-ref", "HEAD", "--no-remeasure", "--json", str(out)])
    err = capsys.readouterr().err.replace("\n", " ")
    assert rc == 0, err
    (v,) = json.loads(out.read_text())["gate"]["verdicts"]
    assert v["id"] == "fp32-m24-n24-k24" and v["ab"]["tolerance"] == 0.015
    assert "A/B alone decides" in v["note"]


def test_j_check_warns_when_the_baseline_has_no_ab_noise(work, base_file, clean_repo,
                                                         monkeypatch, capsys):
    monkeypatch.chdir(clean_repo[0])
    rc, data = _check(work, base_file, "--ab-ref", "HEAD", "--no-remeasure")
    assert rc == 0                                            # the same kernel: A/B ~ 1
    assert "the baseline has no A/B noise" in capsys.readouterr().err
    for v in data["gate"]["verdicts"]:
        assert v["ab"]["verdict"] == "unchanged" and v["ab"]["tolerance"] == 0.015


def test_k_check_times_with_the_baselines_block(work, base_file, synthetic_timing):
    assert json.loads(base_file.read_text())["provenance"]["block"] == 1  # recorded by update
    p = _edited(work, "block3.json", lambda d: d["provenance"].update(block=3))
    synthetic_timing.policies.clear()
    rc, data = _check(work, p, "--no-remeasure")
    assert rc == 0
    assert data["environment"]["block"] == 3
    assert [pol.block for pol in synthetic_timing.policies] == [3, 3]


def test_k_check_runs_the_shapes_asked_for(work, base_file):
    (work / "one.csv").write_text("m,n,k\n32,32,32\n")
    out = work / "one.json"
    assert main(["check", *FAST, "--shapes", str(work / "one.csv"), "--baseline",
                 str(base_file), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [c["id"] for c in data["cases"]] == ["fp32-m32-n32-k32"]
    assert data["gate"]["missing"] == ["fp32-m48-n16-k64"]


@pytest.mark.parametrize("action, runs, said", [
    ("calibrate", "1", "calibrate needs at least 2 runs"),
    ("update", "2", "update measures once and keeps the stored noise")])
def test_g_update_and_calibrate_are_not_each_other(work, base_file, capsys, action, runs,
                                                  said):
    """calibrate --runs 1 was update (the old noise kept, "1 run(s)"), update --runs 2 a
    calibration replacing the stored noise, each said nowhere (a review): exit 2, no file
    touched, nothing measured."""
    b = work / "copy.json"
    shutil.copy(base_file, b)
    before = b.read_bytes()
    assert main(["baseline", action, *FAST, *_shapes(work), "--runs", runs,
                 "--output", str(b), "--keep-runs" if action == "calibrate" else "--modes",
                 str(work / "kept") if action == "calibrate" else "fp32"]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert said in err and "cases x" not in err
    assert b.read_bytes() == before and not (work / "kept").exists()


# --- baseline merge: calibrations from several machines -> machine-level noise -------------

def test_m_merge_leaves_an_input_on_another_tile_out_of_that_case_and_says_so(
        work, base_file, capsys):
    """A calibration whose case ran on another tile (the kernel's pick moved between the
    two) is not pooled into that case: the message names the case and the input."""
    def tiled(block_m):
        def edit(c, key):
            c["tuning"] = {"key": key, "source": "tuned", "kernel": "k",
                           "config": {"block_m": block_m if key.startswith("fp32") else 64}}
        return edit
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-b", scale=1.03)
    for path, edit in ((a, tiled(64)), (b, tiled(128))):
        data = json.loads(path.read_text())
        for key, c in data["cases"].items():
            edit(c, key)
        path.write_text(json.dumps(data))
    out = work / "merged.json"
    capsys.readouterr()
    assert main(["baseline", "merge", str(a), str(b), "--output", str(out)]) == 0
    printed = capsys.readouterr().out.replace("\n", " ")
    moved = [k for k in json.loads(a.read_text())["cases"] if k.startswith("fp32")]
    assert moved and "case(s) ran on another tile" in printed
    assert all(f"{k}: {b}" in printed for k in moved)
    merged = json.loads(out.read_text())["cases"]
    for k, c in merged.items():
        hosts = set(c["noise"]["run_machines"])
        assert hosts == ({"host-a"} if k in moved else {"host-a", "host-b"}), k


def test_m_merge_onto_a_baseline_keeps_the_cases_no_input_holds(work, base_file, capsys):
    """Calibrations of one case merged onto the baseline file (not an input) replace that
    case and leave the file's other cases as they were, as `update` does."""
    def only(key):
        def edit(data):
            data["cases"] = {key: data["cases"][key]}
        return edit
    one, other = sorted(KEYS)
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-b", scale=1.03)
    for path in (a, b):
        data = json.loads(path.read_text())
        only(one)(data)
        path.write_text(json.dumps(data))
    out = work / "merged.json"
    shutil.copy(base_file, out)
    old = json.loads(out.read_text())
    capsys.readouterr()
    assert main(["baseline", "merge", str(a), str(b), "--output", str(out)]) == 0
    printed = capsys.readouterr().out.replace("\n", " ")
    assert f"kept 1 case(s) of {out} that no input holds" in printed
    merged = baselines.load(out, "cpu")
    assert set(merged.cases) == KEYS
    assert merged.cases[one].noise.run_machines == ("host-a", "host-b")
    assert json.loads(out.read_text())["cases"][other] == old["cases"][other]
    assert set(merged.provenance["machines"]) >= {"host-a", "host-b"}


def test_m_merge_two_hosts_gives_machine_noise_and_check_elsewhere_is_machine_level(
        work, base_file, synthetic_timing, capsys):
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-b", scale=1.03)            # host b: 3% higher ratio
    inputs = {p: p.read_bytes() for p in (a, b)}
    out = work / "merged.json"
    shutil.copy(base_file, out)                                   # an old file to replace
    before = set(_listing(work))
    capsys.readouterr()
    assert main(["baseline", "merge", str(a), str(b), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "old beside new" in printed
    assert f"wrote {out} (2 cases from 2 files" in printed.replace("\n", "")
    assert "machine-level 2/2 cases over 2 machine(s)" in printed.replace("\n", "")
    assert all(p.read_bytes() == data for p, data in inputs.items())  # inputs untouched
    assert set(_listing(work)) - before <= {"merged.json.lock"}   # no temp file left
    merged = baselines.load(out, "cpu")
    olds = {k: c.ratio for k, c in baselines.load(base_file).cases.items()}
    assert merged.machines == {"host-a", "host-b"}
    assert set(merged.provenance["machines"]) == {"host-a", "host-b"}
    assert merged.provenance["runs"] == 2
    for key, c in merged.cases.items():
        pooled = [olds[key], olds[key] * 1.03]
        assert c.noise.run_machines == ("host-a", "host-b") and c.noise.runs == 2
        assert c.ratio == pytest.approx(stats.median(pooled), rel=1e-12)
        assert c.noise.machine == pytest.approx(aa_noise(pooled), rel=1e-9)
        assert c.noise.ratio is None                  # one run per host: no process level
    # checked here (neither host-a nor host-b): judged at machine level
    merged_bytes = out.read_bytes()
    rc, data = _check(work, out)
    assert rc == 0 and _verdicts(data) == dict.fromkeys(KEYS, "unchanged")
    for v in data["gate"]["verdicts"]:
        assert v["level"] == "machine"
        # two machines: one difference behind the spread, so its factor is RUNS_FACTOR's
        assert v["ratio"]["tolerance"] == pytest.approx(scaled(aa_noise([1, 1.03]),
                                                               noise_factor(2)), rel=0.05)
        assert "stored: machine-level -" in v["note"]
    synthetic_timing.base_ms["triton"] = 5.0   # -80%: beyond its ~105% (-51%)
    rc, data = _check(work, out)
    assert rc == 1 and _verdicts(data) == dict.fromkeys(KEYS, "regressed")
    assert out.read_bytes() == merged_bytes                        # check never writes it


def test_m_merge_says_the_inputs_other_drivers(work, base_file, capsys):
    """Fleets differ in drivers: merged, their offset counts as machine noise, said."""
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-b", scale=1.02)
    for path, driver in ((a, "580.1"), (b, "999.1")):
        data = json.loads(path.read_text())
        data["provenance"]["driver"] = driver
        path.write_text(json.dumps(data))
    assert main(["baseline", "merge", str(a), str(b), "--output", str(work / "m.json")]) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert "note: the inputs ran another driver (" in said and "999.1 (" in said


def test_m_merge_folds_check_runs_in_as_one_more_calibration(work, base_file,
                                                             synthetic_timing, capsys):
    """A fleet's A/A checks (`check --json`) are runs: merged with a baseline file they
    add their machine to the machine-level noise, each check one fresh process."""
    a = _on_host(work, "on-a.json", "host-a", scale=1.04)          # host a: 4% higher ratio
    runs = []
    for i in range(2):
        synthetic_timing.base_ms["triton"] *= 1.001   # two processes never time alike
        rc, data = _check(work, base_file)
        assert rc == 0
        runs.append(work / f"run{i}.json")
        runs[-1].write_text(json.dumps(data))
    out = work / "merged.json"
    assert main(["baseline", "merge", str(a), *map(str, runs), "--output", str(out)]) == 0
    assert "from 3 files" in capsys.readouterr().out.replace("\n", "")
    merged = baselines.load(out, "cpu")
    assert merged.machines == {"host-a", HERE}
    for c in merged.cases.values():
        assert c.noise.run_machines == ("host-a", HERE, HERE) and c.noise.runs == 3
        assert c.noise.machine is not None and c.noise.machine >= 0.04 / 1.04 - 1e-9


@pytest.mark.parametrize("ref, dirty, same, pooled", [
    ("same", False, None, True), ("other", False, None, False), ("same", True, None, False),
    ("same", None, None, False),
    # recorded since session 71: kernels/ as the reference's when the run ran (an edit
    # elsewhere, dirty, is no kernel change; a review)
    ("same", True, True, True), ("other", True, True, True), ("same", False, False, False)])
def test_m_merge_pools_a_run_s_ab_samples_only_against_its_own_kernels(
        work, base_file, synthetic_timing, capsys, ref, dirty, same, pooled):
    """A PR check's --json is timed against its merge base: merged, its A/B medians made
    a kernel change of 25% into A/B noise, and the A/B gate went blind (a review)."""
    commit = "c" * 40
    runs = []
    for i, slower in enumerate((1.25, 1.0)):
        rc, data = _check(work, base_file)
        data["environment"].update(commit=commit, dirty=dirty,
                                   ab_ref=commit if ref == "same" else "d" * 40)
        data["environment"].pop("ab_kernels_same", None)
        if same is not None:
            data["environment"]["ab_kernels_same"] = same
        for c in data["cases"]:
            t = c["providers"]["triton"]
            c["providers"]["reference"] = {**t, "name": "reference", "samples_ms": [
                x * slower for x in t["samples_ms"]]}
        runs.append(work / f"ab{i}.json")
        runs[-1].write_text(json.dumps(data))
    out = work / "merged.json"
    capsys.readouterr()
    assert main(["baseline", "merge", *map(str, runs), "--output", str(out)]) == 0
    err = capsys.readouterr().err.replace("\n", " ")
    for c in baselines.load(out, "cpu").cases.values():
        assert (c.noise.ab is not None) is pooled
        assert len(c.noise.ab_runs) == (2 if pooled else 0)
    assert ("its A/B samples were left out" in err) is not pooled


@pytest.mark.parametrize("second, said", [
    ("new", "was measured at {new12}, whose kernels/ is not {old12}'s"),
    ("old", None),
    ("unknown", "whether the kernels/ of {run1} is the first input's could not be told"),
])
def test_m_merge_refuses_inputs_of_other_kernels(work, base_file, synthetic_timing, capsys,
                                                 monkeypatch, kernels_repo, second, said):
    """Runs of two commits whose kernels/ differ were pooled as machine noise where no
    tile moved (a 30 ms sleep in kernels.matmul: a case's noise 5% -> 36%; a review):
    refused, exit 2, nothing written; one kernel's commits merge; a commit git does not
    hold is said."""
    repo, old, new = kernels_repo
    commit = {"old": old, "new": new, "unknown": "e" * 40}
    runs = []
    for i, c in enumerate(("old", second)):
        rc, data = _check(work, base_file)
        data["environment"].update(commit=commit[c], dirty=False)
        runs.append(work / f"run{i}.json")
        runs[-1].write_text(json.dumps(data))
    monkeypatch.chdir(repo)   # (git tells the commits' kernels/ in their repository)
    out = work / "merged.json"
    capsys.readouterr()
    rc = main(["baseline", "merge", *map(str, runs), "--output", str(out)])
    err = capsys.readouterr().err.replace("\n", " ")
    assert rc == (2 if second == "new" else 0) and out.exists() is (rc == 0)
    if said:
        assert said.format(new12=new[:12], old12=old[:12], run1=runs[1]) in err
    else:
        assert "kernels/" not in err


@pytest.mark.parametrize("twice", ["same-path", "copy", "run", "run-copy"])
def test_m_merge_refuses_an_input_given_twice(work, base_file, synthetic_timing, capsys,
                                              twice):
    """Pooled twice, one calibration's runs would count twice (twice the runs behind each
    noise figure): the same file, a copy of a calibration, or a run file given again is
    exit 2, naming both inputs, and nothing is written."""
    a = _on_host(work, "on-a.json", "host-a")
    if twice in ("run", "run-copy"):
        rc, data = _check(work, base_file)
        first = work / "run0.json"
        first.write_text(json.dumps(data))
        again = first if twice == "run" else work / "copy-of-run0.json"
        if again != first:
            shutil.copy(first, again)
        inputs = [a, first, again]
    else:
        first = _on_host(work, "on-b.json", "host-b")
        again = first if twice == "same-path" else work / "copy-of-b.json"
        if again != first:
            shutil.copy(first, again)
        inputs = [a, first, again]
    out = work / "merged.json"
    capsys.readouterr()
    assert main(["baseline", "merge", *map(str, inputs), "--output", str(out)]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert f"{inputs[2]} holds the same calibration as {first}" in err
    assert not out.exists()


@pytest.mark.parametrize("what", ["injected", "failed", "other-chip", "empty"])
def test_m_merge_refuses_runs_that_cannot_calibrate(work, base_file, synthetic_timing,
                                                     capsys, what):
    a = _on_host(work, "on-a.json", "host-a")
    extra = ("--inject-slowdown", "0.05") if what == "injected" else ()
    rc, data = _check(work, base_file, *extra)
    if what == "failed":
        data["cases"][0]["providers"]["triton"]["accuracy"] = "fail"
        msg = "accuracy failures cannot calibrate a baseline: fp32-m32-n32-k32"
    elif what == "injected":
        msg = "a run with an injected slowdown (0.05) cannot calibrate a baseline"
    elif what == "empty":   # no cases: not one more calibration
        data["cases"] = []
        msg = "the run holds no cases, so it cannot calibrate a baseline"
    else:
        data["environment"]["chip"] = "nvidia-h200"
        msg = "the inputs are of different chips: cpu"
    run = work / "run.json"
    run.write_text(json.dumps(data))
    out = work / "merged.json"
    capsys.readouterr()
    assert main(["baseline", "merge", str(a), str(run), "--output", str(out)]) == 2
    assert msg in capsys.readouterr().err.replace("\n", " ")
    assert not out.exists()


def test_m_merge_onto_a_file_warns_of_the_levels_its_cases_lose(work, base_file, capsys):
    """Merging two hosts' calibrations onto a file whose cases had machine-level and A/B
    noise from others replaced them and said nothing, where update warned (a review)."""
    def fleet(data):
        for c in data["cases"].values():
            c["noise"].update(machine=0.03, tflops_machine=0.03, ab=0.004,
                              ab_runs=[1.0, 1.004, 0.996])
    out = _edited(work, "fleet.json", fleet)
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-a", scale=1.001)
    data = json.loads(b.read_text())
    data["provenance"]["run_ids"] = ["run-on-host-a-again"]
    b.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["baseline", "merge", str(a), str(b), "--output", str(out)]) == 0
    err = capsys.readouterr().err.replace("\n", " ")
    assert "2 case(s) lost their machine-level noise" in err
    assert "2 case(s) lost their A/B noise" in err
    # onto one of its inputs (README's advice) it said none (a review): the file's cases
    # ran on another tile than the first input's, so its runs (and their levels) are
    # left out of them

    def other_tile(data):
        fleet(data)
        for key, c in data["cases"].items():
            c["tuning"] = {"key": key, "source": "tuned", "kernel": "k",
                           "config": {"block_m": 128}}
    out = _edited(work, "fleet2.json", other_tile)
    data = json.loads(a.read_text())
    for key, c in data["cases"].items():
        c["tuning"] = {"key": key, "source": "tuned", "kernel": "k", "config": {"block_m": 64}}
    a.write_text(json.dumps(data))
    assert main(["baseline", "merge", str(a), str(out), "--output", str(out)]) == 0
    err = capsys.readouterr().err.replace("\n", " ")
    assert "2 case(s) lost their A/B noise" in err


def test_m_merge_onto_one_of_its_inputs(work, base_file, capsys):
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-b", scale=1.02)
    assert main(["baseline", "merge", str(a), str(b), "--output", str(a)]) == 0
    assert baselines.load(a).machines == {"host-a", "host-b"}
    assert "old beside new" not in capsys.readouterr().out      # an input is no old file


@pytest.mark.parametrize("what", ["one-input", "other-chip", "other-chip-timed-otherwise",
                                  "missing-input", "corrupt-input", "empty-input",
                                  "output-under-a-file", "output-is-a-directory",
                                  "output-of-another-chip", "output-corrupt",
                                  "other-block", "unrecorded-block", "per-call-run",
                                  "other-triton", "generic-of-two-models",
                                  "named-chip-of-two-models"])
def test_m_merge_input_errors_exit_2_and_write_nothing(work, base_file, capsys, what):
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-b", scale=1.02)
    out = work / "out.json"
    inputs = [str(a), str(b)]
    if what == "one-input":
        inputs, msg = [str(a)], "at least two files"
    elif what == "other-chip":
        b.write_text(json.dumps(dict(json.loads(b.read_text()), chip="nvidia-h200")))
        msg = f"the inputs are of different chips: cpu ({a}), nvidia-h200 ({b})"
    elif what == "other-chip-timed-otherwise":   # said as the chip, the first difference
        data = json.loads(b.read_text())       # (was: "another timing method", a review)
        data["chip"], data["provenance"]["timing"] = "nvidia-h200", "graph"
        b.write_text(json.dumps(data))
        msg = f"the inputs are of different chips: cpu ({a}), nvidia-h200 ({b})"
    elif what == "missing-input":
        inputs, msg = [str(a), str(work / "nope.json")], "no baseline at"
    elif what == "corrupt-input":
        b.write_text("{")
        msg = "corrupt"
    elif what == "empty-input":   # two such wrote a baseline of 0 cases, exit 0; one beside
        data = json.loads(b.read_text())   # a calibration counted its runs (a review)
        data["cases"] = {}
        b.write_text(json.dumps(data))
        msg = f"{b}: the baseline holds no cases"
    elif what == "output-under-a-file":
        (work / "afile").write_text("x")
        out, msg = work / "afile" / "out.json", "cannot write --output (the baseline file)"
    elif what == "output-of-another-chip":
        out.write_text(json.dumps(dict(json.loads(b.read_text()), chip="nvidia-h200")))
        msg = "is for chip nvidia-h200, not cpu; nothing written over it"
    elif what == "output-corrupt":
        out.write_text("<<<<<<< HEAD\n{}")
        msg = "corrupt (not JSON"
    elif what == "other-block":
        data = json.loads(b.read_text())
        data["provenance"]["block"] = 4
        b.write_text(json.dumps(data))
        msg = "were measured with another --block: 1 ("
    elif what == "unrecorded-block":   # a file from before --block was timed at 1
        for p, block in ((a, None), (b, 4)):
            data = json.loads(p.read_text())
            data["provenance"].pop("block") if block is None else \
                data["provenance"].update(block=block)
            p.write_text(json.dumps(data))
        msg = "were measured with another --block: 1 ("
    elif what == "other-triton":   # its offset pooled as machine noise (a review)
        data = json.loads(b.read_text())
        data["provenance"]["triton"] = "3.6.0"
        b.write_text(json.dumps(data))
        msg = "the inputs ran another triton: "
    elif what == "generic-of-two-models":   # every unnamed GPU is generic-gpu: an Ada's
        for p, name in ((a, "NVIDIA RTX 6000 Ada Generation"),   # and a V100's calibrations
                        (b, "Tesla V100-SXM2-16GB")):            # pooled (a review)
            data = json.loads(p.read_text())
            data["chip"] = data["provenance"]["chip"] = "generic-gpu"
            data["provenance"]["device_name"] = name
            p.write_text(json.dumps(data))
        msg = "the inputs are generic-gpus of other names: NVIDIA RTX 6000 Ada Generation ("
    elif what == "named-chip-of-two-models":   # an H200's calibration run as nvidia-h100
        for p, name in ((a, "NVIDIA H100 80GB HBM3"), (b, "NVIDIA H200")):   # (GEMMGATE_CHIP
            data = json.loads(p.read_text())           # set wrong: warned of when it ran,
            data["chip"] = data["provenance"]["chip"] = "nvidia-h100"   # then pooled
            data["provenance"].update(device_name=name, timing="graph")   # silently)
            p.write_text(json.dumps(data))
        msg = ("the nvidia-h100 inputs ran on other GPU models or parts: NVIDIA H100 80GB "
               "HBM3 (")
    elif what == "per-call-run":
        rc, data = _check(work, base_file)
        data["environment"]["copies"] = "per-call"
        run = work / "run-per-call.json"
        run.write_text(json.dumps(data))
        inputs, msg = [str(a), str(run)], "a run with --copies per-call cannot calibrate"
    else:
        (work / "adir").mkdir()
        out, msg = work / "adir", "it is a directory"
    listing = _listing(work)
    data = {p: p.read_bytes() for p in (a, b, out) if p.is_file()}
    assert main(["baseline", "merge", *inputs, "--output", str(out)]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "gemmgate: error:" in err and msg in err
    assert _listing(work) == listing                              # nothing written
    assert all(p.read_bytes() == d for p, d in data.items())


@pytest.mark.parametrize("stop, code", [(KeyboardInterrupt, 130), ("measurement", 3)])
def test_a_check_that_stops_leaves_no_earlier_comment(work, base_file, synthetic_timing,
                                                      monkeypatch, stop, code):
    """--comment is written at the end of a check: one stopped while measuring (Ctrl-C,
    SIGTERM, exit 3) left an earlier check's comment at the path, whole, which read as
    its own (a review). It is removed once the inputs are checked, as sweep's are."""
    import gemmgate.cli_gate as cli_gate
    from gemmgate.context import MeasurementError

    def stopped(*a, **k):
        raise KeyboardInterrupt if stop is KeyboardInterrupt else MeasurementError("boom")
    comment = work / "comment.md"
    comment.write_text("### gemmgate check on cpu: passed (an earlier check)\n")
    monkeypatch.setattr(cli_gate, "execute", stopped)
    rc = main(["check", *FAST, *_shapes(work), "--baseline", str(base_file),
               "--comment", str(comment), "--summary", str(work / "s.md")])
    assert rc == code and not comment.exists()


@pytest.mark.parametrize("flag", ["--json", "--comment", "--summary"])
def test_check_writing_over_its_baseline_is_exit_2(work, base_file, synthetic_timing, capsys,
                                                   flag):
    before, measured = base_file.read_bytes(), len(synthetic_timing.measured)
    assert main(["check", *FAST, *_shapes(work), "--baseline", str(base_file),
                 flag, str(base_file)]) == 2
    assert f"{flag} {base_file} is also --baseline" in capsys.readouterr().err
    assert base_file.read_bytes() == before and len(synthetic_timing.measured) == measured


@pytest.mark.parametrize("flag", ["--json", "--comment", "--summary"])
def test_check_writing_over_the_shape_file_its_baseline_names_is_exit_2(
        work, base_file, synthetic_timing, capsys, flag):
    """Without --shapes a check runs the shape file the baseline's provenance names: an
    output there wrote over it, and the shapes were lost (only --shapes was an input)."""
    shapes = work / "shapes.csv"
    assert json.loads(base_file.read_text())["provenance"]["shapes"] == str(shapes)
    before, measured = shapes.read_bytes(), len(synthetic_timing.measured)
    assert main(["check", *FAST, "--baseline", str(base_file), flag, str(shapes)]) == 2
    assert "is also the baseline's shape file" in capsys.readouterr().err.replace("\n", " ")
    assert shapes.read_bytes() == before and len(synthetic_timing.measured) == measured


def test_update_with_an_empty_output_is_exit_2_not_the_committed_file(work, synthetic_timing,
                                                                      capsys):
    assert main(["baseline", "update", *FAST, *_shapes(work), "--output", ""]) == 2
    assert "--output (the baseline file) is an empty path" in capsys.readouterr().err
    assert synthetic_timing.measured == []


@pytest.mark.parametrize("text", ["{", '{"schema": "gemmgate.baseline", "version": 2}'])
def test_update_over_an_unusable_file_is_exit_2_before_any_work(work, synthetic_timing,
                                                                capsys, text):
    out = work / "b.json"
    out.write_text(text)
    assert main(["baseline", "update", *FAST, *_shapes(work), "--output", str(out)]) == 2
    assert "nothing written over it" in capsys.readouterr().err.replace("\n", " ")
    assert out.read_text() == text and synthetic_timing.measured == []


def test_m_merge_onto_an_input_reads_the_inputs_again_under_the_lock(work, base_file,
                                                                     monkeypatch, capsys):
    """An update that lands on the output file between merge's first read of its inputs
    and its lock is merged, not lost: the inputs are read again under the lock."""
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-b", scale=1.02)
    landed = json.loads(b.read_text())
    key = next(iter(landed["cases"]))
    case = landed["cases"][key]
    landed["cases"]["fp32-m8-n8-k8"] = dict(case, m=8, n=8, k=8)   # the update's new case
    real = baselines.locked

    def locked(path, timeout_s=600):
        if Path(path) == b:
            b.write_text(json.dumps(landed))   # lands just before merge takes the lock
        return real(path, timeout_s)
    monkeypatch.setattr(baselines, "locked", locked)
    assert main(["baseline", "merge", str(a), str(b), "--output", str(b)]) == 0
    assert "fp32-m8-n8-k8" in baselines.load(b, "cpu").cases


def test_m_merge_writes_atomically(work, base_file, monkeypatch, capsys):
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-b", scale=1.02)
    out = work / "out.json"
    shutil.copy(base_file, out)
    old = out.read_bytes()
    before = set(_listing(work))

    def boom(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    assert main(["baseline", "merge", str(a), str(b), "--output", str(out)]) == 2
    assert "disk full" in capsys.readouterr().err
    assert out.read_bytes() == old
    assert set(_listing(work)) - before <= {"out.json.lock"}    # the temp file is gone


# --- the CPU path on another machine: advisory, never a false alarm (issue 10 item 5) -----

def test_l_cpu_check_against_another_hosts_baseline_is_advisory(work, base_file,
                                                                synthetic_timing, capsys):
    elsewhere = _on_host(work, "elsewhere.json", "another-host")
    synthetic_timing.base_ms["triton"] = 3.0                      # ratio -67%
    rc, data = _check(work, elsewhere)
    assert rc == 0 and data["gate"]["failed"] is False
    assert _verdicts(data) == dict.fromkeys(KEYS, "inconclusive")
    for v in data["gate"]["verdicts"]:
        assert v["level"] == "advisory" and v["ratio"]["verdict"] == "regressed"
        assert "advisory" in v["note"] and not v["remeasured"]
    assert "::error" not in capsys.readouterr().out
    # the same baseline on its own host (the unchanged file): a regression, exit 1
    rc, data = _check(work, base_file)
    assert rc == 1 and _verdicts(data) == dict.fromkeys(KEYS, "regressed")
    assert {v["level"] for v in data["gate"]["verdicts"]} == {"process"}


def test_l_the_committed_cpu_baseline_is_advisory_on_another_host(work, synthetic_timing,
                                                                  monkeypatch, capsys):
    """Its noise was measured on one host: on another its stored judgement is advisory
    (the host named apart from this one's, which may share the calibrating host's name)."""
    import gemmgate.env

    monkeypatch.setattr(gemmgate.env.platform, "node", lambda: "another-host")
    committed = REPO / "baselines" / "cpu.json"
    before = committed.read_bytes()
    synthetic_timing.base_ms["triton"] = 3.0
    out = work / "committed.json"
    rc = main(["check", "--chip", "cpu", "--modes", "fp32", "--budget", "0.3",
               "--shapes", "smoke", "--baseline", str(committed), "--json", str(out)])
    assert rc == 0
    gate = json.loads(out.read_text())["gate"]
    assert gate["failed"] is False and len(gate["verdicts"]) == 4
    for v in gate["verdicts"]:
        assert v["verdict"] == "inconclusive" and v["level"] == "advisory"
        assert "stored judgement advisory" in v["note"]
    assert all(k.startswith("fp16-") for k in gate["missing"]) and gate["extra"] == []
    assert committed.read_bytes() == before


def test_keep_runs_into_a_folder_holding_earlier_runs_is_exit_2(work, synthetic_timing, capsys):
    """An earlier calibration's run3.json beside this one's run1, run2 would be merged
    with them later (`baseline merge DIR/*.json`)."""
    keep = work / "kept"
    keep.mkdir()
    (keep / "run3.json").write_text("{}")
    assert main(["baseline", "calibrate", *FAST, *_shapes(work), "--runs", "2",
                 "--keep-runs", str(keep), "--output", str(work / "c.json")]) == 2
    assert "holds runs of an earlier calibration" in capsys.readouterr().err.replace("\n", " ")
    assert synthetic_timing.measured == [] and not (work / "c.json").exists()


@pytest.mark.parametrize("run", [1, 3])
def test_an_output_at_a_kept_run_s_path_is_exit_2_before_any_run(work, synthetic_timing,
                                                                    capsys, run):
    """--output keep/run3.json of a 3-run calibration: refused before measuring, as
    run1.json was (it had been refused after all three runs)."""
    keep = work / "kept"
    out = keep / f"run{run}.json"
    assert main(["baseline", "calibrate", *FAST, *_shapes(work), "--runs", "3",
                 "--keep-runs", str(keep), "--output", str(out)]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert f"--keep-runs {out} is also --output (the baseline file)" in err
    assert synthetic_timing.measured == [] and not out.exists()


def test_k_a_default_check_runs_every_case_the_baseline_holds(work, base_file, capsys):
    """An update of other shapes keeps the file's first --shapes label: a check without
    --shapes ran that set alone, left the added case out with a note, and passed (a
    review). It runs the baseline's other cases too."""
    assert main(["baseline", "update", *FAST, "--shapes", "16x16x16",
                 "--output", str(base_file)]) == 0
    data = json.loads(base_file.read_text())
    assert data["provenance"]["shapes"].endswith("shapes.csv") and len(data["cases"]) == 3
    out = work / "all.json"
    assert main(["check", *FAST, "--baseline", str(base_file), "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert {c["id"] for c in got["cases"]} == KEYS | {"fp32-m16-n16-k16"}
    assert got["gate"]["missing"] == [] and "not run" not in capsys.readouterr().err


def test_h_update_timed_otherwise_than_the_cases_it_keeps_is_exit_2_before_any_work(
        work, base_file, synthetic_timing, capsys):
    """A baseline records one --block (and timing method) for all its cases, which a check
    times them with: an update at another block of some cases, keeping the others, is
    refused before measuring, the file as it was; re-measuring every case is an update."""
    before = base_file.read_text()
    synthetic_timing.policies.clear()
    assert main(["baseline", "update", *FAST, "--shapes", "32x32x32", "--block", "2",
                 "--output", str(base_file)]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "its 1 other case(s) were measured with --block 1, these with 2" in err
    assert base_file.read_text() == before and synthetic_timing.policies == []
    assert main(["baseline", "update", *FAST, *_shapes(work), "--block", "2",
                 "--output", str(base_file)]) == 0
    assert json.loads(base_file.read_text())["provenance"]["block"] == 2


def test_h_update_at_a_block_beside_cases_of_a_file_from_before_block_is_exit_2(
        work, base_file, synthetic_timing, capsys):
    """A baseline without `provenance.block` predates --block: its cases were timed a call
    a round, so keeping them beside cases timed at --block 2 is refused as for block 1."""
    data = json.loads(base_file.read_text())
    data["provenance"].pop("block")
    base_file.write_text(json.dumps(data))
    before = base_file.read_text()
    assert main(["baseline", "update", *FAST, "--shapes", "32x32x32", "--block", "2",
                 "--output", str(base_file)]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "its 1 other case(s) were measured with --block 1, these with 2" in err
    assert base_file.read_text() == before


def test_m_merge_onto_a_baseline_timed_otherwise_is_exit_2(work, base_file, capsys):
    a = _on_host(work, "on-a.json", "host-a")
    b = _on_host(work, "on-b.json", "host-b", scale=1.02)
    other = _edited(work, "other.json", lambda d: (d["provenance"].update(block=4), d[
        "cases"].update({"fp32-m16-n16-k16": dict(d["cases"]["fp32-m32-n32-k32"], m=16, n=16,
                                                    k=16)})))
    before = other.read_text()
    assert main(["baseline", "merge", str(a), str(b), "--output", str(other)]) == 2
    assert "measured with --block 4, these with 1" in capsys.readouterr().err.replace("\n", " ")
    assert other.read_text() == before


def test_m_merge_output_onto_an_input_run_file_is_exit_2(work, base_file, synthetic_timing,
                                                         capsys):
    """Writing the baseline over a run file among the inputs destroyed the run."""
    run = work / "run.json"
    assert main(["run", *FAST, *_shapes(work), "--json", str(run)]) == 0
    before = run.read_text()
    assert main(["baseline", "merge", str(base_file), str(run), "--output", str(run)]) == 2
    assert "is a run file among the inputs" in capsys.readouterr().err
    assert run.read_text() == before


def test_k_a_check_timed_otherwise_than_its_baseline_says_so(work, base_file, capsys):
    rc, _ = _check(work, base_file, "--block", "2", "--no-remeasure")
    assert rc == 0
    assert "--block 2, but the baseline was measured with 1" in \
        capsys.readouterr().err.replace("\n", " ")
    # a baseline that records no block was timed at 1, as update and merge read it
    # (the check's warning read only a recorded one; a review)
    bare = _edited(work, "bare.json", lambda d: (d["provenance"].pop("block"), d))
    rc, _ = _check(work, bare, "--block", "2", "--no-remeasure")
    assert rc == 0
    assert "--block 2, but the baseline was measured with 1" in \
        capsys.readouterr().err.replace("\n", " ")


def test_the_gate_table_prints_a_note_s_brackets_as_text():
    """A reference kernel's failure in a note ("cannot open [/dev/nvidia0]") was Rich
    markup: a MarkupError before the comment and the summary were written, or "[i]"
    dropped from "a[i]" (a review)."""
    import io

    from rich.console import Console

    from gemmgate.cli_gate import _gate_table
    from gemmgate.gate import CaseVerdict, GateResult

    note = "A/B: the reference kernel failed (fail: OSError: cannot open [/dev/nvidia0]; a[i])"
    gate = GateResult((CaseVerdict("fp32-m16-n16-k16", "unchanged", None, None, note),), (), ())
    out = io.StringIO()
    Console(file=out, width=400).print(_gate_table(gate))
    assert "cannot open [/dev/nvidia0]; a[i])" in out.getvalue()


@pytest.mark.parametrize("label", ["32x32x32,48x16x64 and 1 more case(s) of the baseline",
                                   "gone/shapes.csv", None, "gone/[/]x.csv",
                                   "gone/[bold]x.csv"])
def test_a_check_runs_the_baseline_s_own_cases_where_its_label_names_no_set(
        work, base_file, synthetic_timing, capsys, label):
    """A merge of check files stored their label ("... and 1 more case(s) of the
    baseline"), and an update from another folder a relative shape file: `check` then
    exited 2 on a usable baseline. provenance.modes null (every mode) made it exit 2 too,
    "can only join an iterable" (a review)."""
    def edit(data):
        data["provenance"].update(shapes=label, modes=None)
    b = _edited(work, "labelled.json", edit)
    out = work / "c.json"
    capsys.readouterr()
    rc = main(["check", "--chip", "cpu", "--budget", "0.3", "--baseline", str(b),
               "--json", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert set(_verdicts(json.loads(out.read_text()))) == KEYS
    if label is not None:
        assert "name no shape set here" in err
        assert repr(label) in err   # as text: "[/]" in it was a MarkupError, exit 1 (a review)


@pytest.mark.parametrize("modes, rc, said", [
    (" fp32", 0, None), ("fp32,", 0, None),
    ("FP32", 2, "unknown precision mode 'FP32'"),   # was "holds no case of --modes FP32"
])
def test_check_modes_on_the_baseline_s_own_cases_are_read_as_everywhere(
        work, base_file, synthetic_timing, capsys, modes, rc, said):
    """--modes " fp32" found no case on the own-cases path (a raw split) where `run`
    takes it; "FP32" said the baseline held none rather than naming the bad mode (a
    review)."""
    def edit(data):
        data["provenance"].update(shapes="gone/shapes.csv")
    b = _edited(work, "labelled.json", edit)
    capsys.readouterr()
    assert main(["check", "--chip", "cpu", "--budget", "0.3", "--baseline", str(b),
                 "--modes", modes]) == rc
    if said:
        assert said in capsys.readouterr().err


def test_a_check_runs_each_added_case_in_the_modes_the_baseline_holds_it_in(
        work, base_file, synthetic_timing, capsys):
    """A case `update` added in fp16 alone was run in every mode the check ran (fp32
    too), listed as new, an accuracy failure there an exit 1 over a case never
    baselined (a review)."""
    assert main(["baseline", "update", "--chip", "cpu", "--budget", "0.3", "--shapes",
                 "16x16x16", "--modes", "fp16", "--output", str(base_file)]) == 0
    out = work / "c.json"
    capsys.readouterr()
    assert main(["check", "--chip", "cpu", "--budget", "0.3", "--baseline", str(base_file),
                 "--json", str(out), "--no-remeasure"]) == 0
    err = capsys.readouterr().err
    # the baseline's set in the modes it records (its fp16 cases new), and the added
    # case in fp16 alone
    data = json.loads(out.read_text())
    assert set(_verdicts(data)) == KEYS | {"fp16-m16-n16-k16"}
    assert set(data["gate"]["extra"]) == {"fp16-m32-n32-k32", "fp16-m48-n16-k64"}
    assert "fp32-m16-n16-k16" not in err and "5 cases of 2 modes" in err


def test_check_refuses_an_output_onto_a_provider_s_source(work, base_file, capsys,
                                                         monkeypatch):
    """`check --json prov.py` wrote the run over the provider's source, where `run`
    refuses (a review)."""
    src = work / "myprov.py"
    src.write_text("def f(a, b, *, precision=None, out=None):\n    return out.copy_(a @ b)\n")
    monkeypatch.syspath_prepend(str(work))
    assert main(["check", *FAST, *_shapes(work), "--baseline", str(base_file),
                 "--providers", "triton,vendor,myprov:f", "--json", str(src)]) == 2
    assert "is also --providers myprov:f" in capsys.readouterr().err.replace("\n", " ")
    assert src.read_text().startswith("def f(")


def test_a_baseline_s_provenance_text_is_printed_as_text(work, base_file, synthetic_timing,
                                                         capsys):
    """"2.0[/]" in its torch was Rich markup: a MarkupError, exit 1 on a passing check,
    no comment nor summary written (a review)."""
    b = _edited(work, "marked.json", lambda d: d["provenance"].update(torch="2.0[/]"))
    capsys.readouterr()
    rc, _ = _check(work, b, "--no-remeasure")
    assert rc == 0
    assert "torch 2.0[/] ->" in capsys.readouterr().err.replace("\n", " ")


def test_a_baseline_write_warns_of_cases_whose_noise_passes_a_large_slowdown(work, base_file,
                                                                             capsys):
    """A calibration on a loaded machine stored +-548% and said nothing: a 6x slowdown
    passed the gate there (a review). Every write names such cases (process level, else
    machine level); quiet ones are not named."""
    def noisy(data):
        first = next(iter(data["cases"].values()))
        first["noise"].update(ratio=0.4)   # x2.5 at 5 runs, in log space: +258%
    a = _on_host(work, "on-a.json", "host-a")
    b = _edited(work, "noisy.json", noisy)
    data = json.loads(b.read_text())
    data["provenance"]["run_ids"] = ["another-run"]
    b.write_text(json.dumps(data))
    key = next(iter(data["cases"]))
    capsys.readouterr()
    assert main(["baseline", "merge", str(a), str(b), "--output", str(work / "m.json")]) == 0
    err = capsys.readouterr().err.replace("\n", " ")
    assert "store noise that passes a slowdown of over 50%" in err
    import io

    from rich.console import Console

    from gemmgate.cli_merge import warn_wide
    for base, named in ((baselines.load(b, "cpu"), True), (baselines.load(base_file, "cpu"),
                                                             False)):
        buf = io.StringIO()
        warn_wide(Console(file=buf, width=400), base)
        assert (key in buf.getvalue()) == named


def test_the_wide_warning_looks_at_the_machine_level_too():
    """Two machines' 5-run calibrations, their medians 2% apart: on a third GPU the gate
    judges at machine level, x48.2 the machines' spread, and the warning (process level
    only, where one existed) said nothing (a review). It names the level and what narrows
    it."""
    import io

    from rich.console import Console

    from gemmgate.baseline_noise import level_noise
    from gemmgate.baseline_schema import from_json
    from gemmgate.cli_merge import warn_wide
    from tests.gemmgate.gate_cases import A, base_case, baseline, one_verdict, result

    runs = [0.9] * 5 + [0.918] * 5   # two machines' 5-run calibrations, 2% apart
    hosts = ["h1"] * 5 + ["h2"] * 5
    bc = base_case(A, noise_ratio=0.01, machines=tuple(hosts))
    bc["noise"].update(ratio_runs=runs, machine=level_noise(runs, hosts)[1])
    data = baseline(**{A.id: bc})
    v = one_verdict([result(A)], data, env={"host": "h3"})[1]
    assert v.level == "machine" and v.ratio.tolerance > 0.5
    buf = io.StringIO()
    warn_wide(Console(file=buf, width=400), from_json(data))
    out = buf.getvalue()
    assert "at machine level (a check on another GPU without --ab-ref)" in out
    assert f"{v.key} ({band(v.ratio.tolerance)})" in out and "three or more machines" in out
    assert out.count("warning:") == 1   # the process level (1% at x2.5) is not named


def test_the_wide_warning_scales_one_run_s_figure_as_the_gate_does():
    """After `baseline update` the figure compared with is one run's and the gate scales
    the calibration's spread by ONE_RUN_FACTOR: a 13% spread of 5 runs was +56.37% there
    (a slowdown by 1.56x passed) while the warning, at the 5-run x2.5 (+41.6%), said
    nothing; it printed "+-54%" for a -35%/+54% band (a review)."""
    import io

    from rich.console import Console

    from gemmgate.baseline_schema import from_json
    from gemmgate.cli_merge import warn_wide
    from tests.gemmgate.gate_cases import HOST, A, base_case, baseline, one_verdict, result

    bc = base_case(A, noise_ratio=0.13, machines=(HOST,))
    bc["noise"].update(ratio_runs=[0.9], runs=1, behind={"ratio": 5})
    data = baseline(**{A.id: bc})
    v = one_verdict([result(A)], data)[1]
    assert v.ratio.tolerance == pytest.approx(0.87 ** -3.21 - 1)          # +56.37%
    buf = io.StringIO()
    warn_wide(Console(file=buf, width=400), from_json(data))
    assert f"{v.key} (-36.05%/+56.37%)" in buf.getvalue()
    bc["noise"].update(ratio_runs=[0.9] * 5, run_machines=[HOST] * 5, runs=5, behind={})
    buf = io.StringIO()   # its 5 runs listed: x2.5, +41.6%, not named
    warn_wide(Console(file=buf, width=400), from_json(baseline(**{A.id: bc})))
    assert buf.getvalue() == ""


def test_the_wide_warning_sees_the_machine_figure_a_calibration_machine_is_judged_by():
    """A merge of three machines' one run each, 6.5% apart, stores no process figure: on
    each of those machines the gate judges at process level with the machine figure,
    compared with that machine's one run (x6.78: -36.6%/+57.7%), while the warning took
    the machine level's x5.55 (+45.2%) alone and said nothing (a review)."""
    import io

    from rich.console import Console

    from gemmgate.baseline_noise import level_noise
    from gemmgate.baseline_schema import from_json
    from gemmgate.cli_merge import warn_wide
    from tests.gemmgate.gate_cases import HOST, A, base_case, baseline, one_verdict, result

    runs, hosts = [0.9, 0.9 * 0.935, 0.9 * 1.01], [HOST, "h2", "h3"]
    bc = base_case(A, machines=tuple(hosts))
    bc["noise"].update(ratio_runs=runs, runs=3, machine=level_noise(runs, hosts)[1])
    data = baseline(**{A.id: bc})
    v = one_verdict([result(A)], data)[1]
    assert v.level == "process" and v.ratio.tolerance > 0.5
    other = one_verdict([result(A)], data, env={"host": "h4"})[1]
    assert other.level == "machine" and other.ratio.tolerance < 0.5
    buf = io.StringIO()
    warn_wide(Console(file=buf, width=400), from_json(data))
    out = buf.getvalue()
    assert f"{v.key} ({band(v.ratio.tolerance)})" in out
    assert "at machine level" not in out and out.count("warning:") == 1


def test_the_wide_warning_looks_at_triton_s_tflops_where_no_ratio_is_stored():
    """A case with no speed ratio (the vendor unsupported) is judged on Triton's TFLOP/s
    at twice the floor: its 30% spread of 5 runs is -59%/+144% at the gate, and the
    warning, which read the ratio's figures alone, said nothing (a review)."""
    import io

    from rich.console import Console

    from gemmgate.baseline_schema import from_json
    from gemmgate.cli_merge import warn_wide
    from tests.gemmgate.gate_cases import HOST, A, base_case, baseline, one_verdict, result

    bc = base_case(A, ratio=None, noise_tflops=0.3)
    tf = bc["providers"]["triton"]["tflops"]
    bc["noise"].update(tflops_runs=[tf] * 5, tflops_machines=[HOST] * 5)
    data = baseline(**{A.id: bc})
    v = one_verdict([result(A)], data)[1]
    assert v.level == "process" and v.ratio is None and v.tflops.tolerance > 0.5
    buf = io.StringIO()
    warn_wide(Console(file=buf, width=400), from_json(data))
    assert f"{v.key} ({band(v.tflops.tolerance)})" in buf.getvalue()
