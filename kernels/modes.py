"""The precision names the kernel accepts, and what each one means for the kernel alone.

The kernel is the thing under test, so it reads the contract's precision names itself
instead of importing the harness's table (gemmgate/precision.py): an old commit's
`kernels/` must load and run with nothing but torch and triton. The harness checks the
two tables agree (tests/kernels/test_modes.py).

`input_precision` is what Triton's tl.dot gets for fp32 inputs: "ieee" for fp32, never
Triton's default "tf32" (the silent downgrade this project exists to catch).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelMode:
    name: str
    input_dtypes: tuple[str, ...]   # torch dtype names the mode takes
    output_dtype: str
    input_precision: str            # tl.dot input_precision for fp32 inputs
    scaled: bool = False            # per-tensor scales (fp8)
    min_capability: tuple[int, int] = (0, 0)   # NVIDIA compute capability needed


MODES: dict[str, KernelMode] = {m.name: m for m in (
    KernelMode("fp32", ("float32",), "float32", "ieee"),
    KernelMode("tf32", ("float32",), "float32", "tf32", min_capability=(8, 0)),
    # Three tf32 passes (hi*hi + hi*lo + lo*hi): near-fp32 accuracy on tensor cores.
    KernelMode("tf32x3", ("float32",), "float32", "tf32x3", min_capability=(8, 0)),
    KernelMode("bf16", ("bfloat16",), "bfloat16", "ieee"),
    KernelMode("fp16", ("float16",), "float16", "ieee"),
    KernelMode("fp8", ("float8_e4m3fn", "float8_e4m3fnuz"), "bfloat16", "ieee", scaled=True,
               min_capability=(8, 9)),
)}


def mode_named(name: str) -> KernelMode:
    try:
        return MODES[name]
    except KeyError:
        raise ValueError(f"unknown precision {name!r}; known: {', '.join(MODES)}") from None


def mode_for_dtype(dtype_name: str) -> KernelMode:
    """The mode a bare dtype implies: float32 means IEEE fp32, never tf32."""
    for m in MODES.values():
        if dtype_name in m.input_dtypes:
            return m
    raise TypeError(f"unsupported dtype {dtype_name}: use float32, bfloat16, float16 or "
                    "float8_e4m3fn")
