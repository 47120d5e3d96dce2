"""gemmgate/env.py: telemetry through a fake NVML (no GPU needed) and clock reasons."""

from types import SimpleNamespace

from gemmgate import env


def test_decode_clock_reasons():
    assert env.decode_clock_reasons(0) == []
    assert env.decode_clock_reasons(0x4 | 0x20) == ["sw_power_cap", "sw_thermal"]


def _fake_nvml(**extra):
    return SimpleNamespace(
        NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1, NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetClockInfo=lambda h, which: (1980, 3201)[which],
        nvmlDeviceGetTemperature=lambda h, which: 51,
        nvmlDeviceGetPowerUsage=lambda h: 612_500, **extra)


def test_telemetry_reads_clocks_power_and_reasons(monkeypatch):
    nvml = _fake_nvml(nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x4)
    monkeypatch.setattr(env, "_nvml", lambda: nvml)
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: "h")
    assert env.telemetry(0) == {"sm_clock_mhz": 1980, "mem_clock_mhz": 3201, "temp_c": 51,
                                "power_w": 612.5, "clock_reasons": ["sw_power_cap"]}


def test_telemetry_uses_the_old_nvml_name_and_survives_its_absence(monkeypatch):
    monkeypatch.setattr(env, "_nvml_handle", lambda n, i: "h")
    old = _fake_nvml(nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 0x40)
    monkeypatch.setattr(env, "_nvml", lambda: old)
    assert env.telemetry(0)["clock_reasons"] == ["hw_thermal"]
    monkeypatch.setattr(env, "_nvml", lambda: _fake_nvml())
    assert "clock_reasons" not in env.telemetry(0) and env.telemetry(0)["temp_c"] == 51


def test_telemetry_without_nvml_is_empty(monkeypatch):
    monkeypatch.setattr(env, "_nvml", lambda: None)
    assert env.telemetry(0) == {}
