"""Chip profiles, detection from the torch device, and explicit override.

Peak rates are the vendors' dense datasheet figures (leads, not measurements); the
measured ceilings live in docs/PERF.md. A chip's `modes` are the precision modes its
matrix units support; gemmgate refuses the others with a clear message.
Selection order: --chip, then $GEMMGATE_CHIP, then the torch device's name; an unknown
GPU runs with a generic profile and a warning; no GPU means the `cpu` profile (Triton
interpreter + CPU BLAS).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace

MiB = 1 << 20


@dataclass(frozen=True)
class Chip:
    id: str
    vendor: str                     # "nvidia", "amd", "cpu", "unknown"
    name: str                       # marketing name
    compute_units: int              # SMs / CUs / cores
    smem_per_block: int             # bytes of shared memory (LDS) a block may use
    llc_bytes: int                  # L2 / last-level cache; sizes the flush buffer
    mem_bw_gbs: float               # datasheet memory bandwidth, GB/s
    peak_tflops: dict[str, float] = field(default_factory=dict, hash=False, compare=False)
    modes: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16")
    match: tuple[str, ...] = ()     # lower-case substrings of the torch device name
    fp8_dtype: str = "float8_e4m3fn"
    # modes known not to run here, each with why: asked for, a usage error that says so
    refused: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    # words of a device name that mark another part of this chip with the same SMs (an
    # H100 NVL: 132 SMs at 350-400 W, dense bf16 835 TFLOP/s against the SXM's 989): its
    # peaks, bandwidth, baseline and tuning table are not this profile's (a review)
    other_parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.vendor not in ("nvidia", "amd", "cpu", "unknown"):
            raise ValueError(f"{self.id}: unknown vendor {self.vendor!r}")
        if min(self.compute_units, self.smem_per_block, self.llc_bytes) < 0:
            raise ValueError(f"{self.id}: negative size")
        stray = set(self.peak_tflops) - set(self.modes)
        if stray:
            raise ValueError(f"{self.id}: peak given for unsupported modes {sorted(stray)}")

    @property
    def flush_bytes(self) -> int:
        """The L2-flush buffer zeroed before each timed call: twice the last-level cache."""
        return 2 * self.llc_bytes

    @property
    def device_type(self) -> str:
        return "cpu" if self.vendor == "cpu" else "cuda"

    def names(self, device_name: str) -> bool:
        """Whether `match` names this device, as a word of its name (as the kernel's tuning
        tables are found): "a100" was found in "RTX A1000", "h200" in "GH200" (a review)."""
        low = device_name.lower()
        return any(re.search(rf"(?<![a-z0-9]){re.escape(m)}(?![0-9])", low)
                   for m in self.match)

    def other_part(self, device_name: str) -> str | None:
        """The word of `other_parts` the device name holds (another part of this chip:
        an H100 NVL, an A100 40GB), or None."""
        low = device_name.lower()
        return next((w for w in self.other_parts
                     if re.search(rf"(?<![a-z0-9]){re.escape(w)}(?![a-z0-9])", low)), None)

    def own_part(self, device_name: str) -> bool:
        """Whether a device of this name is this profile's own part, as a recorded name
        tells (a run's or a baseline's `device_name`): `match` names it and no word of
        `other_parts` is in it; for an AMD profile also an AMD name that names no model
        ("AMD Radeon Graphics": found by its architecture, AMD_ARCHS), not any name that
        names no Instinct model ("NVIDIA H200", "AMD Radeon PRO W7900" run with
        GEMMGATE_CHIP=amd-mi300x were the MI300X's own part: kept and pooled beside its
        cases, where an H200 run as nvidia-h100 is refused; a review)."""
        if self.names(device_name):
            return self.other_part(device_name) is None
        return self.vendor == "amd" and names_no_amd_model(device_name)

    def peak(self, mode: str) -> float | None:
        return self.peak_tflops.get(mode)

    @staticmethod
    def peak_source(mode: str) -> str:
        """Where a mode's peak comes from: the datasheet, or a figure derived from it."""
        return PEAK_SOURCES.get(mode, "datasheet peak")

    def require_mode(self, mode: str) -> None:
        if mode in self.refused:
            raise ValueError(f"{mode} is not supported on {self.id}: {self.refused[mode]}")
        if mode not in self.modes:
            raise ValueError(f"{mode} is not supported on {self.id}")


# Peaks that are no datasheet figure: tf32x3 counts 2*M*N*K useful flops for three passes.
PEAK_SOURCES = {"tf32x3": "tf32's datasheet peak / 3 (three passes)"}

_HOPPER = dict(vendor="nvidia", compute_units=132, smem_per_block=232448, llc_bytes=50 * MiB,
               peak_tflops={"fp32": 66.9, "tf32": 494.7, "tf32x3": 164.9, "bf16": 989.4,
                            "fp16": 989.4, "fp8": 1978.9},
               modes=("fp32", "tf32", "tf32x3", "bf16", "fp16", "fp8"),
               other_parts=("nvl", "pcie"))

CHIPS: dict[str, Chip] = {
    c.id: c
    for c in (
        Chip("nvidia-a100", "nvidia", "NVIDIA A100 SXM4 80GB", 108, 166912, 40 * MiB, 2039.0,
             {"fp32": 19.5, "tf32": 156.0, "tf32x3": 52.0, "bf16": 312.0, "fp16": 312.0},
             modes=("fp32", "tf32", "tf32x3", "bf16", "fp16"), match=("a100",),
             other_parts=("pcie", "40gb")),   # (the 40 GB SXM4: 1555 GB/s, not 2039)
        Chip("nvidia-h100", name="NVIDIA H100 SXM5", mem_bw_gbs=3350.0, match=("h100",),
             **_HOPPER),
        Chip("nvidia-h200", name="NVIDIA H200 SXM", mem_bw_gbs=4800.0, match=("h200",),
             **_HOPPER),
        Chip("amd-mi300x", "amd", "AMD Instinct MI300X", 304, 65536, 256 * MiB, 5300.0,
             {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9},
             modes=("fp32", "tf32", "bf16", "fp16", "fp8"), match=("mi300x",),
             fp8_dtype="float8_e4m3fnuz"),
        # The CPU profile: Triton interpreter against the CPU BLAS. No tf32 or fp8 units;
        # bf16's dot is an interpreter defect (tests/kernels/test_interpreter_defects.py).
        Chip("cpu", "cpu", "CPU (Triton interpreter)", 0, 0, 32 * MiB, 0.0,
             modes=("fp32", "fp16"),
             refused={"bf16": "the Triton interpreter's tl.dot on bf16 inputs returns "
                              "garbage (run bf16 on a GPU)"}),
    )
}

GENERIC_GPU = Chip("generic-gpu", "unknown", "unknown GPU", 0, 49152, 64 * MiB, 0.0)

# AMD GPUs by architecture, where the name does not tell (some ROCm images report an
# MI300X as "AMD Radeon Graphics"; an MI325X is the same compute die): gcnArchName's
# first part -> chip id. A device of another CU count (an MI300A, a partition) gets the
# profile with a warning.
AMD_ARCHS = {"gfx942": "amd-mi300x"}
AMD_CACHE_FLOOR = 256 * MiB   # the L2 ROCm reports (4 MiB) leaves out the Infinity Cache

_INSTINCT = re.compile(r"(?<![a-z0-9])mi\d{3}[a-z]*(?![a-z0-9])")


def instinct_model(device_name: str) -> str | None:
    """The AMD Instinct model a device name names ("mi325x" of "AMD Instinct MI325X"),
    or None ("AMD Radeon Graphics")."""
    found = _INSTINCT.search(device_name.lower())
    return found.group(0) if found else None


def names_no_amd_model(device_name: str) -> bool:
    """Whether a device name is an AMD one that names no model ("AMD Radeon Graphics",
    which some ROCm images report for an MI300X): AMD or Radeon, and no model number
    (an Instinct "MI325X", a Radeon "W7900", another vendor's "H200" all have one)."""
    low = device_name.lower()
    return (re.search(r"(?<![a-z])(amd|radeon)(?![a-z])", low) is not None
            and re.search(r"[0-9]", low) is None)


def other_model(chip_id: str, was: str | None, now: str | None) -> bool:
    """Whether devices named `was` and `now`, both recorded as chip `chip_id`, are other
    GPU models or parts: for the generic profile, any two names (every GPU no profile
    names is that chip); for a named profile, two names of which one is not the
    profile's own part (`Chip.own_part`): an H200 run as nvidia-h100 (--chip or
    GEMMGATE_CHIP, warned of at run time only), an H100 NVL beside an H100 SXM's cases,
    an MI325X (6 TB/s) beside an MI300X's (5.3 TB/s). False where either is unknown."""
    if not was or not now or str(was) == str(now):
        return False
    chip = CHIPS.get(chip_id)
    if chip is None or chip.device_type != "cuda":
        return chip_id == GENERIC_GPU.id
    return not (chip.own_part(str(was)) and chip.own_part(str(now)))


@dataclass(frozen=True)
class Selection:
    chip: Chip
    source: str               # "--chip", "GEMMGATE_CHIP", "detected", "generic", "no GPU"
    device_name: str
    warning: str | None = None
    mismatched: bool = False  # --chip/GEMMGATE_CHIP names a GPU this device is not, or
    # the device matched has other SMs than its profile (an H100 PCIe, a MIG slice)


def get_chip(chip_id: str) -> Chip:
    try:
        return CHIPS[chip_id]
    except KeyError:
        raise ValueError(f"unknown chip id {chip_id!r}; known: {', '.join(CHIPS)}") from None


def match_device_name(device_name: str) -> Chip | None:
    for chip in CHIPS.values():
        if chip.names(device_name):
            return chip
    return None


def select_chip(override: str | None = None, device: int = 0) -> Selection:
    """Pick the chip profile: explicit override, environment, then the torch device.
    `device`: the run's (first) device, whose name and SMs are matched (device 0 was,
    whatever `--devices` said: `--devices 1` on a host of an H100 and an H200 timed the
    H200 as nvidia-h100; a review). A device past torch's count reads device 0's
    (`context.check_devices` refuses it)."""
    import torch

    gpu = torch.cuda.is_available()
    if gpu and not 0 <= device < torch.cuda.device_count():
        device = 0
    device_name = torch.cuda.get_device_name(device) if gpu else "cpu"
    requested, source = override, "--chip"
    if requested is not None and not requested.strip():   # (an unset CI variable: the
        raise ValueError("--chip is empty: give a chip id (gemmgate chips --ids), or "
                         "leave it out to detect the device")   # detected chip was gated)
    if not requested:
        requested, source = os.environ.get("GEMMGATE_CHIP") or None, "GEMMGATE_CHIP"
        if requested is not None and not requested.strip():
            raise ValueError("GEMMGATE_CHIP is blank: give a chip id (gemmgate chips --ids), "
                             "or unset it to detect the device")
    if requested:
        try:
            chip = get_chip(requested)
        except ValueError as e:   # (said without its source: GEMMGATE_CHIP=h100 read as
            raise ValueError(f"{source}: {e}") from None   # if --chip had been given)
        if chip.device_type == "cuda" and not gpu:
            raise ValueError(f"chip {chip.id} was requested ({source}) but no GPU is present")
        mismatched = chip.device_type == "cuda" and not chip.names(device_name) \
            and not _by_arch_is(torch, chip, device_name, device)   # (an MI300X named
        # "AMD Radeon Graphics": GEMMGATE_CHIP=amd-mi300x, set so that such a name is not
        # mis-detected, called it another device and `tune` refused it; a review)
        warning = f"{source} says {chip.id} but the device is {device_name!r}" \
            if mismatched else None
        if chip.device_type == "cuda" and not mismatched:   # named right, sized otherwise
            warning = _other_units(torch, chip, device_name, device)
            mismatched = warning is not None
        return Selection(chip, source, device_name, warning, mismatched)
    if not gpu:
        return Selection(CHIPS["cpu"], "no GPU", device_name)
    chip = match_device_name(device_name)
    if chip is not None:   # an H100 PCIe (114 SMs), a MIG slice: the profile's peaks and
        # tuning table are another card's; `tune` refuses (`mismatched`)
        warning = _other_units(torch, chip, device_name, device)
        return Selection(chip, "detected", device_name, warning, warning is not None)
    if torch.version.hip is not None:
        by_arch = _amd_by_arch(torch, device_name, device)
        if by_arch is not None:
            return by_arch
    return Selection(_generic(torch, device), "generic", device_name,
                     f"unknown GPU {device_name!r}: generic profile, no peak figures")


def _other_units(torch, chip: Chip, device_name: str, device: int = 0) -> str | None:
    """Why `chip`'s profile, which names the device, is another card's: its SMs (compute
    units) differ from the device's, or its name says another part of the chip
    (`other_parts`: an H100 NVL has the SXM's 132 SMs); None where neither."""
    units = device_units(torch, device)
    if units and units != chip.compute_units:
        return (f"{device_name!r} has {units} SMs, the {chip.id} profile "
                f"{chip.compute_units}: its peaks and tuning table are that card's")
    part = chip.other_part(device_name)
    if part is not None:   # same SMs, other clocks and power: the SM count cannot tell
        return (f"{device_name!r} is another part than the {chip.id} profile's "
                f"{chip.name} ({PARTS.get(part, part)}): its peaks, baseline and tuning "
                "table are that card's")
    return None


# what each of `other_parts` differs in (an A100-SXM4-40GB took the 80 GB profile's
# 2039 GB/s silently, its baseline and table; a review)
PARTS = {"nvl": "NVL: other clocks and power", "pcie": "PCIe: other clocks and power",
         "40gb": "40GB: other memory bandwidth"}


def device_units(torch, device: int = 0) -> int:
    """The device's SMs (compute units), 0 where torch cannot say."""
    try:
        return int(getattr(torch.cuda.get_device_properties(device), "multi_processor_count", 0))
    except Exception:  # noqa: BLE001 - a best-effort query (a CPU build asserts)
        return 0


def _arch_of(torch, device: int = 0) -> str:
    props = torch.cuda.get_device_properties(device)
    return str(getattr(props, "gcnArchName", "") or "").split(":")[0]


def _by_arch_is(torch, chip: Chip, device_name: str, device: int = 0) -> bool:
    """Whether an AMD device is `chip` by its architecture (AMD_ARCHS), its name naming
    no other Instinct model."""
    if torch.version.hip is None or instinct_model(device_name):
        return False
    try:
        return AMD_ARCHS.get(_arch_of(torch, device)) == chip.id
    except Exception:  # noqa: BLE001 - a best-effort query
        return False


def _amd_by_arch(torch, device_name: str, device: int = 0) -> Selection | None:
    """An AMD GPU whose name no profile matches, by its architecture (AMD_ARCHS). One of
    other CUs (an MI300A, a partition) or whose name says another model of the same
    die (an MI325X: 6 TB/s of HBM3e against the MI300X's 5.3, 1000 W against 750) gets
    the profile with a warning, marked mismatched: its bandwidth, baseline and tuning
    table are not the profile's (an MI325X took them silently; a review)."""
    props = torch.cuda.get_device_properties(device)
    arch = _arch_of(torch, device)
    if arch not in AMD_ARCHS:
        return None
    chip = CHIPS[AMD_ARCHS[arch]]
    cus = getattr(props, "multi_processor_count", 0)
    model = instinct_model(device_name)
    warning = None
    if cus != chip.compute_units:
        warning = (f"{device_name!r} is {arch} with {cus} compute units: the {chip.id} "
                   f"profile ({chip.compute_units}) is used; its peaks are the full chip's")
    elif model is not None:
        warning = (f"{device_name!r} is {arch}, another part than the {chip.id} profile's "
                   f"{chip.name}: the profile is used; its bandwidth, baseline and tuning "
                   "table are that card's")
    return Selection(chip, "detected", device_name, warning, warning is not None)


def _generic(torch, device: int = 0) -> Chip:
    """A profile read off the device itself: sizes are real, peaks unknown."""
    props = torch.cuda.get_device_properties(device)
    modes = ["fp32", "bf16", "fp16"]
    if torch.version.hip is None and props.major >= 8:   # on AMD, Triton's tf32 needs
        modes.insert(1, "tf32")                          # gfx942 (AMD_ARCHS' profile)
    if torch.version.hip is None and props.major >= 8:
        modes.insert(2, "tf32x3")
    if torch.version.hip is None and (props.major, props.minor) >= (8, 9):
        modes.append("fp8")
    return replace(
        GENERIC_GPU,
        name=props.name,
        vendor="amd" if torch.version.hip else "nvidia",
        compute_units=props.multi_processor_count,
        smem_per_block=getattr(props, "shared_memory_per_block_optin", GENERIC_GPU.smem_per_block),
        llc_bytes=max(getattr(props, "L2_cache_size", 0) or GENERIC_GPU.llc_bytes,
                      AMD_CACHE_FLOOR if torch.version.hip else 0),
        modes=tuple(modes),
    )
