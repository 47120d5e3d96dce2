"""The gemv variant: a row of A (decode-like M) times a wide B, on the CUDA cores.

At M of 1 or 2 the product is a read of B: 2 x M x N x K flops over N x K elements, far
below any tensor core's rate. The tiled kernel's thinnest dot is 16 rows, so at M = 1 it
computes 16 times the product and runs B's stream through a shared-memory pipeline sized
for a GEMM (IEEE fp32 1 x 4096 x 4096: 2.2 TB/s of B, cuBLAS 2.7; session 20, call G).
This kernel does no dot: each program takes one row of A, loads a BLOCK_K x BLOCK_N tile of
B into registers (vectorised along whichever of B's axes is contiguous), multiplies it by
the row's BLOCK_K slice and accumulates the products elementwise into a BLOCK_K x BLOCK_N
fp32 accumulator; the sum over K happens once, after the loop, so the loop itself is
loads and FMAs. Inputs are widened to fp32 before the multiply: IEEE fp32 stays IEEE,
16-bit and fp8 products are exact in fp32. B's loads are marked evict-first: B is read
once, so its lines should leave L2 before anything else (IEEE fp32 1 x 4096 x 4096 with
the L2 flushed: 30.1 us without the hint, 26.5 with it; session 21, call C). Two rows a
program with a 3-D accumulator ran 2 x 28672 x 8192 rc at 0.87-0.93 of cuBLAS where one
row ran 0.99, and a column-major A at x0.09 (calls D and E): one row it is (BLOCK_M = 1).

Grid (M, N blocks, SPLIT_K): the programs of one B tile run one after another (the second
row's read mostly hits L2), and K split into ranges gives a 4096-wide output enough
programs to fill the SMs. With SPLIT_K > 1 the partials go to a (SPLIT_K, M, N) fp32
workspace that the tiled variant's reduction sums in a fixed order (deterministic), scales
(fp8) and casts, as split-K does there. Columns past N wrap on load (always in bounds) and
are masked on store; strides carry their power-of-two factor as a constexpr
(kernels/matmul_tiled.py, `_split_stride`), and so does N, whose wrap would otherwise hide
the contiguity of a row of B where N is not a multiple of 16 (1000): loads vectorise
wherever B's rows start on 16 bytes and, B row-major, N is a multiple of 4.
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

from kernels.jit_parts import pointer_strides, store_tile, wide
from kernels.launch import Launch
from kernels.matmul_tiled import (
    Recipe,
    _k_per_split,
    _reduce_kernel,
    _split_stride,
    reduction,
    splits,
)
from kernels.tile import TileConfig, cdiv, wide_offsets


@triton.jit
def _gemv_kernel(
    a_ptr, b_ptr, c_ptr, ws_ptr, scale_a_ptr, scale_b_ptr,
    M, N_DIV, K, K_PER_SPLIT,
    sam, sak, sbk, sbn, scm, scn,
    G_AM: tl.constexpr, G_AK: tl.constexpr, G_BK: tl.constexpr, G_BN: tl.constexpr,
    G_N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr, HAS_SCALE: tl.constexpr, I64: tl.constexpr,
):
    N = N_DIV * G_N
    stride_am, stride_ak, stride_bk, stride_bn, scm, scn = pointer_strides(
        sam, sak, sbk, sbn, scm, scn, G_AM, G_AK, G_BK, G_BN, I64)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    k_start = pid_k * K_PER_SPLIT
    k_len = min(K - k_start, K_PER_SPLIT)
    b_ptrs = b_ptr + (k_start + offs_k[:, None]) * stride_bk \
        + (offs_n % N)[None, :] * stride_bn
    a_ptrs = a_ptr + pid_m * stride_am + (k_start + offs_k) * stride_ak
    # products and sums fused (`tl.fma`: one rounding each), as Triton up to 3.9 contracts
    # `acc += a * b` by default; 3.10 stops contracting unless TRITON_DEFAULT_FP_FUSION=1
    acc = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    for _ in range(0, k_len // BLOCK_K):
        a = tl.load(a_ptrs).to(tl.float32)
        b = tl.load(b_ptrs, eviction_policy="evict_first").to(tl.float32)
        acc = tl.fma(a[:, None], b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    k_left = k_len % BLOCK_K
    if k_left > 0:
        a = tl.load(a_ptrs, mask=offs_k < k_left, other=0.0).to(tl.float32)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0,
                    eviction_policy="evict_first").to(tl.float32)
        acc = tl.fma(a[:, None], b, acc)
    out = tl.sum(acc, axis=0)[None, :]
    store_tile(out, c_ptr, ws_ptr, scale_a_ptr, scale_b_ptr, offs_m, offs_n, M, N, pid_k,
               scm, scn, SPLIT_K, HAS_SCALE)


KERNELS = (_gemv_kernel, _reduce_kernel, store_tile, pointer_strides, wide)   # its source
# host parts that decide a constexpr the entry's tile does not hold (the G_* stride
# factors, I64): in the source hash too (kernels/table_file.variant_hash)
COMPILED_IN = ("_split_stride", "wide_offsets")


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool) -> Recipe:
    """The gemv variant's launches for tensors like these (the tiled variant's Recipe:
    the main launch and, with split-K, the reduction over a workspace). The kernel
    multiplies on the CUDA cores in fp32, whatever `input_precision` names: the dispatcher
    sends it IEEE fp32 calls only (kernels/dispatch.py); a caller's `config` may run it
    on 16-bit or fp8 inputs too."""
    M, K = a.shape
    N = b.shape[1]
    main, reduce = _launches(config, M, N, K, a.stride(), b.stride(), out.stride(),
                             has_scale)
    return Recipe(main, reduce, (splits(config, K), M, N))


@functools.lru_cache(maxsize=1024)
def _launches(config: TileConfig, M: int, N: int, K: int, sa: tuple, sb: tuple, sc: tuple,
              has_scale: bool) -> tuple[Launch, Launch | None]:
    k_per = _k_per_split(config, K)
    split = splits(config, K)
    (sam, g_am), (sak, g_ak) = _split_stride(sa[0]), _split_stride(sa[1])
    (sbk, g_bk), (sbn, g_bn) = _split_stride(sb[0]), _split_stride(sb[1])
    n_div, g_n = _split_stride(N)
    grid = (cdiv(M, config.block_m), cdiv(N, config.block_n), split)
    kw = dict(G_AM=g_am, G_AK=g_ak, G_BK=g_bk, G_BN=g_bn, G_N=g_n, BLOCK_M=config.block_m,
              BLOCK_N=config.block_n, BLOCK_K=config.block_k, SPLIT_K=split,
              HAS_SCALE=has_scale, I64=wide_offsets(((M, K), sa), ((K, N), sb), ((M, N), sc)),
              num_stages=config.num_stages, num_warps=config.num_warps)
    main = Launch(_gemv_kernel, grid, (M, n_div, K, k_per, sam, sak, sbk, sbn, *sc), kw)
    return main, (None if split == 1 else reduction(M, N, sc, split, has_scale))
