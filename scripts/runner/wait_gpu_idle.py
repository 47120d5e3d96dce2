#!/usr/bin/env python3
"""Wait until the GPU is idle, so that timing runs do not share it with another job.

Every --interval seconds we take one sample: the highest utilization (percent) over the
watched GPUs. NVIDIA is read through pynvml (package nvidia-ml-py), AMD through
`rocm-smi --showuse --json`. The GPU is idle once the last ceil(settle / interval)
samples are all below --max-util (each NVML/rocm-smi reading already averages over the
recent past, so that many samples cover about --settle seconds). After --timeout seconds
we give up with exit 1. Without any GPU tooling there is nothing to wait for: a note, exit 0.

Exit codes: 0 idle (or no GPU tooling), 1 still busy at the timeout, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence

Reader = Callable[[], list[float]]


def is_idle(samples: Sequence[float], max_util: float, settle_samples: int) -> bool:
    """True when the last `settle_samples` samples exist and are all below `max_util`."""
    if settle_samples < 1:
        raise ValueError(f"settle_samples must be >= 1, got {settle_samples}")
    if len(samples) < settle_samples:
        return False
    return all(s < max_util for s in list(samples)[-settle_samples:])


def rocm_visible() -> set[int] | None:
    """The card indices this job may use (HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or
    CUDA_VISIBLE_DEVICES, the first set; indices only), or None: every card."""
    for name in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        value = os.environ.get(name)
        if value is not None:
            ids = [d.strip() for d in value.split(",") if d.strip()]
            return {int(d) for d in ids} if ids and all(d.isdigit() for d in ids) else None
    return None


def parse_rocm_smi(text: str, visible: set[int] | None = None) -> list[float]:
    """Per-card utilization from `rocm-smi --showuse --json` ({"card0": {"GPU use (%)": "3"}});
    `visible`: only those cards (another job's card busy must not hold this one)."""
    out = []
    for card, fields in json.loads(text).items():
        if not card.startswith("card") or not isinstance(fields, dict):
            continue
        if visible is not None and (not card[4:].isdigit() or int(card[4:]) not in visible):
            continue
        for key, value in fields.items():
            if "GPU use" in key:
                try:
                    out.append(float(value))
                except (TypeError, ValueError):
                    pass  # "N/A" on some virtualized devices
    return out


def _nvml_reader() -> Reader | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None  # no NVIDIA driver
    # NVML numbers GPUs physically; honour CUDA_VISIBLE_DEVICES (indices or GPU- UUIDs).
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        if visible is None:
            handles = [
                pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
            ]
        else:
            handles = [
                pynvml.nvmlDeviceGetHandleByIndex(int(d))
                if d.isdigit()
                else pynvml.nvmlDeviceGetHandleByUUID(d)
                for d in (d.strip() for d in visible.split(","))
                if d
            ]
    except pynvml.NVMLError as e:
        print(
            f"wait_gpu_idle: NVML cannot open CUDA_VISIBLE_DEVICES={visible!r}: {e}",
            file=sys.stderr,
        )
        return None
    if not handles:
        return None
    return lambda: [float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu) for h in handles]


def _rocm_reader() -> Reader | None:
    exe = shutil.which("rocm-smi")
    if exe is None:
        return None

    visible = rocm_visible()

    def read() -> list[float]:
        proc = subprocess.run(
            [exe, "--showuse", "--json"], capture_output=True, text=True, timeout=30, check=True
        )
        return parse_rocm_smi(proc.stdout, visible)

    try:
        if not read():
            return None
    except (subprocess.SubprocessError, OSError, ValueError):
        return None

    def polled() -> list[float]:   # a failure while polling: say so, and stop waiting
        try:
            return read()
        except (subprocess.SubprocessError, OSError, ValueError) as e:
            print(f"wait_gpu_idle: rocm-smi failed ({e}); not waiting", file=sys.stderr)
            return []
    return polled


def _find_reader() -> tuple[str, Reader] | None:
    for name, make in (("NVIDIA (pynvml)", _nvml_reader), ("AMD (rocm-smi)", _rocm_reader)):
        read = make()
        if read is not None:
            return name, read
    return None


def wait_idle(
    read: Reader,
    *,
    max_util: float,
    settle_samples: int,
    interval: float,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[bool, list[float]]:
    """Poll `read` until idle or timeout; returns (idle, last samples)."""
    samples: deque[float] = deque(maxlen=settle_samples)
    deadline = clock() + timeout
    while True:
        samples.append(max(read(), default=0.0))
        if is_idle(samples, max_util, settle_samples):
            return True, list(samples)
        if clock() >= deadline:
            return False, list(samples)
        sleep(interval)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--max-util",
        type=float,
        default=5.0,
        help="idle means utilization below this percentage (default 5)",
    )
    p.add_argument(
        "--settle", type=float, default=5.0, help="seconds the GPU must stay idle (default 5)"
    )
    p.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    p.add_argument(
        "--timeout", type=float, default=600.0, help="give up after this many seconds (default 600)"
    )
    args = p.parse_args(argv)
    if not 0 < args.max_util <= 100:
        p.error("--max-util must be in (0, 100]")
    if args.settle < 0 or args.interval <= 0 or args.timeout < 0:
        p.error("--settle and --timeout must be >= 0, --interval > 0")

    found = _find_reader()
    if found is None:
        print("wait_gpu_idle: no GPU tooling found (pynvml, rocm-smi); not waiting.")
        return 0
    name, read = found

    settle_samples = max(1, math.ceil(args.settle / args.interval))
    idle, last = wait_idle(
        read,
        max_util=args.max_util,
        settle_samples=settle_samples,
        interval=args.interval,
        timeout=args.timeout,
    )
    shown = ", ".join(f"{s:.0f}" for s in last)
    if idle:
        print(f"wait_gpu_idle: {name} idle (last samples: {shown} %).")
        return 0
    prefix = "::error::" if os.environ.get("GITHUB_ACTIONS") == "true" else ""
    print(
        f"{prefix}wait_gpu_idle: {name} still busy after {args.timeout:.0f} s "
        f"(last samples: {shown} %, idle means < {args.max_util:g} % for "
        f"{args.settle:g} s). Another process is using the GPU; timings would be "
        f"unreliable. Check nvidia-smi / rocm-smi on the runner.",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
