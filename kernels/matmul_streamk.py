"""The stream-K variant: for output tiles that fill the SMs unevenly (1152 x 1856 x 1920:
72 tiles of 128x256 or 135 of 128x128 on 132 SMs), where one program per tile leaves
SMs idle through a last partial wave.

The work is the tiles' K blocks laid end to end, tile after tile (TOTAL = tiles x
k_tiles iterations); P programs (at most one per SM) take equal contiguous ranges of it:
program p runs iterations [p*TOTAL // P, (p+1)*TOTAL // P). A range crosses tiles: each
tile segment it covers whole is stored into `out` at once (scaled, cast); a partial one
(the range's first tile begun by the program before, or its last tile left to the next)
is stored in fp32 into the program's workspace slot (P, 2, BLOCK_M, BLOCK_N): slot 0 for
its first tile, 1 for its last. A second kernel then, per tile that more than one program
touched, sums the partials in program order (deterministic, no atomics, no waiting on
other programs, so the interpreter's one-by-one programs run it too), scales, casts and
stores. Operands arrive through Hopper's tensor-memory descriptors as in the TMA variant
(zero-filled past M, N and K; `matmul_tma.operand_boxes`); C is stored by masked pointer
stores, into `out` whatever its strides.

Iterations are counted in int32: the launcher takes shapes with TOTAL x P < 2**31.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kernels.configs import TileConfig, cdiv
from kernels.launch import Launch
from kernels.matmul_tma import _descriptor, num_sms, operand_boxes, tma_form

INT32_SAFE = 2**31


@triton.jit
def _streamk_kernel(
    a_desc, b_desc, c_ptr, ws_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K, P, scm, scn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    A_T: tl.constexpr, B_T: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr, HAS_SCALE: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    total = tl.cdiv(M, BLOCK_M) * num_pid_n * k_tiles
    start = pid * total // P
    end = (pid + 1) * total // P
    first_tile = start // k_tiles
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    it = start
    while it < end:
        tile = it // k_tiles
        k0 = it % k_tiles
        k1 = min(k_tiles, k0 + end - it)
        off_m = (tile // num_pid_n) * BLOCK_M
        off_n = (tile % num_pid_n) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k0, k1):
            off_k = ki * BLOCK_K
            if A_T:
                a = a_desc.load([off_k, off_m]).T
            else:
                a = a_desc.load([off_m, off_k])
            if B_T:
                b = b_desc.load([off_n, off_k]).T
            else:
                b = b_desc.load([off_k, off_n])
            if IS_FP32:
                acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
            else:
                acc = tl.dot(a, b, acc)
        if k0 == 0 and k1 == k_tiles:
            if HAS_SCALE:
                acc = acc * (tl.load(scale_a_ptr) * tl.load(scale_b_ptr))
            offs_m = off_m + rows
            offs_n = off_n + cols
            c_ptrs = c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
                     mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
        else:
            slot = 1 - (tile == first_tile).to(tl.int32)
            w_ptrs = ws_ptr + ((pid * 2 + slot) * BLOCK_M + rows[:, None]) * BLOCK_N \
                + cols[None, :]
            tl.store(w_ptrs, acc)
        it += k1 - k0


@triton.jit
def _fixup_kernel(
    ws_ptr, c_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K, P, scm, scn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    HAS_SCALE: tl.constexpr,
):
    tile = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    total = tl.cdiv(M, BLOCK_M) * num_pid_n * k_tiles
    first = tile * k_tiles
    p_lo = ((first + 1) * P - 1) // total              # the program running iteration first
    p_hi = ((first + k_tiles) * P - 1) // total        # ... and the tile's last iteration
    if p_lo < p_hi:
        rows = tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for p in range(p_lo, p_hi + 1):
            slot = 1 - ((p * total // P) // k_tiles == tile).to(tl.int32)
            acc += tl.load(ws_ptr + ((p * 2 + slot) * BLOCK_M + rows[:, None]) * BLOCK_N
                           + cols[None, :])
        if HAS_SCALE:
            acc = acc * (tl.load(scale_a_ptr) * tl.load(scale_b_ptr))
        offs_m = (tile // num_pid_n) * BLOCK_M + rows
        offs_n = (tile % num_pid_n) * BLOCK_N + cols
        c_ptrs = c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


KERNELS = (_streamk_kernel, _fixup_kernel)


def programs(config: TileConfig, M: int, N: int, K: int, sms: int) -> int:
    """How many programs share the work: one per SM, fewer than the iterations."""
    total = cdiv(M, config.block_m) * cdiv(N, config.block_n) * cdiv(K, config.block_k)
    return max(1, min(sms, total))


def fits_int32(config: TileConfig, M: int, N: int, K: int, sms: int) -> bool:
    total = cdiv(M, config.block_m) * cdiv(N, config.block_n) * cdiv(K, config.block_k)
    return (total + 1) * programs(config, M, N, K, sms) < INT32_SAFE


@dataclass(frozen=True)
class Recipe:
    """The variant's launches for operands of given shapes and layouts: the stream-K
    kernel's and the fixup's, over a workspace `bind` allocates per call (inside a CUDA
    graph capture when the call is captured)."""

    main: Launch
    fixup: Launch
    workspace: tuple[int, int, int, int]
    a_t: bool
    b_t: bool
    blocks: tuple[list[int], list[int]]   # A's and B's descriptor boxes

    def bind(self, a, b, out, sa, sb) -> Callable[[], None]:
        ab, bb = self.blocks
        da, db = _descriptor(a, self.a_t, ab), _descriptor(b, self.b_t, bb)
        ws = torch.empty(self.workspace, dtype=torch.float32, device=a.device)
        main, fixup = self.main, self.fixup

        def run() -> None:
            main(da, db, out, ws, sa, sb)
            fixup(ws, out, sa, sb)

        return run


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool) -> Recipe | None:
    """The variant's launches for tensors like these, or None when a or b cannot be
    described (matmul_tma.tma_form) or the iteration count would overflow int32."""
    a_t, b_t = tma_form(a), tma_form(b)
    M, K = a.shape
    N = b.shape[1]
    sms = num_sms(a.device)
    if a_t is None or b_t is None or K == 0 or not fits_int32(config, M, N, K, sms):
        return None
    p = programs(config, M, N, K, sms)
    main, fixup = _launches(config, M, N, K, p, a_t, b_t, out.stride(), a.dtype,
                            input_precision, is_fp32, has_scale)
    return Recipe(main, fixup, (p, 2, config.block_m, config.block_n), a_t, b_t,
                  operand_boxes(config, a_t, b_t))


@functools.lru_cache(maxsize=1024)
def _launches(config: TileConfig, M: int, N: int, K: int, p: int, a_t: bool, b_t: bool,
              sc: tuple, dtype: torch.dtype, input_precision: str, is_fp32: bool,
              has_scale: bool) -> tuple[Launch, Launch]:
    """The two launches but for their tensors, one per operand dtype (a descriptor adds
    nothing to a Launch's signature: kernels/matmul_tma_split._launch)."""
    bm, bn, bk = config.block_m, config.block_n, config.block_k
    ints = (M, N, K, p, *sc)
    main = Launch(_streamk_kernel, (p,), ints, dict(
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, A_T=a_t, B_T=b_t, INPUT_PRECISION=input_precision,
        IS_FP32=is_fp32, HAS_SCALE=has_scale, num_stages=config.num_stages,
        num_warps=config.num_warps))
    fixup = Launch(_fixup_kernel, (cdiv(M, bm) * cdiv(N, bn),), ints, dict(
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, HAS_SCALE=has_scale,
        num_warps=8 if bm * bn >= 128 * 128 else 4))
    return main, fixup


def launcher(config: TileConfig, a, b, out, sa, sb, **flags) -> Callable[[], None] | None:
    """The variant's launches for these tensors, prepared, or None (`recipe`)."""
    r = recipe(config, a, b, out, **flags)
    return None if r is None else r.bind(a, b, out, sa, sb)
