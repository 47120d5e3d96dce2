"""scripts/runner/wait_gpu_idle.py: the pure polling logic, without any GPU."""

from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "scripts" / "runner" / "wait_gpu_idle.py"


@pytest.fixture(scope="module")
def wgi(load_script):
    return load_script(_PATH)


@pytest.mark.parametrize(
    ("samples", "settle", "expected"),
    [
        ([], 1, False),  # no sample yet
        ([0.0], 1, True),
        ([0.0, 0.0], 3, False),  # not settled long enough
        ([0.0, 0.0, 0.0], 3, True),
        ([90.0, 0.0, 1.0, 4.9], 3, True),  # only the last `settle` samples count
        ([0.0, 0.0, 7.0, 0.0], 3, False),  # a spike inside the window
        ([0.0, 0.0, 5.0], 3, False),  # the bound is strict: 5 % is not below 5 %
    ],
)
def test_is_idle(wgi, samples, settle, expected):
    assert wgi.is_idle(samples, 5.0, settle) is expected


def test_is_idle_rejects_empty_window(wgi):
    with pytest.raises(ValueError, match="settle_samples"):
        wgi.is_idle([0.0], 5.0, 0)


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, dt):
        self.t += dt


def test_wait_idle_settles_after_busy_phase(wgi):
    clock = FakeClock()
    readings = iter([[80.0], [60.0, 3.0], [2.0], [1.0], [0.0]])
    idle, last = wgi.wait_idle(
        lambda: next(readings),
        max_util=5.0,
        settle_samples=3,
        interval=1.0,
        timeout=60.0,
        clock=clock,
        sleep=clock.sleep,
    )
    assert idle and last == [2.0, 1.0, 0.0]  # busiest GPU of each sample counts
    assert clock.t == 4.0


def test_wait_idle_times_out_when_busy(wgi):
    clock = FakeClock()
    idle, last = wgi.wait_idle(
        lambda: [50.0],
        max_util=5.0,
        settle_samples=2,
        interval=1.0,
        timeout=10.0,
        clock=clock,
        sleep=clock.sleep,
    )
    assert not idle and last == [50.0, 50.0]
    assert clock.t == 10.0


def test_parse_rocm_smi(wgi):
    text = (
        '{"card0": {"GPU use (%)": "3"}, "card1": {"GPU use (%)": "97"},'
        ' "card2": {"GPU use (%)": "N/A"}, "system": {"Driver version": "6.8"}}'
    )
    assert wgi.parse_rocm_smi(text) == [3.0, 97.0]
    assert wgi.parse_rocm_smi(text, {0}) == [3.0]     # another job's busy card1 ignored


@pytest.mark.parametrize(("env", "want"), [
    ({}, None), ({"HIP_VISIBLE_DEVICES": "2,3"}, {2, 3}),
    ({"ROCR_VISIBLE_DEVICES": "1", "CUDA_VISIBLE_DEVICES": "0"}, {1}),
    ({"CUDA_VISIBLE_DEVICES": "0"}, {0}), ({"ROCR_VISIBLE_DEVICES": "GPU-abc"}, None)])
def test_rocm_visible_cards(wgi, monkeypatch, env, want):
    for name in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert wgi.rocm_visible() == want


def test_a_rocm_smi_failure_while_polling_stops_the_wait(wgi, monkeypatch, capsys):
    """It raised CalledProcessError out of the wait (a red job step)."""
    import subprocess

    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        if len(calls) > 1:
            raise subprocess.CalledProcessError(1, cmd)
        return subprocess.CompletedProcess(cmd, 0, '{"card0": {"GPU use (%)": "50"}}', "")

    monkeypatch.setattr(wgi.shutil, "which", lambda name: "/opt/rocm/bin/rocm-smi")
    monkeypatch.setattr(wgi.subprocess, "run", run)
    read = wgi._rocm_reader()
    assert read is not None and read() == [] and "rocm-smi failed" in capsys.readouterr().err


def test_main_without_gpu_tooling(wgi, monkeypatch, capsys):
    monkeypatch.setattr(wgi, "_find_reader", lambda: None)
    assert wgi.main([]) == 0
    assert "no GPU tooling" in capsys.readouterr().out


def test_main_usage_error(wgi):
    with pytest.raises(SystemExit) as e:
        wgi.main(["--max-util", "0"])
    assert e.value.code == 2


def test_main_busy_gpu_exits_1(wgi, monkeypatch, capsys):
    monkeypatch.setattr(wgi, "_find_reader", lambda: ("fake", lambda: [99.0]))
    assert wgi.main(["--timeout", "0", "--settle", "1"]) == 1
    assert "still busy" in capsys.readouterr().err
