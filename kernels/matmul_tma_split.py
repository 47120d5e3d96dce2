"""The TMA split-K variant: for few output tiles over a long K (128 x 128 x 65536,
1024 x 1024 x 2048), where one program per tile leaves most SMs idle.

A grid of (tiles, SPLIT_K) programs: program (t, s) computes output tile t over the s-th
K range, its operands arriving through Hopper's tensor-memory descriptors as in the TMA
variant (kernels/matmul_tma.py: zero-filled past M, N and K, so the last range needs no
tail code, and the K loop is software-pipelined with TMA loads), and stores its fp32
partial tile into a (SPLIT_K, M, N) workspace. The tiled variant's reduction
(matmul_tiled.reduction) then sums the partials in a fixed order (deterministic, no
atomics), applies the fp8 scales and casts into `out`, whatever its strides.

The tiled variant splits K too, but with pointer loads (session 11: 0.55-0.78 of cuBLAS
bf16 on 128 x 128 x 65536-like shapes, 0.75-0.82 at K = 2048 with M * N <= 1M).
Tiles are few here, so they are walked row by row (GROUP_M is not read).

The K loop's body is the TMA kernel's, made of kernels/jit_parts.py's load and dot (an
edit there stales both variants' entries; scripts/restamp.py re-stamps those whose PTX is
unchanged, session 56).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import triton
import triton.language as tl

from kernels.fma import b_first
from kernels.jit_parts import dot_acc, k_step, load_oriented, wide
from kernels.launch import Bound, Launch
from kernels.matmul_tiled import _reduce_kernel, reduction
from kernels.matmul_tma import _descriptor, operand_boxes, tma_operands
from kernels.past_n import b_extent
from kernels.scratch import SCRATCH
from kernels.tile import TileConfig, cdiv, k_range


@triton.jit
def _tma_split_kernel(
    a_desc, b_desc, ws_ptr,
    M, N, K, K_PER_SPLIT,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    A_T: tl.constexpr, B_T: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr, B_FIRST: tl.constexpr = False,
):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    off_m = (pid // num_pid_n) * BLOCK_M
    off_n = (pid % num_pid_n) * BLOCK_N
    k_start = pid_k * K_PER_SPLIT
    k_tiles = tl.cdiv(min(K - k_start, K_PER_SPLIT), BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in range(k_tiles):
        off_k = k_start + ki * BLOCK_K
        acc = k_step(a_desc, b_desc, acc, off_m, off_n, off_k, A_T, B_T, INPUT_PRECISION,
                     IS_FP32, B_FIRST)
    offs_m = off_m + tl.arange(0, BLOCK_M)
    offs_n = off_n + tl.arange(0, BLOCK_N)
    w_ptrs = ws_ptr + pid_k * M * N + offs_m[:, None] * N + offs_n[None, :]
    tl.store(w_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


KERNELS = (_tma_split_kernel, _reduce_kernel, k_step, load_oriented, dot_acc, wide)
# host parts that decide a constexpr the entry's tile does not hold: in the source hash too
COMPILED_IN = ("b_first",)   # (kernels/table_file.variant_hash)


@dataclass(frozen=True)
class Recipe:
    """The variant's launches for operands of given shapes and layouts: the split
    kernel's and the reduction's, over a workspace `bind` allocates per call (inside a
    CUDA graph capture when the call is captured)."""

    main: Launch
    reduce: Launch
    workspace: tuple[int, int, int]
    a_t: bool
    b_t: bool
    blocks: tuple[list[int], list[int]]   # A's and B's descriptor boxes
    b_cols: int = 0                       # B's N as its descriptor reads it (`b_extent`)

    repeats: Bound = field(default_factory=Bound, compare=False, repr=False)

    def launch(self, a, b, out, sa, sb) -> None:
        """bind(...)(); a call on tensors at addresses launched before (on this device
        and stream) takes its bound launches (kernels/launch.py), the workspace's
        included (a buffer kept for the next call, kernels/scratch.py)."""
        ws = SCRATCH.empty(self.workspace, torch.float32, a.device, "ws")
        self.repeats.run((a.data_ptr(), b.data_ptr(), ws.data_ptr()), self.main,
                         lambda: (*self._descriptors(a, b), ws))
        self.reduce.fast(ws, out, sa, sb)

    def _descriptors(self, a, b) -> tuple:
        ab, bb = self.blocks
        return _descriptor(a, self.a_t, ab), _descriptor(b, self.b_t, bb, self.b_cols)

    def bind(self, a, b, out, sa, sb) -> Callable[[], None]:
        da, db = self._descriptors(a, b)
        ws = torch.empty(self.workspace, dtype=torch.float32, device=a.device)
        main, reduce = self.main, self.reduce

        def run() -> None:
            main(da, db, ws)
            reduce(ws, out, sa, sb)

        return run


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool, b_room: int = 0) -> Recipe | None:
    """The variant's launches for tensors like these, or None when a or b cannot be
    described (matmul_tma.tma_operands); `b_room`: zeros past B's N (`b_extent`)."""
    got = tma_operands(a, b)
    if got is None:
        return None
    a_t, b_t, M, N, K = got
    main, split = _launch(config, M, N, K, a_t, b_t, a.dtype, input_precision, is_fp32)
    return Recipe(main, reduction(M, N, out.stride(), split, has_scale), (split, M, N),
                  a_t, b_t, operand_boxes(config, a_t, b_t), b_extent(config, N, b_room))


@functools.lru_cache(maxsize=1024)
def _launch(config: TileConfig, M: int, N: int, K: int, a_t: bool, b_t: bool,
            dtype: torch.dtype, input_precision: str, is_fp32: bool) -> tuple[Launch, int]:
    """(the split kernel's launch but for its tensors, the number of K ranges): K ranges
    of whole BLOCK_K blocks, so only the last one has a tail (zero-filled by TMA). One per
    operand dtype: a Launch keeps its compiled kernel by its tensors' signature, to which
    a descriptor adds nothing (kernels/launch.py; an fp16 call once ran the bf16 kernel)."""
    bk = config.block_k
    k_per = k_range(K, config.split_k, bk)
    split = cdiv(K, k_per)
    grid = (cdiv(M, config.block_m) * cdiv(N, config.block_n), split)
    kw = dict(BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=bk, A_T=a_t, B_T=b_t,
              INPUT_PRECISION=input_precision, IS_FP32=is_fp32,
              B_FIRST=b_first(input_precision, is_fp32),
              num_stages=config.num_stages, num_warps=config.num_warps)
    return Launch(_tma_split_kernel, grid, (M, N, K, k_per), kw), split


def launcher(config: TileConfig, a, b, out, sa, sb, **flags) -> Callable[[], None] | None:
    """The variant's launches for these tensors, prepared, or None (`recipe`)."""
    r = recipe(config, a, b, out, **flags)
    return None if r is None else r.bind(a, b, out, sa, sb)
