"""gemmgate/chips.py: the chip table, lookup, and selection (override, env, detection)."""

import re
from types import SimpleNamespace

import pytest
import torch

from gemmgate import chips
from gemmgate.chips import CHIPS, Chip, get_chip, match_device_name, select_chip
from gemmgate.precision import MODE_NAMES

IDS = ("nvidia-a100", "nvidia-h100", "nvidia-h200", "amd-mi300x", "cpu")


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("GEMMGATE_CHIP", raising=False)


@pytest.fixture
def fake_gpu(monkeypatch, no_env):
    """Pretend torch sees one CUDA device; returns a setter for its name/properties (its
    SMs: `sms`, else those of the profile its name matches, else 100)."""
    def install(name: str, major: int = 9, minor: int = 0, sms: int | None = None):
        known = match_device_name(name)
        props = SimpleNamespace(name=name, major=major, minor=minor,
                                multi_processor_count=sms or (known.compute_units if known
                                                              else 100),
                                shared_memory_per_block_optin=100000, L2_cache_size=1 << 25)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: name)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i=0: props)
        monkeypatch.setattr(torch.version, "hip", None)
    return install


# --- the table ---------------------------------------------------------------------------

def test_all_chip_ids_present():
    assert set(CHIPS) == set(IDS)
    assert all(CHIPS[i].id == i for i in CHIPS)


@pytest.mark.parametrize("chip_id", IDS)
def test_chip_invariants(chip_id):
    c = CHIPS[chip_id]
    assert set(c.modes) <= set(MODE_NAMES)
    assert "fp32" in c.modes
    assert set(c.peak_tflops) <= set(c.modes)      # peaks only for supported modes
    assert all(v > 0 for v in c.peak_tflops.values())
    assert c.llc_bytes > 0
    assert c.device_type == ("cpu" if chip_id == "cpu" else "cuda")
    for mode in c.modes:
        c.require_mode(mode)
        assert c.peak(mode) == c.peak_tflops.get(mode)


@pytest.mark.parametrize("chip_id", IDS[:4])
def test_gpu_chips_have_sizes_peaks_and_names(chip_id):
    c = CHIPS[chip_id]
    assert c.compute_units > 0 and c.smem_per_block > 0 and c.mem_bw_gbs > 0
    assert set(c.peak_tflops) == set(c.modes)
    assert c.match and all(m == m.lower() for m in c.match)
    # Faster precisions have higher peaks.
    assert c.peak("fp32") < c.peak("tf32") < c.peak("bf16") == c.peak("fp16")


def test_cpu_profile():
    cpu = CHIPS["cpu"]
    assert cpu.vendor == "cpu"
    assert "tf32" not in cpu.modes and "fp8" not in cpu.modes
    assert cpu.peak("fp32") is None and cpu.match == ()


def test_fp8_dtypes():
    assert CHIPS["amd-mi300x"].fp8_dtype == "float8_e4m3fnuz"
    assert CHIPS["nvidia-h200"].fp8_dtype == "float8_e4m3fn"
    assert "fp8" in CHIPS["nvidia-h100"].modes and "fp8" not in CHIPS["nvidia-a100"].modes


def test_require_mode_unsupported():
    with pytest.raises(ValueError, match="fp8 is not supported on cpu"):
        CHIPS["cpu"].require_mode("fp8")
    with pytest.raises(ValueError, match="tf32 is not supported on cpu"):
        CHIPS["cpu"].require_mode("tf32")
    # bf16 runs on the GPUs, not the interpreter: refused with why, and listed apart
    with pytest.raises(ValueError, match="bf16 is not supported on cpu: the Triton "
                                         "interpreter's tl.dot on bf16 inputs returns garbage"):
        CHIPS["cpu"].require_mode("bf16")
    assert "bf16" not in CHIPS["cpu"].modes and "bf16" in CHIPS["cpu"].refused


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(vendor="intel"), "unknown vendor"),
    (dict(compute_units=-1), "negative size"),
    (dict(peak_tflops={"fp8": 1.0}), "unsupported modes"),
])
def test_chip_validation(kwargs, match):
    base = dict(id="x", vendor="nvidia", name="X", compute_units=1, smem_per_block=1,
                llc_bytes=1, mem_bw_gbs=1.0)
    Chip(**base)
    with pytest.raises(ValueError, match=match):
        Chip(**{**base, **kwargs})


# --- lookup --------------------------------------------------------------------------------

def test_get_chip():
    assert get_chip("nvidia-h200") is CHIPS["nvidia-h200"]


def test_get_chip_unknown_lists_known_ids():
    with pytest.raises(ValueError, match="unknown chip id 'nvidia-b200'") as e:
        get_chip("nvidia-b200")
    for chip_id in IDS:
        assert chip_id in str(e.value)


@pytest.mark.parametrize(("device_name", "chip_id"), [
    ("NVIDIA H200", "nvidia-h200"),
    ("NVIDIA H100 80GB HBM3", "nvidia-h100"),
    ("NVIDIA A100-SXM4-80GB", "nvidia-a100"),
    ("AMD Instinct MI300X", "amd-mi300x"),
])
def test_match_device_name(device_name, chip_id):
    assert match_device_name(device_name).id == chip_id


@pytest.mark.parametrize("device_name", ["Foo GPU 9000", "NVIDIA GeForce RTX 4090", "cpu", ""])
def test_match_device_name_unknown(device_name):
    assert match_device_name(device_name) is None


# --- select_chip, without a GPU (this machine) ----------------------------------------------

@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_select_default_without_gpu_is_cpu(no_gpu, no_env):
    sel = select_chip()
    assert sel.chip is CHIPS["cpu"]
    assert sel.source == "no GPU" and sel.device_name == "cpu" and sel.warning is None


def test_select_from_env(no_gpu, monkeypatch):
    monkeypatch.setenv("GEMMGATE_CHIP", "cpu")
    sel = select_chip()
    assert sel.chip.id == "cpu" and sel.source == "GEMMGATE_CHIP" and sel.warning is None


def test_select_override_beats_env(no_gpu, monkeypatch):
    monkeypatch.setenv("GEMMGATE_CHIP", "nvidia-h200")
    sel = select_chip("cpu")
    assert sel.chip.id == "cpu" and sel.source == "--chip"


def test_select_gpu_override_without_gpu(no_gpu, no_env):
    with pytest.raises(ValueError, match="no GPU"):
        select_chip("nvidia-h200")


def test_select_gpu_env_without_gpu(no_gpu, monkeypatch):
    monkeypatch.setenv("GEMMGATE_CHIP", "amd-mi300x")
    with pytest.raises(ValueError, match=r"amd-mi300x.*GEMMGATE_CHIP.*no GPU"):
        select_chip()


@pytest.mark.parametrize("via_env", [False, True])
def test_select_unknown_id(no_gpu, monkeypatch, via_env):
    if via_env:
        monkeypatch.setenv("GEMMGATE_CHIP", "tpu-v5")
    else:
        monkeypatch.delenv("GEMMGATE_CHIP", raising=False)
    with pytest.raises(ValueError, match="unknown chip id 'tpu-v5'"):
        select_chip(None if via_env else "tpu-v5")


# --- select_chip with a (faked) GPU ------------------------------------------------------------

def test_select_detects_known_gpu(fake_gpu):
    fake_gpu("NVIDIA H200")
    sel = select_chip()
    assert sel.chip is CHIPS["nvidia-h200"]
    assert sel.source == "detected" and sel.device_name == "NVIDIA H200" and sel.warning is None


@pytest.mark.parametrize("name, chip", [
    ("NVIDIA RTX A1000 Laptop GPU", None), ("NVIDIA GH200 480GB", None),
    ("NVIDIA A100-SXM4-80GB", "nvidia-a100"), ("NVIDIA H100 80GB HBM3", "nvidia-h100"),
    ("NVIDIA H200 NVL", "nvidia-h200"), ("AMD Instinct MI300X VF", "amd-mi300x")])
def test_a_profile_names_a_device_by_a_word_of_its_name(name, chip):
    """"a100" was found in "RTX A1000" and "h200" in "GH200": their results and baselines
    went to another card's profile (a review)."""
    got = match_device_name(name)
    assert (got.id if got else None) == chip


@pytest.mark.parametrize("name, sms", [("NVIDIA H100 PCIe", 114),
                                       ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", 16)])
def test_a_device_with_other_sms_than_its_profile_is_said_and_kept_from_tune(fake_gpu,
                                                                             name, sms):
    fake_gpu(name, sms=sms)
    for sel in (select_chip(), select_chip("nvidia-h100")):   # --chip too (a review)
        assert sel.chip.id == "nvidia-h100" and sel.mismatched
        assert f"has {sms} SMs, the nvidia-h100 profile 132" in sel.warning
    assert not select_chip("nvidia-h200").warning.startswith(repr(name) + " has")


@pytest.mark.parametrize("name, chip", [
    ("NVIDIA H100 NVL", "nvidia-h100"), ("NVIDIA H200 NVL", "nvidia-h200"),
    ("NVIDIA A100-PCIE-40GB", "nvidia-a100"), ("NVIDIA A100 80GB PCIe", "nvidia-a100"),
    ("NVIDIA A100-SXM4-40GB", "nvidia-a100")])
def test_another_part_with_the_profiles_sms_is_said_and_kept_from_tune(fake_gpu, name,
                                                                      chip):
    """An H100 NVL or H200 NVL has the SXM part's 132 SMs but 350-600 W and a dense bf16
    peak of 835 TFLOP/s, not 989: it took the SXM profile silently, its peaks, baseline
    and tuning table (`tune` wrote into the SXM's table; a review)."""
    fake_gpu(name)   # the profile's own SM count
    for sel in (select_chip(), select_chip(chip)):
        assert sel.chip.id == chip and sel.mismatched
        assert repr(name) in sel.warning and "another part" in sel.warning
    for same in ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"):
        fake_gpu(same)
        assert select_chip().warning is None and not select_chip().mismatched


def test_select_override_disagreeing_with_device_warns(fake_gpu):
    fake_gpu("NVIDIA H100 80GB HBM3")
    sel = select_chip("nvidia-h200")
    assert sel.chip.id == "nvidia-h200" and sel.source == "--chip"
    assert "nvidia-h200" in sel.warning and "NVIDIA H100 80GB HBM3" in sel.warning
    assert sel.mismatched and not select_chip("nvidia-h100").mismatched


def test_select_unknown_gpu_gets_generic_profile(fake_gpu):
    fake_gpu("Foo GPU 9000")
    sel = select_chip()
    assert sel.source == "generic" and sel.device_name == "Foo GPU 9000"
    assert sel.warning and "Foo GPU 9000" in sel.warning
    c = sel.chip
    assert c.id == chips.GENERIC_GPU.id and c.name == "Foo GPU 9000"
    assert c.vendor == "nvidia" and c.device_type == "cuda"
    assert c.compute_units == 100
    assert c.smem_per_block == 100000 and c.llc_bytes == 1 << 25
    assert c.modes == ("fp32", "tf32", "tf32x3", "bf16", "fp16", "fp8")
    assert c.peak_tflops == {}


@pytest.mark.parametrize("cus", [304, 228])
def test_an_amd_gpu_is_known_by_its_architecture_where_its_name_says_nothing(
        fake_gpu, monkeypatch, cus):
    """Some ROCm images name an MI300X "AMD Radeon Graphics": it fell to the generic
    profile (no fp8, no peaks, a flush of twice the 4 MiB L2 ROCm reports against a
    256 MiB Infinity Cache). gfx942 is the MI300X profile; another CU count warns."""
    fake_gpu("AMD Radeon Graphics")
    props = torch.cuda.get_device_properties(0)
    props.gcnArchName, props.multi_processor_count = "gfx942:sramecc+:xnack-", cus
    monkeypatch.setattr(torch.version, "hip", "6.2.41133")
    sel = select_chip()
    assert (sel.chip.id, sel.source) == ("amd-mi300x", "detected")
    assert (sel.warning is None) == (cus == 304)
    assert sel.chip.flush_bytes >= 2 * 256 * 2**20


def test_an_unknown_amd_gpu_gets_no_tf32_and_a_flush_past_its_infinity_cache(
        fake_gpu, monkeypatch):
    """Triton's tf32 on AMD needs gfx942: an MI250 offered it and failed every tf32 case
    (exit 1, read as a regression); ROCm's L2 figure leaves out the Infinity Cache."""
    fake_gpu("AMD Instinct MI250X")
    props = torch.cuda.get_device_properties(0)
    props.gcnArchName, props.L2_cache_size = "gfx90a:sramecc+:xnack-", 8 << 20
    monkeypatch.setattr(torch.version, "hip", "6.2.41133")
    c = select_chip().chip
    assert c.id == "generic-gpu" and c.vendor == "amd"
    assert c.modes == ("fp32", "bf16", "fp16")
    assert c.llc_bytes == chips.AMD_CACHE_FLOOR


def test_generic_profile_of_an_older_gpu(fake_gpu):
    fake_gpu("Foo GPU 8000", major=8, minor=0)          # Ampere: tf32, but fp8 needs sm_89
    c = select_chip().chip
    assert c.modes == ("fp32", "tf32", "tf32x3", "bf16", "fp16")


def test_a_derived_peak_is_not_called_a_datasheet_figure():
    """tf32x3's peak is tf32's / 3 (three passes, 2*M*N*K flops counted): the report says so."""
    for chip in CHIPS.values():
        if "tf32x3" in chip.peak_tflops:
            assert chip.peak("tf32x3") == pytest.approx(chip.peak("tf32") / 3, rel=2e-3)
    assert Chip.peak_source("tf32x3") == "tf32's datasheet peak / 3 (three passes)"
    assert Chip.peak_source("bf16") == "datasheet peak"



@pytest.mark.parametrize("value, said", [("h100", "GEMMGATE_CHIP: unknown chip id 'h100'"),
                                         (" ", "GEMMGATE_CHIP is blank")])
def test_a_bad_gemmgate_chip_names_the_variable(monkeypatch, value, said):
    """Said as if --chip had been given, which the user had not (a review)."""
    monkeypatch.setenv("GEMMGATE_CHIP", value)
    with pytest.raises(ValueError, match=re.escape(said)):
        select_chip(None)


def _gfx942(fake_gpu, monkeypatch, name, cus=304, arch="gfx942:sramecc+:xnack-"):
    fake_gpu(name)
    props = torch.cuda.get_device_properties(0)
    props.gcnArchName, props.multi_processor_count = arch, cus
    monkeypatch.setattr(torch.version, "hip", "6.2.41133")


@pytest.mark.parametrize("via_env", [False, True])
def test_an_mi300x_named_by_its_architecture_is_no_mismatch_when_named(
        fake_gpu, monkeypatch, via_env):
    """GEMMGATE_CHIP=amd-mi300x (the runner's .env, so that an unusual device name is
    never mis-detected) on an MI300X that ROCm calls "AMD Radeon Graphics": detected, it
    is the MI300X profile; named, it was "GEMMGATE_CHIP says amd-mi300x but the device
    is 'AMD Radeon Graphics'", marked mismatched, on every run (a review)."""
    _gfx942(fake_gpu, monkeypatch, "AMD Radeon Graphics")
    if via_env:
        monkeypatch.setenv("GEMMGATE_CHIP", "amd-mi300x")
    sel = select_chip(None if via_env else "amd-mi300x")
    assert sel.chip.id == "amd-mi300x" and sel.warning is None and not sel.mismatched
    _gfx942(fake_gpu, monkeypatch, "AMD Radeon Graphics", arch="gfx90a:sramecc+:xnack-")
    assert select_chip("amd-mi300x").mismatched          # an MI250 is not one


@pytest.mark.parametrize("name, cus", [("AMD Instinct MI325X", 304),
                                       ("AMD Instinct MI300A", 228)])
def test_another_part_of_the_mi300x_die_is_said_and_marked(fake_gpu, monkeypatch, name, cus):
    """An MI325X is gfx942 with the MI300X's 304 CUs but 6 TB/s of HBM3e (5.3) and
    1000 W (750): it took the MI300X profile, its bandwidth, baseline and tuning table,
    without a word (as an H200 would take an H100's); an MI300A was warned of but not
    marked mismatched, as a named device of other SMs is (a review)."""
    _gfx942(fake_gpu, monkeypatch, name, cus)
    for sel in (select_chip(), select_chip("amd-mi300x")):
        assert sel.chip.id == "amd-mi300x" and sel.mismatched
        assert repr(name) in sel.warning


@pytest.mark.parametrize("chip, was, now, other", [
    ("nvidia-h100", "NVIDIA H100 80GB HBM3", "NVIDIA H200", True),
    ("nvidia-h100", "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", True),
    ("nvidia-h100", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", False),
    ("nvidia-a100", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", True),
    ("amd-mi300x", "AMD Instinct MI300X", "AMD Radeon Graphics", False),
    ("amd-mi300x", "AMD Instinct MI300X", "AMD Instinct MI325X", True),
    # another vendor's GPU or a Radeon model run as amd-mi300x (GEMMGATE_CHIP set wrong):
    # they were its own part, kept and pooled beside its cases (a review)
    ("amd-mi300x", "AMD Instinct MI300X", "NVIDIA H200", True),
    ("amd-mi300x", "AMD Instinct MI300X", "AMD Radeon PRO W7900", True),
    ("amd-mi300x", "AMD Radeon Graphics", "NVIDIA TITAN RTX", True),
    ("amd-mi300x", "AMD Radeon Graphics", "AMD Instinct MI300X VF", False),
    ("generic-gpu", "Tesla V100-SXM2-16GB", "NVIDIA RTX 6000 Ada Generation", True),
    ("cpu", "x86_64", "cpu", False),
    ("nvidia-h100", None, "NVIDIA H200", False)])
def test_other_model_of_a_named_chip(chip, was, now, other):
    """A named chip's cases from another GPU (an H200 run with GEMMGATE_CHIP=nvidia-h100)
    were pooled, kept and judged as its own: only the generic profile's were told apart
    (a review)."""
    assert chips.other_model(chip, was, now) is other
