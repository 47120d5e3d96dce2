"""gemmgate.baseline_noise: machine ids and the noise levels of per-run medians."""

import pytest

from gemmgate import baseline_noise
from gemmgate.compare import aa_noise, ab_noise
from gemmgate.results import CaseResult
from gemmgate.shapes import Case

C1 = Case(32, 32, 32)


def make_result(gpu: str | None = None) -> CaseResult:
    return CaseResult("fp32", C1, {}, None, {"gpu_uuid": gpu} if gpu else {})


def test_machine_of_is_host_and_gpu_uuid_on_a_gpu_and_the_host_on_the_cpu():
    cpu = make_result()
    gpu = make_result(gpu="GPU-1234")
    assert baseline_noise.machine_of(cpu, {"host": "box"}) == "box"
    assert baseline_noise.machine_of(gpu, {"host": "box"}) == "box/GPU-1234"
    assert baseline_noise.machine_of(cpu, {}) == "unknown-host"      # an environment without host


def test_cpu_machines_of_one_host_name_are_told_apart_by_their_machine_id():
    cpu = make_result()
    gpu = make_result(gpu="GPU-1234")
    assert baseline_noise.machine_of(cpu, {"host": "vm", "machine_id": "a1"}) == "vm/a1"
    assert baseline_noise.machine_of(cpu, {"host": "vm", "machine_id": "b2"}) == "vm/b2"
    assert baseline_noise.machine_of(gpu, {"host": "vm", "machine_id": "a1"}) == "vm/GPU-1234"
    assert baseline_noise.machine_of(cpu, {"host": "vm", "machine_id": None}) == "vm"


def test_level_noise_process_within_a_machine_machine_pooled():
    assert baseline_noise.level_noise([1.0], ["a"]) == (None, None)          # one run: nothing
    assert baseline_noise.level_noise([1.0, 1.1], ["a", "b"]) == (None, aa_noise([1.0, 1.1]))
    p, m = baseline_noise.level_noise([1.0, 1.02, 0.99], ["a"] * 3)
    assert p == aa_noise([1.0, 1.02, 0.99]) and m is None               # one machine
    vals = [1.0, 1.01, 1.05, 1.06]
    p, m = baseline_noise.level_noise(vals, ["a", "a", "b", "b"])
    assert p == max(aa_noise([1.0, 1.01]), aa_noise([1.05, 1.06]))
    assert m == aa_noise(vals) and m >= p
    # the pooled spread can be below a machine's own: machine-level never narrower
    vals, machines = [1.0, 1.0, 1.3, 1.3, 1.3], ["a", "a", "a", "b", "b"]
    assert aa_noise(vals) < aa_noise(vals[:3])
    p, m = baseline_noise.level_noise(vals, machines)
    assert m == p == aa_noise(vals[:3])


def test_runs_behind_a_noise_figure():
    """The runs a stored figure was estimated from: process, the runs of the machine whose
    spread it is; machine, the machines pooled; A/B, its runs; 0 where the runs stored
    beside it do not give it (a figure carried over from a calibration no longer listed)."""
    vals, machines = [1.0, 1.02, 0.99, 1.0, 1.05], ["a", "a", "a", "b", "b"]
    process, machine = baseline_noise.level_noise(vals, machines)
    assert process == aa_noise([1.0, 1.05])                       # b's spread is the larger
    assert baseline_noise.runs_behind(process, vals, machines, "process") == 2
    assert baseline_noise.runs_behind(aa_noise(vals[:3]), vals, machines, "process") == 3
    assert baseline_noise.runs_behind(machine, vals, machines, "machine") == 2   # two machines
    assert baseline_noise.runs_behind(0.07, vals, machines, "process") == 0      # carried
    assert baseline_noise.runs_behind(None, vals, machines, "process") == 0
    ab = [1.0, 1.01, 0.995]
    assert baseline_noise.runs_behind(ab_noise(ab), ab, (), "ab") == 3
    assert baseline_noise.runs_behind(0.05, ab, (), "ab") == 0


@pytest.mark.parametrize("outlier", [1.019, 1.04])
def test_a_machine_figure_a_machine_s_own_spread_floors_counts_the_machines(outlier):
    """Two GPUs, one with an outlier run: where its own spread (the larger one, 4%) is
    the machine figure, the runs behind it are still the two machines, as where the
    pooled spread (1.9%) is: its 5 runs gave x2.5, a 10% machine-level tolerance, where
    the smaller noise had x48.2, 92% (a review)."""
    from gemmgate.compare import noise_factor, tolerance

    vals = [1.0, 1.0, 1.0, 1.0, outlier] + [1.02] * 5
    machines = ["a"] * 5 + ["b"] * 5
    n = baseline_noise.from_runs(vals, machines, [], [], [], 10)
    assert n.machine >= n.ratio
    assert baseline_noise.behind(n, "machine") == 2
    assert tolerance(n.machine, 0.015, noise_factor(2)) > 0.9
