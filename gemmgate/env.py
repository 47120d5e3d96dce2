"""The environment record every run carries, and per-case GPU telemetry (pynvml).

pynvml (package nvidia-ml-py) is optional: without it, or on AMD/CPU, telemetry is {}.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import subprocess
from collections import Counter
from pathlib import Path


def _git_commit() -> str | None:
    """HEAD's commit: from git, else read from .git directly (machines without git: only
    where git could not run; where git says this package is not tracked, the .git beside
    it is another project's, whose HEAD holds no gemmgate: an exported tree copied to the
    top of another repository recorded that repository's HEAD, a review)."""
    found = _git_cli()
    if found or _tracked(Path(__file__).resolve().parent) is not None:
        return found
    return _git_files(Path(__file__).resolve().parent.parent / ".git")


def _git_files(git: Path) -> str | None:
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head or None
        ref = head[5:]
        if (git / ref).exists():
            return (git / ref).read_text().strip()
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        pass
    return None


def _git_cli() -> str | None:
    if not _tracked(Path(__file__).resolve().parent):
        return None
    try:
        out = subprocess.run(["git", "-c", "safe.directory=*", "rev-parse", "HEAD"],
                             capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@functools.cache   # (asked for the commit and for the dirty flag: once a folder)
def _tracked(package: Path) -> bool | None:
    """Whether this package (its folder) is tracked by the git repository around it:
    installed into another project's (ignored) virtual environment, git found that
    project and the record named its HEAD, clean (a review). None where git could not
    run (no git on the machine): `_git_commit` then reads .git itself."""
    try:
        out = subprocess.run(["git", "-c", "safe.directory=*", "ls-files", "--error-unmatch",
                              Path(__file__).name], capture_output=True, cwd=package,
                             timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.returncode == 0


def git_dirty(root: Path | None = None) -> bool | None:
    """Whether the tree's gemmgate/ or kernels/ differs from HEAD (tracked files changed,
    or untracked ones, e.g. a new tuning table): the record's commit is then not what
    ran. None where git cannot say. `root`: this checkout's."""
    if root is None and not _tracked(Path(__file__).resolve().parent):
        return None
    root = root or Path(__file__).resolve().parent.parent
    try:
        subprocess.run(["git", "-c", "safe.directory=*", "update-index", "-q", "--refresh"],
                       cwd=root, capture_output=True, timeout=30)   # stale stat data
        out = subprocess.run(["git", "-c", "safe.directory=*", "status", "--porcelain",
                              "--untracked-files=normal", "--", "gemmgate", "kernels"],
                             capture_output=True, text=True, cwd=root, timeout=30)
        # (--untracked-files: under status.showUntrackedFiles=no a new table was clean)
        hidden = ignored_tables(root, 30)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return bool(out.stdout.strip()) or bool(hidden)


def ignored_tables(root: Path, timeout: float) -> list[str] | None:
    """The tuning tables git ignores that the lookup reads all the same (it globs
    kernels/tuned/*.json): one kept out by .git/info/exclude or a global excludesFile made
    a tree "clean" (`git_dirty`) and an A/B's kernels "the same" (reference.py) while it
    picked the tiles (a review). None where git could not list them; OSError or
    SubprocessError where git could not run."""
    out = subprocess.run(["git", "-c", "safe.directory=*", "ls-files", "--others",
                          "--ignored", "--exclude-standard", "--", "kernels/tuned/*.json"],
                         capture_output=True, text=True, cwd=root, timeout=timeout)
    return out.stdout.split() if out.returncode == 0 else None


def _nvml():
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # no library, no driver, not NVIDIA: telemetry is optional
        return None


def _nvml_handle(nvml, device_index: int):
    """The NVML handle of torch's device `device_index`. NVML numbers every GPU of the
    host and ignores CUDA_VISIBLE_DEVICES, so torch's index is not NVML's: match the GPU
    by its UUID, else its PCI address, else map the index through CUDA_VISIBLE_DEVICES.
    (H200, 2026-11-30: with CUDA_VISIBLE_DEVICES=1 the old lookup, by a PCI bus id torch
    gives as an int, fell back to NVML index 0 and reported the other GPU.)"""
    import torch

    props = torch.cuda.get_device_properties(device_index)
    uuid = _uuid_of(props)
    if uuid:
        try:
            return nvml.nvmlDeviceGetHandleByUUID(uuid.encode())
        except Exception:
            pass
    bus, dev = getattr(props, "pci_bus_id", None), getattr(props, "pci_device_id", None)
    if isinstance(bus, int) and isinstance(dev, int):
        domain = getattr(props, "pci_domain_id", 0) or 0
        try:
            return nvml.nvmlDeviceGetHandleByPciBusId(
                f"{domain:08x}:{bus:02x}:{dev:02x}.0".encode())
        except Exception:
            pass
    return nvml.nvmlDeviceGetHandleByIndex(_physical_index(device_index))


MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))


def machine_id(files: tuple[Path, ...] = MACHINE_ID_FILES) -> str | None:
    """This machine's id, for telling CPU machines apart where every VM has one host name
    ("vm"): a 12-digit hash of the systemd/D-Bus machine id, never the id itself (systemd
    asks that it not be exposed); None where no file holds one. A VM cloned with its
    image's id shares it: such machines still count as one, as they did by host name."""
    import hashlib

    for f in files:
        try:
            raw = f.read_text().strip()
        except OSError:
            continue
        if raw:
            return hashlib.sha256(b"gemmgate-machine:" + raw.encode()).hexdigest()[:12]
    return None


def _physical_index(device_index: int) -> int:
    """torch's device index as the host's GPU index, through CUDA_VISIBLE_DEVICES."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
    if device_index < len(visible) and visible[device_index].isdigit():
        return int(visible[device_index])
    return device_index


def environment(chip_id: str, timing: str, device_index: int = 0,
                devices: tuple[int, ...] = ()) -> dict:
    import torch
    import triton

    gpu = torch.cuda.is_available() and chip_id != "cpu"
    rec = {
        "chip": chip_id,
        "device_name": torch.cuda.get_device_name(device_index) if gpu else platform.processor()
        or platform.machine(),
        "timing": timing,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "hip": torch.version.hip,
        "driver": None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "interpreter": _interpreting(triton),
        "commit": _git_commit(),
        "dirty": git_dirty(),
        "host": platform.node(),
        "machine_id": machine_id(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    nvml = _nvml() if gpu else None
    if nvml is not None:
        try:
            drv = nvml.nvmlSystemGetDriverVersion()
            rec["driver"] = drv.decode() if isinstance(drv, bytes) else drv
        except Exception:
            pass
        rec["gpus"] = [g for g in (gpu_identity(nvml, i) for i in devices or (device_index,))
                       if g]
    return rec


def _interpreting(triton) -> bool:
    """Whether TRITON_INTERPRET asks for the interpreter, read as Triton (and the kernels:
    kernels.dispatch.interpreting) read it: "false", "off" and "no" are off, where the
    record said True and the run compiled its kernels (a review). Not the kernels' own
    function: the record is made before the Runner imports kernels, and a kernels/ that
    does not import is the Runner's to say (exit 2, naming it), not a traceback here."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is not None and hasattr(runtime, "interpret"):
        return bool(runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() not in ("", "0", "false", "off",
                                                                   "no")


def tuning_table(device_name: str, directory: Path | None = None) -> dict | None:
    """What the kernel's tuning table for this device holds, for a run's record: its
    file, entries, the stale ones (tuned on other kernel source: never used) and the
    Triton versions they were tuned on (`lent`: another chip's table, lent to this
    device, whose entries it reads where its own table, `path`, has none; `path` itself
    where it has no own table); None where no table names the device. The picks
    a run measures come from it, and a run under another Triton compiles its tiles to
    other code (kernels/table_file.py)."""
    from kernels import table_file

    directory = directory or table_file.DEFAULT_DIR
    path, entries, lent, _ = table_file.table_for_device(device_name, directory)
    if not path:
        return None
    tritons = Counter(str(e.get("triton") or "?") for e in entries)
    return {"path": Path(path).name, "entries": len(entries),
            "stale": len(table_file.stale_entries(device_name, directory)),
            "triton": dict(sorted(tritons.items())), **({"lent": Path(lent).name} if lent else {})}


def free_memory(device_index: int) -> int | None:
    """Free bytes on torch's device `device_index` as NVML counts them, or None where
    NVML does not answer (no library, an AMD GPU). NVML opens no CUDA context, where
    torch.cuda.mem_get_info makes one on the device (a few hundred MiB held by the
    asking process for its life: `--devices` checked every GPU from the parent, which
    runs no case on them)."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        return int(nvml.nvmlDeviceGetMemoryInfo(_nvml_handle(nvml, device_index)).free)
    except Exception:  # a handle NVML cannot give: the caller asks CUDA
        return None


def _text(x) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def gpu_identity(nvml, device_index: int) -> dict:
    """Which physical GPU this is (UUID, serial) and how it is limited (power limit, max
    SM clock): the gate tells the calibration's own GPUs from others by the UUID."""
    try:
        h = _nvml_handle(nvml, device_index)
        out = {"index": device_index, "uuid": _text(nvml.nvmlDeviceGetUUID(h))}
    except Exception:
        return {}
    for key, call in (("serial", lambda: _text(nvml.nvmlDeviceGetSerial(h))),
                      ("power_limit_w", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3),
                      ("max_sm_clock_mhz",
                       lambda: nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM))):
        try:
            out[key] = call()
        except Exception:
            pass
    return out


def _uuid_of(props) -> str:
    """A torch device's UUID in NVML's form (GPU-...), or "" where it has none."""
    u = str(getattr(props, "uuid", "") or "")
    return (u if u.startswith("GPU-") else f"GPU-{u}") if u else ""


def _torch_uuid(device_index: int) -> dict:
    """{"gpu_uuid": ...} from torch's device properties, or {}."""
    try:
        import torch

        u = _uuid_of(torch.cuda.get_device_properties(device_index))
    except Exception:
        return {}
    return {"gpu_uuid": u} if u else {}


def telemetry(device_index: int = 0) -> dict:
    """SM clock, memory clock, temperature, power and why clocks are held down now;
    where NVML does not answer (an AMD GPU, no driver library), the GPU's UUID alone from
    torch: the gate tells machines apart by it (without it every GPU of a host was one
    machine, and a check on another GPU was judged at process level)."""
    nvml = _nvml()
    if nvml is None:
        return _torch_uuid(device_index)
    try:
        h = _nvml_handle(nvml, device_index)
        out = {
            "sm_clock_mhz": nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM),
            "mem_clock_mhz": nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM),
            "temp_c": nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU),
            "power_w": nvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
        }
    except Exception:
        return _torch_uuid(device_index)
    try:  # which physical GPU: the gate's noise level depends on it
        out["gpu_uuid"] = _text(nvml.nvmlDeviceGetUUID(h))
    except Exception:
        pass
    reasons = _clock_reasons(nvml, h)
    if reasons is not None:
        out["clock_reasons"] = reasons
    return out


# NVML clocks-event (throttle) reason bits that explain a lower SM clock.
CLOCK_REASONS = {0x1: "idle", 0x2: "app_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
                 0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal",
                 0x80: "hw_power_brake", 0x100: "display_clocks"}


def decode_clock_reasons(mask: int) -> list[str]:
    return [name for bit, name in CLOCK_REASONS.items() if mask & bit]


def _clock_reasons(nvml, handle) -> list[str] | None:
    for name in ("nvmlDeviceGetCurrentClocksEventReasons",
                 "nvmlDeviceGetCurrentClocksThrottleReasons"):
        fn = getattr(nvml, name, None)
        if fn is not None:
            try:
                return decode_clock_reasons(int(fn(handle)))
            except Exception:
                return None
    return None
