"""gemmgate/env.py: telemetry through a fake NVML (no GPU needed), clock reasons, and the
machine identity the gate uses (environment "host" and "gpus", telemetry "gpu_uuid")."""

import platform
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from gemmgate import env


def test_decode_clock_reasons():
    assert env.decode_clock_reasons(0) == []
    assert env.decode_clock_reasons(0x4 | 0x20) == ["sw_power_cap", "sw_thermal"]


def _fake_nvml(**extra):
    """NVML as far as env.py asks it; `extra` adds or replaces calls."""
    return SimpleNamespace(**{
        "NVML_CLOCK_SM": 0, "NVML_CLOCK_MEM": 1, "NVML_TEMPERATURE_GPU": 0,
        "nvmlDeviceGetClockInfo": lambda h, which: (1980, 3201)[which],
        "nvmlDeviceGetTemperature": lambda h, which: 51,
        "nvmlDeviceGetPowerUsage": lambda h: 612_500,
        "nvmlDeviceGetUUID": lambda h: b"GPU-" + h.encode(),   # bytes in older pynvml
        **extra})


def test_telemetry_reads_clocks_power_and_reasons(monkeypatch):
    nvml = _fake_nvml(nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x4)
    monkeypatch.setattr(env, "_nvml", lambda: nvml)
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: "h")
    assert env.telemetry(0) == {"gpu_uuid": "GPU-h", "sm_clock_mhz": 1980,
                                "mem_clock_mhz": 3201, "temp_c": 51, "power_w": 612.5,
                                "clock_reasons": ["sw_power_cap"]}


def test_telemetry_uses_the_old_nvml_name_and_survives_its_absence(monkeypatch):
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: "h")
    old = _fake_nvml(nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 0x40)
    monkeypatch.setattr(env, "_nvml", lambda: old)
    assert env.telemetry(0)["clock_reasons"] == ["hw_thermal"]
    monkeypatch.setattr(env, "_nvml", lambda: _fake_nvml())
    assert "clock_reasons" not in env.telemetry(0) and env.telemetry(0)["temp_c"] == 51


def test_telemetry_without_nvml_is_empty(monkeypatch):
    monkeypatch.setattr(env, "_nvml", lambda: None)
    assert env.telemetry(0) == {}   # (no GPU here: torch has no device properties)


def test_without_nvml_the_gpu_is_still_told_apart_by_torchs_uuid(monkeypatch):
    """An AMD GPU (no NVML): telemetry was {}, so every GPU of a host was one machine to
    the gate (host/machine id), and a check on another GPU was judged at process level
    against a different GPU's calibration. torch's device properties give the UUID."""
    uuids = {0: "0e1f-aa", 1: "GPU-77b0"}
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda i: SimpleNamespace(uuid=uuids[i]))
    monkeypatch.setattr(env, "_nvml", lambda: None)
    assert env.telemetry(0) == {"gpu_uuid": "GPU-0e1f-aa"}
    assert env.telemetry(1) == {"gpu_uuid": "GPU-77b0"}
    broken = _fake_nvml(nvmlDeviceGetClockInfo=lambda h, which: 1 / 0)
    monkeypatch.setattr(env, "_nvml", lambda: broken)
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: "h")
    assert env.telemetry(1) == {"gpu_uuid": "GPU-77b0"}   # NVML there but failing


def _identity_nvml(**extra):
    return _fake_nvml(**{
        "nvmlSystemGetDriverVersion": lambda: b"580.159.04",
        "nvmlDeviceGetSerial": lambda h: "S-" + h,
        "nvmlDeviceGetEnforcedPowerLimit": lambda h: 700_000,
        "nvmlDeviceGetMaxClockInfo": lambda h, which: 1980, **extra})


def test_gpu_identity_uuid_serial_power_limit_and_clock(monkeypatch):
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: f"d{i}")
    assert env.gpu_identity(_identity_nvml(), 1) == {
        "index": 1, "uuid": "GPU-d1", "serial": "S-d1", "power_limit_w": 700.0,
        "max_sm_clock_mhz": 1980}

    def no(h):
        raise RuntimeError("not supported")
    partial = _identity_nvml(nvmlDeviceGetSerial=no)
    assert env.gpu_identity(partial, 0) == {"index": 0, "uuid": "GPU-d0",
                                            "power_limit_w": 700.0, "max_sm_clock_mhz": 1980}
    assert env.gpu_identity(_identity_nvml(nvmlDeviceGetUUID=no), 0) == {}  # no UUID: none


def test_the_environment_records_the_host_and_each_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    monkeypatch.setattr(env, "_nvml", _identity_nvml)
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: f"d{i}")
    rec = env.environment("nvidia-h200", "graph", 0, (0, 1))
    assert rec["host"] == platform.node() and rec["driver"] == "580.159.04"
    assert [(g["index"], g["uuid"]) for g in rec["gpus"]] == [(0, "GPU-d0"), (1, "GPU-d1")]
    assert [g["uuid"] for g in env.environment("nvidia-h200", "graph", 1)["gpus"]] == [
        "GPU-d1"]                                  # no devices given: the run's device


def test_the_cpu_environment_records_the_host_and_no_gpus():
    rec = env.environment("cpu", "wall")
    assert rec["host"] == platform.node() and "gpus" not in rec


def test_the_machine_id_is_a_hash_of_the_first_id_file_never_the_id(tmp_path):
    first, second = tmp_path / "machine-id", tmp_path / "dbus-id"
    second.write_text("0123456789abcdef0123456789abcdef\n")
    got = env.machine_id((first, second))                 # the first file is missing
    assert got and len(got) == 12 and got not in "0123456789abcdef" * 2
    assert env.machine_id((second,)) == got
    first.write_text("fedcba9876543210fedcba9876543210")
    assert env.machine_id((first, second)) not in (None, got)
    first.write_text("  \n")                              # empty: the next file's
    assert env.machine_id((first, second)) == got
    assert env.machine_id((tmp_path / "none",)) is None


def test_the_environment_records_the_machine_id(monkeypatch):
    monkeypatch.setattr(env, "machine_id", lambda: "c0ffee000000")
    assert env.environment("cpu", "wall")["machine_id"] == "c0ffee000000"


def test_telemetry_without_a_uuid_keeps_the_clocks(monkeypatch):
    def no(h):
        raise RuntimeError("not supported")
    monkeypatch.setattr(env, "_nvml", lambda: _fake_nvml(nvmlDeviceGetUUID=no))
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: "h")
    got = env.telemetry(0)
    assert got.get("sm_clock_mhz") == 1980 and "gpu_uuid" not in got


class _Props:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class _HandleNvml:
    """NVML that answers by UUID, PCI address or index, naming what it was asked."""

    def __init__(self, uuid_ok=True, pci_ok=True):
        self.uuid_ok, self.pci_ok = uuid_ok, pci_ok

    def nvmlDeviceGetHandleByUUID(self, u):
        if not self.uuid_ok:
            raise RuntimeError("no")
        return ("uuid", u)

    def nvmlDeviceGetHandleByPciBusId(self, b):
        if not self.pci_ok:
            raise RuntimeError("no")
        return ("pci", b)

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("index", i)


@pytest.mark.parametrize("uuid_ok, pci_ok, visible, want", [
    (True, True, "1", ("uuid", b"GPU-4c881892-46d6")),
    (False, True, "1", ("pci", b"00000000:19:00.0")),
    (False, False, "1", ("index", 1)),       # CUDA_VISIBLE_DEVICES=1: torch 0 is host GPU 1
    (False, False, "", ("index", 0)),
])
def test_the_nvml_handle_is_torchs_device_not_nvmls_index(monkeypatch, uuid_ok, pci_ok,
                                                           visible, want):
    import torch

    props = _Props(uuid="4c881892-46d6", pci_bus_id=0x19, pci_device_id=0, pci_domain_id=0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert env._nvml_handle(_HandleNvml(uuid_ok, pci_ok), 0) == want


def test_the_tuning_table_record_counts_entries_stale_ones_and_tritons(tmp_path):
    import json

    from gemmgate.env import tuning_table
    from kernels import table_file

    fresh = table_file.variant_hash("tma")
    config = {"block_m": 64, "block_n": 64, "block_k": 64, "group_m": 8, "num_stages": 3,
              "num_warps": 4, "variant": "tma"}
    entry = {"bucket": "16bit bf16 rr tma ld8", "m": 1, "n": 1, "k": 1, "config": config,
             "kernel": fresh}
    (tmp_path / "nvidia-h200.json").write_text(json.dumps({
        "schema": table_file.SCHEMA, "version": table_file.VERSION, "match": ["h200"],
        "borrowed_by": ["h100"],
        "entries": [{**entry, "triton": "3.6.0"}, {**entry, "triton": "3.6.0"},
                    {**entry, "kernel": "0123456789ab", "triton": "3.9.0"}, entry]}))
    table_file.reload()
    try:
        assert tuning_table("NVIDIA H200", tmp_path) == {
            "path": "nvidia-h200.json", "entries": 4, "stale": 1,
            "triton": {"3.6.0": 2, "3.9.0": 1, "?": 1}}
        assert tuning_table("NVIDIA A100", tmp_path) is None
        assert tuning_table("NVIDIA H100 80GB HBM3", tmp_path) == {     # lent: said so
            "path": "nvidia-h200.json", "entries": 4, "stale": 1,
            "triton": {"3.6.0": 2, "3.9.0": 1, "?": 1}, "lent": "nvidia-h200.json"}
        (tmp_path / "nvidia-h100.json").write_text(json.dumps({   # its own, over the lent
            "schema": table_file.SCHEMA, "version": table_file.VERSION, "match": ["h100"],
            "entries": [dict(entry, m=8192, triton="3.6.0")]}))
        table_file.reload()
        assert tuning_table("NVIDIA H100 80GB HBM3", tmp_path) == {
            "path": "nvidia-h100.json", "entries": 5, "stale": 1,
            "triton": {"3.6.0": 3, "3.9.0": 1, "?": 1}, "lent": "nvidia-h200.json"}
    finally:
        table_file.reload()



def test_the_record_says_when_the_tree_is_not_its_commit(tmp_path):
    import shutil
    import subprocess

    from gemmgate.env import git_dirty

    if shutil.which("git") is None:
        import pytest

        pytest.skip("needs git")

    def git(*args):
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                       cwd=tmp_path, check=True, capture_output=True)

    for d in ("gemmgate", "kernels"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "x.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "c")
    assert git_dirty(tmp_path) is False
    (tmp_path / "kernels" / "new.json").write_text("{}")          # untracked: a new table
    assert git_dirty(tmp_path) is True
    git("config", "status.showUntrackedFiles", "no")   # (a common setting: it was clean)
    assert git_dirty(tmp_path) is True
    (tmp_path / "kernels" / "new.json").unlink()
    # an ignored table the lookup globs all the same (kernels/tuned/*.json): dirty; an
    # ignored cache beside it is not (a review: .git/info/exclude hid it, "clean")
    (tmp_path / "kernels" / "tuned").mkdir()
    (tmp_path / ".git" / "info" / "exclude").write_text("kernels/tuned/local*\n*.lock\n")
    (tmp_path / "kernels" / "tuned" / "x.json.lock").write_text("")
    assert git_dirty(tmp_path) is False
    (tmp_path / "kernels" / "tuned" / "local-h100.json").write_text("{}")
    assert git_dirty(tmp_path) is True
    (tmp_path / "kernels" / "tuned" / "local-h100.json").unlink()
    (tmp_path / "gemmgate" / "x.py").write_text("x = 2\n")
    assert git_dirty(tmp_path) is True
    assert git_dirty(tmp_path / "nowhere") is None


def test_a_package_installed_inside_another_repository_records_no_commit(tmp_path,
                                                                         monkeypatch):
    """Installed into another project's ignored virtual environment, git found that
    project: the record named its HEAD, clean (a review). None: not known."""
    import shutil
    import subprocess

    from gemmgate import env

    if shutil.which("git") is None:
        import pytest

        pytest.skip("needs git")
    site = tmp_path / ".venv" / "site-packages" / "gemmgate"
    site.mkdir(parents=True)
    shutil.copy(env.__file__, site / "env.py")
    (tmp_path / ".gitignore").write_text(".venv/\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@example.com", "-c",
                                                 "user.name=t", "commit", "-q", "-m", "c"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    monkeypatch.setattr(env, "__file__", str(site / "env.py"))
    assert env._git_cli() is None and env.git_dirty() is None
    monkeypatch.undo()
    if (Path(env.__file__).resolve().parents[1] / ".git").exists():
        assert env._git_cli() is not None   # this checkout's own package: its HEAD


def test_a_package_untracked_at_the_top_of_another_repository_records_no_commit(
        tmp_path, monkeypatch):
    """An exported tree (no .git of its own) at the top of another project's repository,
    untracked there: git says the package is not tracked, and the fallback for machines
    without git read that project's .git and recorded its HEAD, which holds no gemmgate
    (`--ab-ref baseline` and bisect's GOOD took it; a review). Without git, .git is read."""
    import shutil
    import subprocess

    from gemmgate import env

    if shutil.which("git") is None:
        import pytest

        pytest.skip("needs git")
    (tmp_path / "gemmgate").mkdir()
    shutil.copy(env.__file__, tmp_path / "gemmgate" / "env.py")
    (tmp_path / "README").write_text("their project\n")
    for args in (["init", "-q"], ["add", "README"], ["-c", "user.email=t@example.com", "-c",
                                                     "user.name=t", "commit", "-q", "-m", "c"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    monkeypatch.setattr(env, "__file__", str(tmp_path / "gemmgate" / "env.py"))
    assert env._git_commit() is None and env.git_dirty() is None
    # tracked there, but no git to ask: its .git is read (machines without git)
    subprocess.run(["git", "add", "gemmgate"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit",
                    "-q", "-m", "d"], cwd=tmp_path, check=True, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, check=True,
                          capture_output=True, text=True).stdout.strip()
    env._tracked.cache_clear()
    real_run = subprocess.run

    def no_git(cmd, *a, **k):
        if cmd and cmd[0] == "git":
            raise FileNotFoundError("git")
        return real_run(cmd, *a, **k)

    monkeypatch.setattr(subprocess, "run", no_git)
    assert env._git_commit() == head and env.git_dirty() is None
    env._tracked.cache_clear()


def test_free_memory_is_nvmls_count_of_torchs_device_or_none(monkeypatch):
    """NVML's free bytes of the device torch's index names (`_nvml_handle`); None where
    NVML is absent or cannot give the handle: the caller then asks CUDA."""
    nvml = _fake_nvml(nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(free=7 << 30,
                                                                         total=8 << 30))
    monkeypatch.setattr(env, "_nvml", lambda: nvml)
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: f"d{i}")
    assert env.free_memory(1) == 7 << 30
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: 1 / 0)
    assert env.free_memory(1) is None
    monkeypatch.setattr(env, "_nvml", lambda: None)
    assert env.free_memory(0) is None


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), ("false", False),
                                       ("off", False), ("no", False), ("0", False)])
def test_the_record_reads_triton_interpret_as_triton_does(monkeypatch, value, on):
    """TRITON_INTERPRET=false compiled the kernels (Triton and kernels.dispatch read it
    off), and the record said "interpreter": true (a review)."""
    from gemmgate.env import environment
    from kernels import dispatch

    monkeypatch.setenv("TRITON_INTERPRET", value)
    assert dispatch.interpreting() is on
    assert environment("cpu", "wall")["interpreter"] is on
