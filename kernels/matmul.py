"""Grouped, masked, stride-general Triton GEMM: C = (A @ B) * scale_a * scale_b.

One program computes a BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K steps and
accumulating in fp32. Programs are ordered in groups of GROUP_M tile-rows so that
consecutive programs share the same B tiles while they are still in L2 ("grouped
ordering"). Rows and columns past M/N are wrapped with a modulo on load (always in
bounds, so loads need no M/N mask) and masked on store; the K remainder is masked with
zeros. Strides are arguments, so row-major, column-major and padded views all work;
Triton specialises unit strides at compile time, so the common layouts stay fast.

`INPUT_PRECISION` is passed explicitly for fp32 inputs ("ieee" or "tf32"): Triton's
default for an fp32 dot is tf32, which is exactly the silent downgrade this project
exists to catch. Configs live in kernels/configs.py as data.

Which tile runs: `config=` when the caller gives one; else the caller's `choose(key,
candidates, bench)` hook (the harness's tuner: pins, a cache, or timing `bench` within
a budget); else kernels.configs.heuristic, in microseconds. The kernel itself never
tunes on the call path and keeps no state that changes a result; it imports only torch,
triton and itself, so an old commit's `kernels/` loads on its own (A/B, bisect).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import os
from collections.abc import Callable, Sequence

import torch
import triton
import triton.language as tl

from kernels.configs import CONFIGS, INTERPRETER_CONFIG, TileConfig, fits, heuristic
from kernels.modes import KernelMode, mode_for_dtype, mode_named

# choose(key, candidates, bench) -> the tile to run; bench(tile) -> median ms (inf: fails)
Chooser = Callable[[str, Sequence[TileConfig], Callable[[TileConfig], float]], TileConfig]


@triton.jit
def _matmul_kernel(
    a_ptr, b_ptr, c_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    IS_FP32: tl.constexpr,
    HAS_SCALE: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_am = offs_m % M
    offs_bn = offs_n % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        if IS_FP32:
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    if HAS_SCALE:
        acc = acc * (tl.load(scale_a_ptr) * tl.load(scale_b_ptr))
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


# ----------------------------------------------------------------------------- launcher

_COPY_MIN_DIM = 512  # copy an operand K-major only when the other side reuses it this much


def _family(mode: KernelMode) -> str:
    return "fp32" if mode.input_dtypes == ("float32",) else "fp8" if mode.scaled else "16bit"


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _to_triton(c: TileConfig) -> dict:
    return {"BLOCK_M": c.block_m, "BLOCK_N": c.block_n, "BLOCK_K": c.block_k,
            "GROUP_M": c.group_m, "num_stages": c.num_stages, "num_warps": c.num_warps}


@functools.cache
def kernel_hash() -> str:
    """Hash of the kernel's source: tuning entries record which version they were tuned on."""
    return hashlib.sha1(inspect.getsource(_matmul_kernel.fn).encode()).hexdigest()[:12]


def _launch(config: TileConfig, args, flags, M: int, N: int) -> None:
    grid = (triton.cdiv(M, config.block_m) * triton.cdiv(N, config.block_n),)
    _matmul_kernel[grid](*args, **_to_triton(config), **flags)


def _bench_ms(fn, rep_ms: float = 25.0) -> float:
    """One candidate's median time for a chooser; inf if it cannot compile or launch
    (e.g. out of registers or shared memory on this chip)."""
    try:
        return triton.testing.do_bench(fn, warmup=5, rep=rep_ms, return_mode="median")
    except Exception:  # noqa: BLE001 - any compile/launch failure only rules the config out
        return math.inf


@functools.cache
def _device_limits(device: torch.device) -> tuple[int, int]:
    """(shared memory per block, SM count): asked once per device, not per call."""
    p = torch.cuda.get_device_properties(device)
    return p.shared_memory_per_block_optin, p.multi_processor_count


def candidates(mode: KernelMode, device: torch.device) -> tuple[TileConfig, ...]:
    """The mode's tiles that fit the device's shared memory."""
    family = _family(mode)
    elem = 1 if mode.scaled else 4 if family == "fp32" else 2
    return fits(CONFIGS[family], elem, _device_limits(device)[0])


def _pick(mode: KernelMode, a, b, args, flags, M, N, K, choose) -> TileConfig:
    """The caller's choice (`choose` hook) or the heuristic tile for this call."""
    cands = candidates(mode, a.device)
    if choose is None:
        return heuristic(cands, M, N, _device_limits(a.device)[1])
    key = (f"{_family(mode)} m{M} n{N} k{K} a{a.stride(0)},{a.stride(1)} "
           f"b{b.stride(0)},{b.stride(1)}")
    return choose(key, cands, lambda cfg: _bench_ms(lambda: _launch(cfg, args, flags, M, N)))


def _check(a, b, precision, out, scale_a, scale_b) -> KernelMode:
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"a and b must be torch.Tensor, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"matmul needs 2-D a (M, K) and b (K, N); got a.dim()={a.dim()}, "
                         f"b.dim()={b.dim()}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is "
                         f"{tuple(b.shape)} (a.shape[1] must equal b.shape[0])")
    if a.dtype != b.dtype:
        raise TypeError(f"mixed dtypes: a is {a.dtype}, b is {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"mixed devices: a is on {a.device}, b is on {b.device}")
    if not a.dtype.is_floating_point:
        raise TypeError(f"unsupported dtype {a.dtype}: integer, bool and complex inputs "
                        "are not supported")
    dtype_name = str(a.dtype).removeprefix("torch.")
    mode = mode_for_dtype(dtype_name) if precision is None else mode_named(precision)
    if dtype_name not in mode.input_dtypes:
        raise TypeError(f"precision {mode.name!r} needs {' or '.join(mode.input_dtypes)} "
                        f"inputs, got {a.dtype}")
    _check_device(a.device, mode)
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s is not None and (s.numel() != 1 or s.dtype != torch.float32 or s.device != a.device):
            raise ValueError(f"{name} must be a one-element float32 tensor on {a.device}")
    if out is not None:
        want = (a.shape[0], b.shape[1])
        if tuple(out.shape) != want or str(out.dtype) != f"torch.{mode.output_dtype}":
            raise ValueError(f"out must be {want} {mode.output_dtype}, got "
                             f"{tuple(out.shape)} {out.dtype}")
        if out.device != a.device:
            raise ValueError(f"out is on {out.device}, inputs on {a.device}")
    return mode


def _check_device(device: torch.device, mode: KernelMode) -> None:
    if device.type == "cpu":
        if not _interpreting():
            raise ValueError("CPU tensors need the Triton interpreter (TRITON_INTERPRET=1)")
        if mode.name in ("tf32", "fp8"):
            raise ValueError(f"{mode.name} is not supported on cpu")
        return
    if torch.version.hip is not None:
        return
    cc = torch.cuda.get_device_capability(device)
    need = mode.min_capability
    if cc < need:
        raise ValueError(f"{mode.name} is not supported on {torch.cuda.get_device_name(device)} "
                         f"(needs compute capability {need[0]}.{need[1]}+)")


def _k_major(a: torch.Tensor, b: torch.Tensor, mode: KernelMode):
    """Hopper's wgmma takes tf32 and fp8 operands only K-major (A row-major, B column-
    major); otherwise Triton falls back to the Ampere mma path at ~1/4 of the rate
    (measured on the H200: docs/PERF.md, v1 -> v2). The copy costs K*N (or M*K) bytes
    against 2*M*N*K flops, so it only pays when the other dimension is large: for skinny
    M (decode-like shapes) v2's unconditional copy made tf32/fp8 4x slower (v2 -> v3)."""
    if a.device.type != "cuda" or torch.version.hip is not None:
        return a, b
    wgmma = torch.cuda.get_device_capability(a.device) >= (9, 0)
    if not wgmma or not (mode.scaled or mode.name == "tf32"):
        return a, b
    M, N = a.shape[0], b.shape[1]
    if a.stride(1) != 1 and a.numel() and N >= _COPY_MIN_DIM:
        a = a.contiguous()
    if b.stride(0) != 1 and b.numel() and M >= _COPY_MIN_DIM:
        b = b.t().contiguous().t()
    return a, b


def matmul(a, b, *, precision=None, out=None, scale_a=None, scale_b=None, config=None,
           choose: Chooser | None = None):
    """C = A @ B under an explicit precision mode (names in kernels/modes.py).

    precision=None means the mode implied by the dtype (float32 -> IEEE fp32, never tf32).
    fp8 takes per-tensor float32 scales: C = (A @ B) * scale_a * scale_b, in bfloat16.
    `config` (a TileConfig) fixes the tile; else `choose(key, candidates, bench)` picks
    it (and so knows which tile ran); else kernels.configs.heuristic does.
    """
    mode = _check(a, b, precision, out, scale_a, scale_b)
    a, b = _k_major(a, b, mode)
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = torch.empty((M, N), dtype=getattr(torch, mode.output_dtype), device=a.device)
    if M == 0 or N == 0:
        return out
    has_scale = scale_a is not None or scale_b is not None
    one = None
    if has_scale and (scale_a is None or scale_b is None):
        one = torch.ones((), dtype=torch.float32, device=a.device)
    sa = scale_a if scale_a is not None else one
    sb = scale_b if scale_b is not None else one
    args = (a, b, out, sa if has_scale else a, sb if has_scale else a, M, N, K,
            a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
    flags = dict(INPUT_PRECISION=mode.input_precision, IS_FP32=_family(mode) == "fp32",
                 HAS_SCALE=has_scale)
    if config is None and (_interpreting() or a.device.type == "cpu"):
        config = INTERPRETER_CONFIG
    if config is None:
        config = _pick(mode, a, b, args, flags, M, N, K, choose)
    _launch(config, args, flags, M, N)
    return out
