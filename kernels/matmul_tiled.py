"""The tiled variant: grouped, stride-general, optionally split-K.

One program computes a BLOCK_M x BLOCK_N tile of C (or, with SPLIT_K > 1, that tile's
share of one K range), walking K in BLOCK_K steps with an fp32 accumulator. Programs are
ordered in groups of GROUP_M tile-rows so consecutive programs share B tiles in L2.
Rows and columns past M/N are wrapped with a modulo on load (always in bounds) and
masked on store. The K loop runs unmasked over whole blocks and masks only the last,
partial block after the loop, so a K that is not a multiple of BLOCK_K (1000, 253) keeps
the fast loop; but that block's loads are not software-pipelined, so where it measured
faster (`masked_loop`) every step is masked instead and the partial block runs inside the
pipelined loop (session 28).

Alignment: Triton specialises an integer argument only for divisibility by 16, so a
leading dimension of 1000 or 2056 elements would get scalar loads. Each stride is passed
as (stride // G, G) with G = its power-of-two factor up to 16, a constexpr: the kernel
multiplies back, and Triton then knows the stride's divisibility and vectorises loads.

Split-K: with SPLIT_K > 1 each program writes its fp32 partial tile to a workspace
(SPLIT_K, M, N) and `_reduce_kernel` sums the partials in a fixed order (deterministic,
no atomics), applies the fp8 scales and casts. `INPUT_PRECISION` is always explicit
("ieee", "tf32" or "tf32x3" for fp32 inputs): Triton's default for an fp32 dot is tf32.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import triton
import triton.language as tl

from kernels.jit_parts import dot_acc, grouped_tile, pointer_strides, store_tile, wide
from kernels.launch import Bound, Launch
from kernels.scratch import SCRATCH
from kernels.tile import TileConfig, cdiv, k_range, wide_offsets


@triton.jit
def _tiled_kernel(
    a_ptr, b_ptr, c_ptr, ws_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K, K_PER_SPLIT,
    sam, sak, sbk, sbn, scm, scn,
    G_AM: tl.constexpr, G_AK: tl.constexpr, G_BK: tl.constexpr, G_BN: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr, MASKED_LOOP: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr, HAS_SCALE: tl.constexpr,
    I64: tl.constexpr,
):
    stride_am, stride_ak, stride_bk, stride_bn, scm, scn = pointer_strides(
        sam, sak, sbk, sbn, scm, scn, G_AM, G_AK, G_BK, G_BN, I64)
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = grouped_tile(pid, GROUP_M * num_pid_n, num_pid_m, GROUP_M)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_am = offs_m % M
    offs_bn = offs_n % N
    offs_k = tl.arange(0, BLOCK_K)
    k_start = pid_k * K_PER_SPLIT
    k_len = min(K - k_start, K_PER_SPLIT)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + (k_start + offs_k[None, :]) * stride_ak
    b_ptrs = b_ptr + (k_start + offs_k[:, None]) * stride_bk + offs_bn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if MASKED_LOOP:   # a partial last block inside the pipelined loop: every step masked
        for kk in range(0, tl.cdiv(k_len, BLOCK_K)):
            k_rem = k_len - kk * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_rem, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_rem, other=0.0)
            acc = dot_acc(a, b, acc, INPUT_PRECISION, IS_FP32)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
    else:   # whole blocks unmasked, then a partial last block (if any) after the loop
        for _ in range(0, k_len // BLOCK_K):
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
            acc = dot_acc(a, b, acc, INPUT_PRECISION, IS_FP32)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        k_left = k_len % BLOCK_K
        if k_left > 0:
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            acc = dot_acc(a, b, acc, INPUT_PRECISION, IS_FP32)

    store_tile(acc, c_ptr, ws_ptr, scale_a_ptr, scale_b_ptr, offs_m, offs_n, M, N, pid_k,
               scm, scn, SPLIT_K, HAS_SCALE)


@triton.jit
def _reduce_kernel(ws_ptr, c_ptr, scale_a_ptr, scale_b_ptr, M, N, scm, scn,
                   SPLIT_K: tl.constexpr, BLOCK: tl.constexpr, HAS_SCALE: tl.constexpr,
                   I64: tl.constexpr):
    scm = wide(scm, I64)
    scn = wide(scn, I64)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(ws_ptr + s * M * N + offs, mask=mask, other=0.0)
    if HAS_SCALE:
        acc = acc * (tl.load(scale_a_ptr) * tl.load(scale_b_ptr))
    c_ptrs = c_ptr + (offs // N) * scm + (offs % N) * scn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


# host parts that decide a constexpr the entry's tile does not hold: in the source hash too
COMPILED_IN = ("masked_loop", "_split_stride", "wide_offsets")   # (kernels/table_file.variant_hash)
KERNELS = (_tiled_kernel, _reduce_kernel, dot_acc, grouped_tile, store_tile, pointer_strides,
           wide)   # its source
_REDUCE_BLOCK = 1024


def _split_stride(s: int) -> tuple[int, int]:
    """(s // g, g) with g the power-of-two factor of s, at most 16 (0 counts as 16)."""
    g = 16
    while g > 1 and s % g:
        g //= 2
    return s // g, g


@dataclass(frozen=True)
class Recipe:
    """The tiled variant's launch for operands of given shapes and strides: the main
    kernel's Launch and, with split-K, the reduction's over an fp32 (splits, M, N)
    workspace that `bind` allocates (inside a CUDA graph capture when the call is
    captured)."""

    main: Launch
    reduce: Launch | None
    workspace: tuple[int, int, int]
    repeats: Bound = field(default_factory=Bound, compare=False, repr=False)

    def launch(self, a, b, out, sa, sb) -> None:
        """bind(...)(); a call on tensors at addresses launched before (on this device
        and stream) takes its bound launch (kernels/launch.py), split-K's workspace and
        reduction included (a buffer kept for the next call, kernels/scratch.py)."""
        ws = out if self.reduce is None else \
            SCRATCH.empty(self.workspace, torch.float32, a.device, "ws")
        pa = a.data_ptr()   # unscaled modes pass a for both scales (read once)
        self.repeats.run(
            (pa, b.data_ptr(), out.data_ptr(), ws.data_ptr(), pa if sa is a else sa.data_ptr(),
             pa if sb is a else sb.data_ptr()), self.main, lambda: (a, b, out, ws, sa, sb))
        if self.reduce is not None:
            self.reduce.fast(ws, out, sa, sb)

    def bind(self, a, b, out, sa, sb) -> Callable[[], None]:
        main, reduce = self.main, self.reduce
        if reduce is None:
            return lambda: main(a, b, out, out, sa, sb)
        ws = torch.empty(self.workspace, dtype=torch.float32, device=a.device)

        def run() -> None:
            main(a, b, out, ws, sa, sb)
            reduce(ws, out, sa, sb)

        return run


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool) -> Recipe:
    """The tiled variant's launch for tensors like these (kernels/launch.py)."""
    M, K = a.shape
    N = b.shape[1]
    main, reduce = _launches(config, M, N, K, a.stride(), b.stride(), out.stride(),
                             input_precision, is_fp32, has_scale)
    return Recipe(main, reduce, (splits(config, K), M, N))


def launcher(config: TileConfig, a, b, out, sa, sb, **flags) -> Callable[[], None]:
    """The tiled variant's launch for these tensors, prepared."""
    return recipe(config, a, b, out, **flags).bind(a, b, out, sa, sb)


@functools.lru_cache(maxsize=1024)
def _launches(config: TileConfig, M: int, N: int, K: int, sa: tuple, sb: tuple, sc: tuple,
              input_precision: str, is_fp32: bool, has_scale: bool
              ) -> tuple[Launch, Launch | None]:
    """The main kernel's launch and, with split-K, the reduction's: everything but the
    tensors, made once per shape, strides, tile and flags (kernels/launch.py)."""
    k_per = _k_per_split(config, K)
    split = splits(config, K)
    (sam, g_am), (sak, g_ak) = _split_stride(sa[0]), _split_stride(sa[1])
    (sbk, g_bk), (sbn, g_bn) = _split_stride(sb[0]), _split_stride(sb[1])
    grid = (cdiv(M, config.block_m) * cdiv(N, config.block_n), split)
    kw = dict(G_AM=g_am, G_AK=g_ak, G_BK=g_bk, G_BN=g_bn, BLOCK_M=config.block_m,
              BLOCK_N=config.block_n, BLOCK_K=config.block_k, GROUP_M=config.group_m,
              SPLIT_K=split, MASKED_LOOP=masked_loop(config, K),
              INPUT_PRECISION=input_precision, IS_FP32=is_fp32, HAS_SCALE=has_scale,
              I64=wide_offsets(((M, K), sa), ((K, N), sb), ((M, N), sc)),
              num_stages=config.num_stages, num_warps=config.num_warps)
    main = Launch(_tiled_kernel, grid, (M, N, K, k_per, sam, sak, sbk, sbn, *sc), kw)
    return main, (None if split == 1 else reduction(M, N, sc, split, has_scale))


@functools.lru_cache(maxsize=1024)
def reduction(M: int, N: int, sc: tuple, split: int, has_scale: bool) -> Launch:
    """The split-K reduction's launch but for its tensors (workspace, out, scales): the
    `split` fp32 partials of an (M, N) product summed in order, scaled, cast into an out
    of strides `sc` (also the TMA split-K variant's, kernels/matmul_tma_split.py).
    Blocks of 1024 elements, halved down to 128 while that leaves fewer than 256
    programs: a 128 x 128 output is 128 programs, not 16 (a split-K output is small)."""
    if split * M * N >= 2**31:   # the partials' int32 offsets (`store_tile`, the TMA split)
        raise ValueError(f"split-K over {split} ranges of a {M} x {N} output needs a "
                         f"workspace of {split * M * N} elements, past 2**31: split less")
    block = _REDUCE_BLOCK
    while block > 128 and cdiv(M * N, block) < 256:
        block //= 2
    rkw = dict(SPLIT_K=split, BLOCK=block, HAS_SCALE=has_scale,
               I64=wide_offsets(((M, N), sc)), num_warps=4)
    return Launch(_reduce_kernel, (cdiv(M * N, block),), (M, N, *sc), rkw)


def launch(config: TileConfig, a, b, out, sa, sb, **flags) -> None:
    launcher(config, a, b, out, sa, sb, **flags)()


def masked_loop(config: TileConfig, K: int) -> bool:
    """Whether the K loop masks every step (its partial last block inside the pipelined
    loop): K is not whole blocks, and either one K range (no split) or K a multiple of 16.
    Session 28, H200, the same tiles on both loops (docs/PERF.md's frozen table `s28-masked`):
    one range with a partial block ran x1.02-1.35 masked (12 of 12 faster; 144 x 192 x
    400 x1.13-1.15: the block after the loop is not pipelined); split-K with a partial
    block x1.040 where K is a multiple of 16 (14 cases) but x0.813 where it is not (14,
    down to x0.65: every range pays the masks; a guess, not profiled: Triton then knows
    their K bound only to a smaller divisor); whole blocks gain nothing from masks."""
    return K % config.block_k != 0 and (config.split_k == 1 or K % 16 == 0)


def _k_per_split(config: TileConfig, K: int) -> int:
    """K range per split: whole BLOCK_K blocks, so only the last range has a tail."""
    if config.split_k == 1 or K == 0:
        return max(K, 1)
    return k_range(K, config.split_k, config.block_k)


def splits(config: TileConfig, K: int) -> int:
    """How many K ranges `launch` will use (the workspace's first dimension)."""
    return cdiv(K, _k_per_split(config, K)) if K else 1
