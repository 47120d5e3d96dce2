"""gemmgate/baseline_schema.py: the typed baseline model, `from_json` validation of the
noise levels and of each case's fields (every error names the case and the field), the
legacy reading of files from before machine ids, and the committed baselines.

The dict helper `_file` documents the file format; pure, no timing.
"""

import json
from pathlib import Path

import pytest

from gemmgate.baseline_schema import (
    Baseline,
    BaselineCase,
    BaselineError,
    Noise,
    ProviderFigures,
    from_json,
    load,
)
from gemmgate.shapes import Case

REPO = Path(__file__).resolve().parents[2]
KEY = "fp32-m64-n64-k64"


def _case(**noise) -> dict:
    """One case as the file holds it: three calibration runs on host ci-a."""
    return {"mode": "fp32", "m": 64, "n": 64, "k": 64, "layout": "rr", "ratio": 0.9,
            "providers": {"triton": {"median_ms": 1.0, "quantiles_ms": {"p50": 1.0},
                                     "tflops": 0.5, "error": 1e-7},
                          "vendor": {"median_ms": 0.9, "quantiles_ms": {}, "tflops": 0.55,
                                     "error": "inf"}},
            "noise": {"ratio": 0.01, "tflops": 0.02, "runs": 3,
                      "ratio_runs": [0.9, 0.91, 0.895], "tflops_runs": [0.5, 0.49, 0.51],
                      "run_machines": ["ci-a"] * 3, **noise}}


def _file(**cases) -> dict:
    return {"schema": "gemmgate.baseline", "version": 1, "chip": "cpu",
            "provenance": {"commit": "0123456789abcdef", "shapes": "smoke", "runs": 3,
                           "host": "ci-a", "machines": {"ci-a": {"host": "ci-a", "runs": 3}}},
            "cases": cases or {KEY: _case()}}


def test_from_json_builds_the_typed_model_and_to_json_is_its_inverse():
    data = _file()
    base = from_json(data, "f.json")
    assert isinstance(base, Baseline) and base.chip == "cpu"
    c = base.cases[KEY]
    assert isinstance(c, BaselineCase) and c.key == KEY and c.case == Case(64, 64, 64)
    assert c.ratio == 0.9 and isinstance(c.providers["triton"], ProviderFigures)
    assert c.providers["vendor"].error is None           # an error string is no number
    assert c.noise == Noise(0.01, 0.02, None, None, None, (0.9, 0.91, 0.895),
                            (0.5, 0.49, 0.51), (), ("ci-a",) * 3, 3, ("ci-a",) * 3)
    assert base.machines == {"ci-a"} and not base.has_ab_noise
    again = json.loads(json.dumps(base.to_json()))
    assert from_json(again) == base
    data["cases"][KEY]["providers"]["vendor"]["error"] = None
    assert again == data


def test_machine_noise_round_trips_and_absent_levels_are_not_written():
    base = from_json(_file(**{KEY: _case(machine=0.03, tflops_machine=0.05, ab=0.004,
                                         ab_runs=[1.0, 1.004])}))
    n = base.cases[KEY].noise
    assert (n.machine, n.tflops_machine, n.ab) == (0.03, 0.05, 0.004) and base.has_ab_noise
    js = n.to_json()
    assert js["machine"] == 0.03 and js["tflops_machine"] == 0.05 and js["ab_runs"] == [1.0,
                                                                                      1.004]
    plain = Noise(ratio=0.01).to_json()
    assert not {"machine", "tflops_machine", "ab", "ab_runs", "run_machines"} & set(plain)


def _corrupt(mutate) -> str:
    data = _file()
    mutate(data["cases"][KEY])
    with pytest.raises(BaselineError, match="corrupt") as e:
        from_json(data, "f.json")
    msg = str(e.value)
    assert "f.json" in msg and KEY in msg                   # names the file and the case
    return msg


@pytest.mark.parametrize("machines", [["ci-a"] * 2, ["ci-a"] * 4, "ci-a", ["ci-a", 7, "x"]])
def test_run_machines_must_name_one_machine_per_ratio_run(machines):
    msg = _corrupt(lambda c: c["noise"].update(run_machines=machines))
    assert "noise.run_machines" in msg


@pytest.mark.parametrize("field", ["machine", "tflops_machine"])
@pytest.mark.parametrize("value", [-0.01, "0.03", float("inf"), True])
def test_bad_machine_noise(field, value):
    msg = _corrupt(lambda c: c["noise"].update({field: value}))
    assert f"bad noise.{field}" in msg


@pytest.mark.parametrize("field", ["ratio_runs", "tflops_runs", "ab_runs"])
@pytest.mark.parametrize("value", [0.9, "0.9", {"a": 1}, [0.9, -1.0], [0.9, None], [0]])
def test_run_lists_must_be_lists_of_positive_numbers(field, value):
    msg = _corrupt(lambda c: c["noise"].update({field: value}))
    assert f"noise.{field} is not a list of positive numbers" in msg


@pytest.mark.parametrize("runs", [-1, 2.5, "3", None])
def test_bad_noise_runs(runs):
    assert "noise.runs" in _corrupt(lambda c: c["noise"].update(runs=runs))


def test_an_unknown_mode_is_named(tmp_path):
    """Issue 9: a baseline holding mode fp64 is refused on load, naming it."""
    data = _file(**{"fp64-m64-n64-k64": {**_case(), "mode": "fp64"}})
    p = tmp_path / "b.json"
    p.write_text(json.dumps(data))
    with pytest.raises(BaselineError) as e:
        load(p)
    msg = str(e.value)
    assert "fp64" in msg and "mode" in msg and "fp64-m64-n64-k64" in msg and str(p) in msg


@pytest.mark.parametrize("field, value", [("m", "abc"), ("n", 1.5), ("k", -3), ("m", True)])
def test_a_bad_dimension_is_named(field, value):
    msg = _corrupt(lambda c: c.update({field: value}))
    assert f".{field} is {value!r}" in msg


def test_key_and_fields_must_agree():
    assert "key and fields disagree" in _corrupt(lambda c: c.update(m=32))


def test_provider_figures_are_checked():
    assert "providers.vendor.median_ms" in _corrupt(
        lambda c: c["providers"]["vendor"].update(median_ms=0))
    assert "providers.vendor.tflops is 'fast'" in _corrupt(
        lambda c: c["providers"]["vendor"].update(tflops="fast"))


def test_a_file_from_before_machine_ids_is_one_legacy_machine():
    data = _file()
    del data["cases"][KEY]["noise"]["run_machines"]
    base = from_json(data)
    assert base.cases[KEY].noise.run_machines == ("legacy:0123456789",) * 3
    data["provenance"] = {"date": "2026-11-29T10:14:57+00:00"}
    assert from_json(data).machines == {"legacy:2026-11-29"}
    data["provenance"] = {}
    assert from_json(data).machines == {"legacy:?"}
    del data["cases"][KEY]["noise"]["ratio_runs"]           # no runs kept: no machine
    assert from_json(data).machines == frozenset()


@pytest.mark.parametrize("name, chip, cases", [("nvidia-h200.json", "nvidia-h200", 78),
                                               ("nvidia-h100.json", "nvidia-h100", 78),
                                               ("cpu.json", "cpu", 8)])
def test_the_committed_baselines_load(name, chip, cases):
    base = load(REPO / "baselines" / name, chip)
    assert base.chip == chip and len(base.cases) == cases
    assert all(c.providers["triton"].median_ms > 0 for c in base.cases.values())
    assert from_json(json.loads(json.dumps(base.to_json()))) == base   # re-saving keeps it


def test_the_committed_h200_baseline_keeps_its_calibrated_noise():
    """Session 10's kernel was calibrated with 4 runs of --ab-ref HEAD on each of two
    hosts of two H200s, every run spread over both GPUs, merged. Since then `baseline
    update` (one run each; last in session 24, every mode, one host) replaced the figures
    and kept that calibrated noise: machine-level and A/B noise on every case, from the 8
    calibration runs. Session 27 merged two more hosts' runs into it (`baseline merge`:
    call 1's tf32x3 and fp32, call 2's PR check in every mode), session 29 a fourth's PR
    check, except in the seven cases that ran another tile there (the picks moved since
    session 24: a kernel change, not machine noise). Session 30 calibrated those seven on
    their tiles on three more hosts (3 runs each, --ab-ref HEAD) and merged them in their
    place; session 31 did the same for bf16 1024^3, whose tile moved again (12 runs: 6 on
    one host, 3 on each of two more), and session 32 for fp16 1024^3, whose tile moved at
    the end of session 31 (9 runs: 3 on each of three hosts). No level fell below the
    stored one, and the figures are the medians of the pooled runs."""
    h200 = load(REPO / "baselines" / "nvidia-h200.json")
    s29 = "vm/GPU-6010d95b-c362-0aa8-70f3-c4f7090e1f4b"          # session 29, call 3
    hosts = {"vm/GPU-2ad21837-fdb0-65d4-bf71-a7a65f889d35",     # session 24, call 3
             "vm/GPU-79dfb5a0-c9e7-11b5-9b07-fad12545a851",     # session 27, call 1
             "vm/GPU-9b776092-ebb1-7ea6-ff3f-215f68d6df71",     # session 27, call 2
             s29}
    s30 = {"vm/GPU-55c7fce5-9fb5-3cc3-82be-2319a3a265de",       # session 30, calls 1-3
           "vm/GPU-b2d8e352-3e74-17dc-e592-2016041b28c1",
           "vm/GPU-5bc01e23-32da-ace7-c639-697745932eeb"}
    s31 = {"vm/GPU-1a8c0f04-82f2-3644-1dce-a903d1fb9244",       # session 31, calls 6-9
           "vm/GPU-bf05a699-abf7-1622-25c1-077b6bfa8582",
           "vm/GPU-011ee1d7-0c87-e971-3ad3-aed58c2ce6f1"}
    s32 = {"vm/GPU-6adcea17-fa70-c1f8-b997-a13a9f514509",       # session 32, calls 2-4
           "vm/GPU-da31976b-2a6f-0ab3-810b-dac0d05a7583",
           "vm/GPU-0aa6c02c-317d-7779-af73-5a7ff9a3a619"}
    moved = {"tf32-m4096-n4096-k4096", "tf32-m4096-n4096-k4096-cr",
             "tf32-m4096-n4096-k4096-rc", "tf32-m128-n8192-k8192",
             "tf32x3-m1024-n1024-k1024", "tf32x3-m1000-n1000-k1000"}
    assert h200.machines == hosts | s30 | s31 | s32
    for key, c in h200.cases.items():
        assert c.noise.ratio is not None and c.noise.machine is not None
        assert c.noise.machine >= c.noise.ratio
        if key == "bf16-m1024-n1024-k1024":
            assert set(c.noise.run_machines) == s31 and c.noise.runs == 12
            assert len(c.noise.run_machines) == len(c.noise.ab_runs) == 12
            assert c.tuning["config"]["block_k"] == 128   # 64x128x128: the new tile
            continue
        if key == "fp16-m1024-n1024-k1024":
            assert set(c.noise.run_machines) == s32 and c.noise.runs == 9
            assert len(c.noise.run_machines) == len(c.noise.ab_runs) == 9
            assert c.tuning["config"]["block_k"] == 128
            continue
        if key in moved:
            assert set(c.noise.run_machines) == s30 and c.noise.runs == 9
            assert len(c.noise.run_machines) == len(c.noise.ab_runs) == 9
            continue
        runs = (3 if c.mode in ("fp32", "tf32x3") else 2) + 1
        assert set(c.noise.run_machines) <= hosts and s29 in c.noise.run_machines
        assert len(c.noise.run_machines) == runs
        assert c.noise.runs == runs + 7
        assert c.noise.ab is not None and len(c.noise.ab_runs) == 8
    assert {c.mode for c in h200.cases.values()} == {"fp32", "tf32", "bf16", "fp16", "fp8",
                                                     "tf32x3"}
    assert h200.has_ab_noise


def test_the_committed_cpu_baseline_serves_ab_ref_baseline():
    """Calibrated in session 58 (5 runs, --ab-ref HEAD, one host): its commit's kernels
    take the choose= hook, so `check --ab-ref baseline` runs on the CPU (the file before
    it recorded a commit older than the harness-free kernel API)."""
    cpu = load(REPO / "baselines" / "cpu.json")
    assert cpu.has_ab_noise and len(cpu.machines) == 1
    assert all(c.noise.runs == 5 and c.noise.machine is None for c in cpu.cases.values())
    assert cpu.provenance["dirty"] is False and len(cpu.provenance["commit"]) == 40


def test_a_directory_is_named_once_in_the_message(tmp_path):
    with pytest.raises(BaselineError) as e:
        load(tmp_path)
    assert str(e.value).count("cannot read baseline") == 1 and "it is a directory" in str(e.value)


@pytest.mark.parametrize("field, value", [
    ("block", "abc"), ("block", 0), ("block", True), ("block", 10**30),   # (ran on, a review)
    ("modes", [1, 2]), ("modes", "fp32"), ("modes", ["fp64"]), ("shapes", 5),
    # what merges, updates and `--ab-ref baseline` read (bare TypeErrors, some after
    # measuring)
    ("machines", [1]), ("machines", {"h": 1}), ("runs", "5"), ("runs", -1),
    ("merged_from", 5), ("merged_from", [5]), ("commit", 5), ("run_ids", "ab"),
    ("kept_from", 3), ("timing", ["wall"])])   # (a merge's unnamed TypeError, a review)
def test_provenance_fields_a_check_defaults_from_are_checked(field, value):
    data = _file()
    data["provenance"][field] = value
    with pytest.raises(BaselineError, match=f"f.json is corrupt: provenance.{field} is"):
        from_json(data, "f.json")


def test_provenance_fields_as_written_load():
    data = _file()
    data["provenance"].update(block=1000, modes=["fp32", "tf32x3"], machines={"h": {"a": 1}},
                              runs=0, merged_from=["abc", None], commit="abc", run_ids=[],
                              kept_from=None)
    assert from_json(data, "f.json").provenance["merged_from"] == ["abc", None]


def test_a_noise_figure_past_any_measurable_is_corrupt():
    """1e308 scaled by the tolerance's factor was an infinite tolerance, and --json could
    not be written (a review)."""
    with pytest.raises(BaselineError, match="bad noise.ratio 1e"):
        from_json(_file(**{KEY: _case(ratio=1e308)}), "f.json")


def test_json_nested_past_the_parsers_depth_is_a_baseline_error(tmp_path):
    """A RecursionError traceback, exit 1 (a regression's code; CI would bisect)."""
    p = tmp_path / "deep.json"
    p.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(BaselineError, match="deep.json is corrupt"):
        load(p)


def test_a_key_given_twice_is_corrupt_not_its_last_copy(tmp_path):
    """A case key given twice was read as its second copy, silently (a review)."""
    p = tmp_path / "dup.json"
    text = json.dumps(_file())
    case = json.dumps(_case(ratio=0.02))
    p.write_text(text.replace(f'"{KEY}": ', f'"{KEY}": {case}, "{KEY}": ', 1))
    assert text != p.read_text()
    with pytest.raises(BaselineError, match=f"dup.json is corrupt .*'{KEY}' is given twice"):
        load(p)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_nan_anywhere_is_corrupt_on_load(tmp_path, constant):
    """An error of NaN passed validation, and the next update failed after measuring,
    naming no file (gemmgate writes with allow_nan=False; a review)."""
    p = tmp_path / "nan.json"
    data = _file()
    data["cases"][KEY]["providers"]["triton"]["error"] = 12345.5
    p.write_text(json.dumps(data).replace("12345.5", constant))
    with pytest.raises(BaselineError, match=f"nan.json is corrupt .*{constant} is not"):
        load(p)


def test_a_number_past_a_floats_range_is_corrupt_on_load(tmp_path):
    p = tmp_path / "big.json"
    data = _file()
    data["cases"][KEY]["providers"]["triton"]["error"] = 12345.5
    p.write_text(json.dumps(data).replace("12345.5", "1e400"))
    with pytest.raises(BaselineError, match="big.json is corrupt .*1e400 is past"):
        load(p)


@pytest.mark.parametrize("q", [{"p50": "1"}, {"p50": -1.0}, [1.0], {"p50": None}])
def test_quantiles_are_times(q):
    assert "providers.triton.quantiles_ms is not an object of times" in _corrupt(
        lambda c: c["providers"]["triton"].update(quantiles_ms=q))


@pytest.mark.parametrize("where", ["median_ms", "tflops", "error", "ratio", "noise",
                                   "ratio_runs", "quantiles_ms"])
def test_an_integer_past_a_floats_range_is_corrupt_on_load(tmp_path, where):
    """JSON reads 1 and 400 zeros as an int, not as inf (`_finite` sees floats only):
    math.isfinite raised OverflowError, exit 1 (a review)."""
    p = tmp_path / "big.json"
    data = _file()
    c = data["cases"][KEY]
    big = 10**400
    {"median_ms": lambda: c["providers"]["triton"].update(median_ms=big),
     "tflops": lambda: c["providers"]["triton"].update(tflops=big),
     "error": lambda: c["providers"]["triton"].update(error=big),
     "ratio": lambda: c.update(ratio=big),
     "noise": lambda: c["noise"].update(ratio=big),
     "ratio_runs": lambda: c["noise"]["ratio_runs"].__setitem__(0, big),
     "quantiles_ms": lambda: c["providers"]["triton"]["quantiles_ms"].update(p50=big)}[where]()
    p.write_text(json.dumps(data))
    with pytest.raises(BaselineError, match="big.json is corrupt"):
        load(p)


@pytest.mark.parametrize("version", [True, 1.0, "1"])
def test_a_version_that_only_equals_1_is_not_version_1(version):
    data = _file()
    data["version"] = version
    with pytest.raises(BaselineError, match="schema version"):
        from_json(data)
