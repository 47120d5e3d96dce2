"""`gemmgate check` and `gemmgate baseline update|calibrate` end to end on the CPU path
(chip cpu, Triton interpreter, wall-clock timing): exit codes, files, output.

Kept fast: fp32 only, two tiny cases from a user shape file, --budget 0.3 s per case.
The interpreter is noisy (the ratio moves tens of percent between runs), so verdicts are
only asserted where the baseline was moved 3x or a 200% slowdown was injected.
"""

import json
import math
import shutil

import pytest

from gemmgate import baselines
from gemmgate.cli import main

FAST = ["--chip", "cpu", "--modes", "fp32", "--budget", "0.3"]
KEYS = {"fp32-m32-n32-k32", "fp32-m48-n16-k64"}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("gate")
    (d / "shapes.csv").write_text("m,n,k\n32,32,32\n48,16,64\n")
    return d


@pytest.fixture(scope="module")
def base_file(work):
    """(a) `baseline update` -> exit 0 and a valid cpu baseline."""
    out = work / "b.json"
    assert main(["baseline", "update", *FAST, "--shapes", str(work / "shapes.csv"),
                 "--output", str(out)]) == 0
    return out


def _shapes(work) -> list[str]:
    return ["--shapes", str(work / "shapes.csv")]


def _fake(work, name: str, scale: float):
    """A copy of the fresh baseline with every case's ratio scaled and no measured noise."""
    data = json.loads((work / "b.json").read_text())
    for c in data["cases"].values():
        c["ratio"] *= scale
        c["noise"]["ratio"] = c["noise"]["tflops"] = None
    p = work / name
    p.write_text(json.dumps(data))
    return p


def test_a_baseline_update_writes_valid_file(base_file):
    data = baselines.load(base_file, "cpu")
    assert set(data["cases"]) == KEYS
    assert data["provenance"]["modes"] == ["fp32"] and data["provenance"]["runs"] == 1
    for c in data["cases"].values():
        assert c["ratio"] > 0 and c["providers"]["triton"]["median_ms"] > 0
        assert c["noise"]["runs"] == 1


def test_b_check_against_fresh_baseline(work, base_file, capsys):
    cj, summary = work / "c.json", work / "summary.md"
    rc = main(["check", *FAST, *_shapes(work), "--baseline", str(base_file), "--json", str(cj),
               "--summary", str(summary)])
    assert rc in (0, 1)  # the interpreter is noisy: a real "regressed" can happen
    data = json.loads(cj.read_text())
    gate = data["gate"]
    assert gate["baseline"] == str(base_file) and gate["failed"] == (rc == 1)
    assert {v["id"] for v in gate["verdicts"]} == KEYS
    assert gate["missing"] == [] and gate["extra"] == [] and gate["inject_slowdown"] == 0.0
    assert all(v["verdict"] != "failed" for v in gate["verdicts"])
    assert {c["id"] for c in data["cases"]} == KEYS
    md = summary.read_text()
    assert "gemmgate check on cpu" in md
    assert all(k in md for k in KEYS)
    assert "regression gate" in capsys.readouterr().out


def test_c_three_times_higher_baseline_ratio_is_a_regression(work, capsys):
    fake = _fake(work, "slow.json", 3.0)
    before = fake.read_bytes()
    cj = work / "c3.json"
    rc = main(["check", *FAST, *_shapes(work), "--baseline", str(fake), "--json", str(cj)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "::error title=gemmgate regression::" in out
    gate = json.loads(cj.read_text())["gate"]
    assert gate["failed"] is True
    assert {v["verdict"] for v in gate["verdicts"]} == {"regressed"}
    assert all(v["remeasured"] for v in gate["verdicts"])     # the second measurement decided
    assert fake.read_bytes() == before                        # check never writes a baseline


def test_d_three_times_lower_baseline_ratio_is_an_improvement(work, capsys):
    fake = _fake(work, "fast.json", 1 / 3)
    cj = work / "d.json"
    rc = main(["check", *FAST, *_shapes(work), "--baseline", str(fake), "--json", str(cj)])
    assert rc == 0
    assert "::error" not in capsys.readouterr().out
    gate = json.loads(cj.read_text())["gate"]
    assert gate["failed"] is False
    assert {v["verdict"] for v in gate["verdicts"]} == {"improved"}


def test_e_injected_slowdown_is_caught(work, base_file, capsys):
    cj = work / "e.json"
    rc = main(["check", *FAST, *_shapes(work), "--baseline", str(base_file),
               "--inject-slowdown", "2.0", "--json", str(cj)])
    assert rc == 1
    assert "::error title=gemmgate regression::" in capsys.readouterr().out
    gate = json.loads(cj.read_text())["gate"]
    assert gate["inject_slowdown"] == 2.0
    assert {v["verdict"] for v in gate["verdicts"]} == {"regressed"}
    for v in gate["verdicts"]:
        assert v["ratio"]["change"] < -0.4                    # ~ -67% expected


def _edited(work, name, edit):
    data = json.loads((work / "b.json").read_text())
    edit(data)
    p = work / name
    p.write_text(json.dumps(data))
    return p


@pytest.mark.parametrize("what", ["missing", "corrupt", "other-chip", "negative-slowdown",
                                  "nan-slowdown", "calibrate-runs-0", "update-runs-0"])
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
        msg = "--runs must be at least 1"
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
    out = work / "b2.json"
    assert main(["baseline", "calibrate", *FAST, *_shapes(work), "--runs", "2",
                 "--output", str(out), "--keep-runs", str(work / "kept")]) == 0
    kept = sorted(p.name for p in (work / "kept").iterdir())
    assert kept == ["run1.json", "run2.json"]
    assert {c["id"] for c in json.loads((work / "kept" / "run2.json").read_text())["cases"]} \
        == KEYS
    data = baselines.load(out, "cpu")
    assert set(data["cases"]) == KEYS and data["provenance"]["runs"] == 2
    for c in data["cases"].values():
        assert c["noise"]["runs"] == 2
        r = c["noise"]["ratio"]
        assert isinstance(r, float) and math.isfinite(r) and r >= 0
    assert "wrote" in capsys.readouterr().out


def test_h_update_over_existing_shows_old_beside_new(work, base_file, capsys):
    old = work / "h.json"
    data = json.loads(base_file.read_text())
    for c in data["cases"].values():
        c["noise"] = {"ratio": 0.0123, "tflops": 0.0456, "runs": 5}
    old.write_text(json.dumps(data))
    old_geo = baselines.summary(data)["fp32"]["geomean_ratio"]
    assert main(["baseline", "update", *FAST, *_shapes(work), "--output", str(old)]) == 0
    out = capsys.readouterr().out
    assert "old beside new" in out
    row = next(line for line in out.splitlines() if "fp32" in line and "│" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[:3] == ["fp32", "2", f"{old_geo:.3f}"]     # the old file's figures
    assert cells[3] == "2" and cells[4] != "—"
    new = baselines.load(old, "cpu")
    assert set(new["cases"]) == KEYS
    for c in new["cases"].values():                             # single run: noise carried
        assert c["noise"] == {"ratio": 0.0123, "tflops": 0.0456, "runs": 5}


def test_c_literal_null_noise_baseline(work, capsys):
    data = json.loads((work / "b.json").read_text())
    for c in data["cases"].values():
        c["ratio"] *= 3
        c["noise"] = None
    fake = work / "null-noise.json"
    fake.write_text(json.dumps(data))
    rc = main(["check", *FAST, *_shapes(work), "--baseline", str(fake), "--no-remeasure"])
    out = capsys.readouterr().out
    # either refused up front (exit 2) or judged with the floor tolerance (exit 1)
    assert rc == 2 or (rc == 1 and "::error title=gemmgate regression::" in out)


@pytest.mark.parametrize("device_type, retune, pins", [
    ("cuda", True, None), ("cuda", False, "baselines/x.json"), ("cpu", False, None)])
def test_i_calibration_command_lines(monkeypatch, tmp_path, device_type, retune, pins):
    """On a GPU an unrecorded priming run goes first and is the only one that retunes;
    the recorded runs reuse its tiles (cache) or the old baseline's (pins)."""
    import subprocess
    from types import SimpleNamespace

    from gemmgate import cli_gate
    from gemmgate.precision import MODES
    from gemmgate.tuning import TuningSetup

    seen = []

    def fake_run(cmd, stdout=None):
        seen.append(cmd)
        out = cmd[cmd.index("--json") + 1]
        with open(out, "w") as f:
            json.dump({"n": len(seen)}, f)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(cli_gate.subprocess, "run", fake_run)
    session = SimpleNamespace(chip=SimpleNamespace(id="c", device_type=device_type),
                              shapes_label="pr", modes=(MODES["bf16"],),
                              tuning=TuningSetup("c", pins_from=pins, retune=retune))
    args = SimpleNamespace(runs=3, timing=None, budget=None, block=None)
    err = SimpleNamespace(print=lambda *a, **k: None)
    runs = cli_gate._runs(args, session, None, err)
    primed = device_type != "cpu"
    assert len(seen) == 3 + primed
    assert runs == [{"n": i} for i in range(1 + primed, 4 + primed)]  # priming not recorded
    assert [("--retune" in c) for c in seen] == [retune] + [False] * (len(seen) - 1)
    assert all(("--pin-tiles" in c) == bool(pins) for c in seen)


def test_j_ab_ref_times_the_reference_and_catches_a_slowdown(work, base_file, kernels_repo,
                                                             monkeypatch, capsys):
    d, old, _ = kernels_repo
    monkeypatch.chdir(d)  # --ab-ref resolves in the working directory's repository
    out = work / "ab.json"
    rc = main(["check", *FAST, *_shapes(work), "--baseline", str(base_file), "--ab-ref", old,
               "--inject-slowdown", "2", "--json", str(out)])
    data = json.loads(out.read_text())
    assert rc == 1 and data["gate"]["ab_ref"] == old
    for v in data["gate"]["verdicts"]:  # 3x the time: -67% against the reference
        assert v["verdict"] == "regressed" and v["ab"]["change"] < -0.5
    assert "against the reference kernel" in capsys.readouterr().out
    assert all("reference" in c["providers"] for c in data["cases"])


def test_j_bad_ab_ref_is_exit_2_before_any_work(work, base_file, kernels_repo, monkeypatch,
                                                capsys):
    d, _, _ = kernels_repo
    monkeypatch.chdir(d)
    out = work / "never.json"
    assert main(["check", *FAST, *_shapes(work), "--baseline", str(base_file),
                 "--ab-ref", "no-such-ref", "--json", str(out)]) == 2
    assert "no such commit" in capsys.readouterr().err and not out.exists()


def test_j_calibrate_ab_ref_stores_ab_noise(work, clean_repo, monkeypatch, capsys):
    d, head = clean_repo
    monkeypatch.chdir(d)  # fresh `gemmgate run --ab-ref` processes resolve HEAD here too
    out = work / "ab-cal.json"
    assert main(["baseline", "calibrate", *FAST, *_shapes(work), "--runs", "2",
                 "--ab-ref", "HEAD", "--output", str(out)]) == 0
    for c in baselines.load(out, "cpu")["cases"].values():
        assert set(c["providers"]) == {"triton", "vendor"}
        assert len(c["noise"]["ab_runs"]) == 2 and all(x > 0 for x in c["noise"]["ab_runs"])
        assert c["noise"]["ab"] == max(abs(x - 1) for x in c["noise"]["ab_runs"])


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


def test_j_check_warns_when_the_baseline_has_no_ab_noise(work, base_file, clean_repo,
                                                         monkeypatch, capsys):
    monkeypatch.chdir(clean_repo[0])
    assert main(["check", *FAST, *_shapes(work), "--baseline", str(base_file), "--ab-ref",
                 "HEAD", "--no-remeasure"]) in (0, 1)
    assert "the baseline has no A/B noise" in capsys.readouterr().err


def test_k_check_times_with_the_baselines_block(work, base_file):
    data = json.loads(base_file.read_text())
    assert data["provenance"]["block"] == 1  # recorded by `baseline update`
    data["provenance"]["block"] = 3
    p = work / "block3.json"
    p.write_text(json.dumps(data))
    out = work / "block3-check.json"
    assert main(["check", *FAST, *_shapes(work), "--baseline", str(p), "--no-remeasure",
                 "--json", str(out)]) in (0, 1)
    assert json.loads(out.read_text())["environment"]["block"] == 3
