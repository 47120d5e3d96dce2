"""The wide TMA variant: the persistent TMA kernel (kernels/matmul_tma.py) with output
tiles 1.5 times a power of two wide (BLOCK_N = 192 = 128 + 64, or 96 = 64 + 32).

Triton's blocks are powers of two, so a 192-wide tile is two of them side by side: one
A tile per K step feeds two dots, into a BLOCK_M x N0 and a BLOCK_M x N1 accumulator (N0
the power of two, N1 = N0 / 2), and B arrives as two boxes through two descriptors of
the same tensor; C leaves as two boxes. Same persistent, grouped walk over the output
tiles as `tma`, same zero fill past M, N and K, same staging of C when `out` cannot be
described (matmul_tma.recipe).

Why: a GEMM whose tiles fill the SMs unevenly. N = 384 takes two 192-wide tiles and
wastes a third of two 256-wide ones (7904 x 384 x 3744 bf16 ran 0.75 of cuBLAS on
128x256: 124 tiles each a third idle); 1152 x 1856 x 1920 makes 72 tiles of 128x256 on
132 SMs (0.70 of cuBLAS), 90 of 128x192.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import triton
import triton.language as tl

from kernels.configs import TileConfig, cdiv, wide_parts
from kernels.launch import Launch
from kernels.matmul_tma import Recipe, _descriptor, num_sms, staged_recipe


@triton.jit
def _tma_wide_kernel(
    a_desc, b_desc, b2_desc, c_desc, c2_desc, c_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K,
    BLOCK_M: tl.constexpr, N0: tl.constexpr, N1: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr, HAS_SCALE: tl.constexpr,
):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, N0 + N1)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    if HAS_SCALE:
        scale = tl.load(scale_a_ptr) * tl.load(scale_b_ptr)
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        off_m = pid_m * BLOCK_M
        off_n = pid_n * (N0 + N1)
        acc = tl.zeros((BLOCK_M, N0), dtype=tl.float32)
        acc2 = tl.zeros((BLOCK_M, N1), dtype=tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            if A_T:
                a = a_desc.load([off_k, off_m]).T
            else:
                a = a_desc.load([off_m, off_k])
            if B_T:
                b = b_desc.load([off_n, off_k]).T
                b2 = b2_desc.load([off_n + N0, off_k]).T
            else:
                b = b_desc.load([off_k, off_n])
                b2 = b2_desc.load([off_k, off_n + N0])
            if IS_FP32:
                acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
                acc2 = tl.dot(a, b2, acc2, input_precision=INPUT_PRECISION)
            else:
                acc = tl.dot(a, b, acc)
                acc2 = tl.dot(a, b2, acc2)
        if HAS_SCALE:
            acc = acc * scale
            acc2 = acc2 * scale
        c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))
        c2_desc.store([off_m, off_n + N0], acc2.to(c_ptr.dtype.element_ty))


KERNELS = (_tma_wide_kernel,)


class WideRecipe(Recipe):
    """matmul_tma.Recipe with B and C each described twice: the N0- and N1-wide boxes."""

    def _args(self, a, b, c, sa, sb) -> tuple:
        ab, bb, bb2, cb, cb2 = self.blocks
        return (_descriptor(a, self.a_t, ab), _descriptor(b, self.b_t, bb),
                _descriptor(b, self.b_t, bb2), _descriptor(c, False, cb),
                _descriptor(c, False, cb2), c, sa, sb)


def boxes(config: TileConfig, a_t: bool, b_t: bool) -> tuple[list[int], ...]:
    """A's, B's two and C's two descriptor boxes (operands described transposed the
    other way round, as in matmul_tma.operand_boxes)."""
    bm, bk = config.block_m, config.block_k
    n0, n1 = wide_parts(config.block_n)
    return ([bk, bm] if a_t else [bm, bk], [n0, bk] if b_t else [bk, n0],
            [n1, bk] if b_t else [bk, n1], [bm, n0], [bm, n1])


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool) -> Recipe | None:
    """The variant's launch for tensors like these, or None when a or b cannot be
    described (matmul_tma.tma_form); C staged as the TMA variant stages it."""
    def make(a_t: bool, b_t: bool, sc: tuple) -> Launch:
        return _launch(config, a.shape[0], b.shape[1], a.shape[1], a_t, b_t, a.dtype,
                       num_sms(a.device), input_precision, is_fp32, has_scale)

    return staged_recipe(config, a, b, out, boxes, WideRecipe, make)


@functools.lru_cache(maxsize=1024)
def _launch(config: TileConfig, M: int, N: int, K: int, a_t: bool, b_t: bool,
            dtype: torch.dtype, sms: int, input_precision: str, is_fp32: bool,
            has_scale: bool) -> Launch:
    """The kernel's launch but for its tensors, made once per shape, layout, operand
    dtype, tile and flags (as matmul_tma._launch)."""
    bm = config.block_m
    n0, n1 = wide_parts(config.block_n)
    grid = (min(sms, cdiv(M, bm) * cdiv(N, n0 + n1)),)
    kw = dict(BLOCK_M=bm, N0=n0, N1=n1, BLOCK_K=config.block_k, GROUP_M=config.group_m,
              NUM_SMS=sms, A_T=a_t, B_T=b_t, INPUT_PRECISION=input_precision,
              IS_FP32=is_fp32, HAS_SCALE=has_scale, num_stages=config.num_stages,
              num_warps=config.num_warps)
    return Launch(_tma_wide_kernel, grid, (M, N, K), kw)


def launcher(config: TileConfig, a, b, out, sa, sb, **flags) -> Callable[[], None] | None:
    """The variant's launch for these tensors, prepared, or None (`recipe`)."""
    r = recipe(config, a, b, out, **flags)
    return None if r is None else r.bind(a, b, out, sa, sb)
