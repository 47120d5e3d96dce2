"""The Triton kernels' shared `@triton.jit` pieces: each inlined where it is called, so a
kernel's PTX is the same as with the piece written out (scripts/restamp.py compared it),
and each is in the hashed source (`KERNELS`) of every variant whose kernel calls it."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def load_oriented(desc, off_r, off_c, T: tl.constexpr):
    """The tile at rows `off_r`, columns `off_c` of the matrix `desc` reads; `T`: `desc`
    holds the matrix transposed (its block is the tile's transpose). A reads as
    (off_m, off_k), B as (off_k, off_n)."""
    if T:
        x = desc.load([off_c, off_r]).T
    else:
        x = desc.load([off_r, off_c])
    return x


@triton.jit
def dot_acc(a, b, acc, INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr):
    """acc + a @ b on the tensor cores: fp32 operands at the mode's input precision (tf32,
    tf32x3, or IEEE on the FMA units), 16-bit and fp8 operands as they are."""
    if IS_FP32:
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    else:
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def wide(x, I64: tl.constexpr):
    """`x` (a stride, or a stride Triton made a constant 1) in 64 bits where `I64`: an
    operand whose elements lie 2**31 or more from its base (`tile.wide_offsets`), whose
    int32 offsets would wrap (a view into a large buffer read rows 4 GiB away, session 57);
    as it is otherwise, so those kernels compile to the same code as without it."""
    if I64:
        x = tl.cast(x, tl.int64)
    return x


@triton.jit
def pointer_strides(sam, sak, sbk, sbn, scm, scn, G_AM: tl.constexpr, G_AK: tl.constexpr,
                    G_BK: tl.constexpr, G_BN: tl.constexpr, I64: tl.constexpr):
    """The pointer kernels' (tiled, gemv) strides of A, B and C: A's and B's each a runtime
    part times its power-of-two factor (the constexpr G_*, known to the compiler's address
    arithmetic), all of them in 64 bits where `I64` (`wide`)."""
    return (wide(sam * G_AM, I64), wide(sak * G_AK, I64), wide(sbk * G_BK, I64),
            wide(sbn * G_BN, I64), wide(scm, I64), wide(scn, I64))


@triton.jit
def store_tile(acc, c_ptr, ws_ptr, scale_a_ptr, scale_b_ptr, offs_m, offs_n, M, N, pid_k,
               scm, scn, SPLIT_K: tl.constexpr, HAS_SCALE: tl.constexpr):
    """The pointer kernels' epilogue (tiled, gemv): unsplit, the tile scaled (fp8) and
    stored into C in its dtype; split, its fp32 partial stored into the workspace at
    range `pid_k` (summed by `_reduce_kernel`)."""
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if SPLIT_K == 1:
        if HAS_SCALE:
            acc = acc * (tl.load(scale_a_ptr) * tl.load(scale_b_ptr))
        c_ptrs = c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)
    else:
        w_ptrs = ws_ptr + pid_k * M * N + offs_m[:, None] * N + offs_n[None, :]
        tl.store(w_ptrs, acc, mask=mask)


@triton.jit
def grouped_tile(tile_id, num_pid_in_group, num_pid_m, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of output tile `tile_id` when tiles run in groups of GROUP_M tile
    rows, column by column within a group (`num_pid_in_group`: GROUP_M x the tile
    columns), so that programs running at once share A's and B's tiles in L2."""
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def k_step(a_desc, b_desc, acc, off_m, off_n, off_k, A_T: tl.constexpr, B_T: tl.constexpr,
           INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr, B_FIRST: tl.constexpr):
    """One K block of a TMA tile into `acc`: A's and B's tiles loaded (B's first where
    `B_FIRST`: an FMA dot on Triton 3.7+, kernels/fma.py), then the dot."""
    if B_FIRST:
        b = load_oriented(b_desc, off_k, off_n, B_T)
    a = load_oriented(a_desc, off_m, off_k, A_T)
    if not B_FIRST:
        b = load_oriented(b_desc, off_k, off_n, B_T)
    return dot_acc(a, b, acc, INPUT_PRECISION, IS_FP32)
