"""The TMA wide variant: the persistent TMA GEMM on tiles a power of two plus a smaller
power of two wide (BLOCK_N = 96, 144, 160, 192, ...), which fill the SMs' waves, or cover
N, where power-of-two tiles do not.

cuBLAS sizes its tiles to the wave: 7904 x 384 x 3744 makes 124 tiles of 128x192 on the
H200's 132 SMs, where 128x128 makes 186 (1.4 waves) and 128x256 62 (half the SMs idle).
Triton's blocks are powers of two, so a 192-wide tile is two: BLOCK_N0 = 128 and
BLOCK_N1 = 64, side by side (kernels/tile.py `wide_parts`: 160 is 128 + 32, 144 128 +
16). Each K step loads A's box once and B's two boxes, and issues two dots on the one A
tile into two accumulators; the epilogue stores two boxes of C. Everything else is the
TMA kernel's (kernels/matmul_tma.py): the persistent grid of one program per SM in
grouped tile order, host-built descriptors zero-filled past M, N and K, column-major
operands described transposed, C stored through a descriptor into `out` or a staging
buffer copied into it.

The tall form (`tma_tall`, a tile `block_m` a power of two plus a smaller one tall) is
this kernel on C.T = B.T @ A.T: the call's B.T is the kernel's A and A.T its B (described
transposed where they are row-major), the tile's block_n its BLOCK_M and its block_m its
two parts, and each part of C is stored transposed (`C_T`) through descriptors of C
itself. 6040 x 328 x 4560 fp8 makes 126 tiles of 144x128, one wave, where cuBLAS runs
144x128 too (session 37). Over a row-major B (the kernel's A, B.T, then MN-major in
shared memory) a 16-bit block cost ~1.2x a wide one's; over a column-major B it ran faster
than a wide tile of its size (session 38): the dispatcher offers the tall form where B is
K-major (fp8's copies always are).

A tile wider than 256 (a tall one taller: 288, 320) stores C from its registers by
masked pointer stores (`C_PTR`, kernels/tile.py `c_by_pointer`): its C box (80 KiB for a
16-bit 128x320) would take the shared memory of the third pipeline stage. The stores are
told the vector C's columns and pitch both allow (`_c_vec`), and the pitch is not
specialized otherwise: told a 16-aligned pitch but not N, fp8's padded C ran 0.54-0.57 of
cuBLAS (session 42, call 4). Such a tile covers shapes of 1-1.2 waves of 128x256 in one
wave: 16-bit 128x320x64 ran 14 of them at 0.90 of cuBLAS where the picks ran 0.79.

The tile loop is not flattened (`_tma_kernel`'s `flatten=True`): flattened, ptxas
(triton 3.6, sm_90a) serializes the two accumulators' wgmma ("C7515: non wgmma
instructions defining accumulator registers"), and 128x192 ran 4096^3 bf16 at 0.58 of
cuBLAS where 128x256 ran 1.00 (session 33, call 2).

Each K step issues the narrow part's dot before the wide part's: so ordered, 128x192x64
ran 7904 x 384 x 3744 bf16 in 42.1 us and 4096^3 in 229 where the wide part first took
45.7 and 254 (session 35, call 2). The tensor pipe, not shared memory, is what the wide
tile leaves idle: ncu had it busy 67-69% of the cycles against 90-94% for 128x256, with
the shared-memory banks at 25% of their peak (call 1); A held in registers (read once a
step for both dots) ran slower, 278 us at 4096^3.

The loop is `_tma_kernel`'s with two B boxes and two dots, made of the same
kernels/jit_parts.py pieces (the load, the dot, the grouped tile order).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import triton
import triton.language as tl

from kernels.jit_parts import dot_acc, grouped_tile, load_oriented, wide
from kernels.launch import Bound, Launch
from kernels.matmul_tma import (
    StagedC,
    _descriptor,
    num_sms,
    tma_form,
    tma_operands,
    unstager,
)
from kernels.past_n import b_extent
from kernels.relayout import LINE, pitch
from kernels.tile import TileConfig, c_by_pointer, cdiv, wide_offsets, wide_parts


@triton.jit(do_not_specialize=["c_row"])
def _wide_kernel(
    a_desc, b0_desc, b1_desc, c0_desc, c1_desc, c_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K, c_row,
    BLOCK_M: tl.constexpr, BLOCK_N0: tl.constexpr, BLOCK_N1: tl.constexpr,
    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
    A_T: tl.constexpr, B_T: tl.constexpr, C_T: tl.constexpr, C_PTR: tl.constexpr,
    C_VEC: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr, HAS_SCALE: tl.constexpr,
    I64: tl.constexpr,
):
    start_pid = tl.program_id(0)
    BLOCK_N: tl.constexpr = BLOCK_N0 + BLOCK_N1
    if C_PTR:   # C's pitch and the extent along its rows, multiples of C_VEC (`_c_vec`)
        c_row = wide(tl.multiple_of(c_row, C_VEC), I64)   # past 2**31 elements: 64 bits
        if C_T:
            M = tl.multiple_of(M, C_VEC)
        else:
            N = tl.multiple_of(N, C_VEC)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    if HAS_SCALE:
        scale = tl.load(scale_a_ptr) * tl.load(scale_b_ptr)
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = grouped_tile(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n0 = pid_n * BLOCK_N
        off_n1 = off_n0 + BLOCK_N0
        acc0 = tl.zeros((BLOCK_M, BLOCK_N0), dtype=tl.float32)
        acc1 = tl.zeros((BLOCK_M, BLOCK_N1), dtype=tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            a = load_oriented(a_desc, off_m, off_k, A_T)
            b0 = load_oriented(b0_desc, off_k, off_n0, B_T)
            b1 = load_oriented(b1_desc, off_k, off_n1, B_T)
            # the narrow part's dot first (the module docstring)
            acc1 = dot_acc(a, b1, acc1, INPUT_PRECISION, IS_FP32)
            acc0 = dot_acc(a, b0, acc0, INPUT_PRECISION, IS_FP32)
        if HAS_SCALE:
            acc0 = acc0 * scale
            acc1 = acc1 * scale
        if C_PTR:   # C from registers: no C box in shared memory (`c_by_pointer`)
            offs_m = off_m + tl.arange(0, BLOCK_M)
            offs_n0 = off_n0 + tl.arange(0, BLOCK_N0)
            offs_n1 = off_n1 + tl.arange(0, BLOCK_N1)
            if C_T:   # the call's C transposed: the kernel's M runs along C's rows
                p0 = c_ptr + offs_m[:, None] + offs_n0[None, :] * c_row
                p1 = c_ptr + offs_m[:, None] + offs_n1[None, :] * c_row
            else:
                p0 = c_ptr + offs_m[:, None] * c_row + offs_n0[None, :]
                p1 = c_ptr + offs_m[:, None] * c_row + offs_n1[None, :]
            rows = offs_m[:, None] < M
            tl.store(p0, acc0.to(c_ptr.dtype.element_ty), mask=rows & (offs_n0[None, :] < N))
            tl.store(p1, acc1.to(c_ptr.dtype.element_ty), mask=rows & (offs_n1[None, :] < N))
        elif C_T:   # the tall form: this C is the call's C transposed (module docstring)
            c0_desc.store([off_n0, off_m], acc0.to(c_ptr.dtype.element_ty).T)
            c1_desc.store([off_n1, off_m], acc1.to(c_ptr.dtype.element_ty).T)
        else:
            c0_desc.store([off_m, off_n0], acc0.to(c_ptr.dtype.element_ty))
            c1_desc.store([off_m, off_n1], acc1.to(c_ptr.dtype.element_ty))


KERNELS = (_wide_kernel, load_oriented, dot_acc, grouped_tile, wide)   # its source (the hash)
# host parts that decide a constexpr the entry's tile does not hold (C stored by pointer past
# C_BOX_MAX, the two boxes' widths, the pointer store's vector, I64): in the source hash
# too (kernels/table_file.variant_hash)
COMPILED_IN = ("c_by_pointer", "wide_parts", "_c_vec", "wide_offsets")


@dataclass(frozen=True)
class Recipe(StagedC):
    """The variant's launch for operands of given shapes, layouts and alignment; C's
    staging copy where `out` is not describable (matmul_tma's rules)."""

    run: Launch
    a_t: bool
    b_t: bool
    blocks: tuple[list[int], ...]   # A's, B's two, C's two descriptor boxes
    staged: bool
    unstage: Launch | None = None
    tall: bool = False              # `tma_tall`: the kernel runs C.T = B.T @ A.T
    b_cols: int = 0                 # B's N as both its descriptors read it (`b_extent`)
    repeats: Bound = field(default_factory=Bound, compare=False, repr=False)

    def _args(self, a, b, c, sa, sb) -> tuple:
        ab, b0, b1, c0, c1 = self.blocks
        if self.tall:
            a, b = b.t(), a.t()
        return (_descriptor(a, self.a_t, ab), _descriptor(b, self.b_t, b0, self.b_cols),
                _descriptor(b, self.b_t, b1, self.b_cols), _descriptor(c, False, c0),
                _descriptor(c, False, c1), c, sa, sb)


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool, b_room: int = 0) -> Recipe | None:
    """The variant's launch for tensors like these, or None when a or b cannot be
    described (matmul_tma.tma_operands). A `tma_tall` tile runs the kernel on B.T and A.T
    (its block_m, a power of two plus a smaller one, as the kernel's BLOCK_N; its
    block_n as BLOCK_M), storing each part of C transposed into C. `b_room`: zeros past
    B's N, which a `tma_wide` tile's two B boxes read to whole tiles (`b_extent`, as the
    `tma` tile's one); a tall tile's N is A's M, which has none."""
    tall = config.variant == "tma_tall"
    got = tma_operands(b.t(), a.t()) if tall else tma_operands(a, b)
    if got is None:
        return None
    a_t, b_t, M, N, K = got
    staged = tma_form(out) is not False
    sc = (pitch(out.shape[1], out.element_size(), LINE), 1) if staged else out.stride()
    sms = num_sms(a.device) * config.occupancy
    run = _launch(config, M, N, K, sc[0], a_t, b_t, a.dtype, sms, input_precision, is_fp32,
                  has_scale)
    bm, width = _sides(config)
    bk = config.block_k
    n0, n1 = wide_parts(width)
    blocks = ([bk, bm] if a_t else [bm, bk], [n0, bk] if b_t else [bk, n0],
              [n1, bk] if b_t else [bk, n1], *(([n0, bm], [n1, bm]) if tall else
                                              ([bm, n0], [bm, n1])))
    return Recipe(run, a_t, b_t, blocks, staged, unstager(out, sc[0]) if staged else None,
                  tall, 0 if tall else b_extent(config, N, b_room))


def _sides(config: TileConfig) -> tuple[int, int]:
    """(the kernel's BLOCK_M, its two parts' width together): a `tma_wide` tile's
    (block_m, block_n); a `tma_tall` tile's (block_n, block_m)."""
    if config.variant == "tma_tall":
        return config.block_n, config.block_m
    return config.block_m, config.block_n


def _c_vec(n: int, pitch: int) -> int:
    """The largest power of two up to 16 dividing both C's columns and its row pitch (in
    elements): what the pointer epilogue tells Triton of them, so that its stores are
    vectors as wide as both allow, the column mask's included. Told the pitch alone (an
    fp8 C's rows padded to 16 elements, N = 8 mod 16), Triton vectorized by the pitch
    and stored element by element under the mask: 0.54-0.56 of cuBLAS where told
    nothing ran 0.82-0.87 (session 42, call 4); told both (N = 0 mod 16), 4-8% faster
    than told nothing."""
    v = 16
    while (n % v or pitch % v) and v > 1:
        v //= 2
    return v


@functools.lru_cache(maxsize=1024)
def _launch(config: TileConfig, M: int, N: int, K: int, c_row: int, a_t: bool, b_t: bool,
            dtype: torch.dtype, sms: int, input_precision: str, is_fp32: bool,
            has_scale: bool) -> Launch:
    """The kernel's launch but for its tensors (M, N: the kernel's, B.T's and A.T's for
    a tall tile; `c_row`: C's row pitch): the persistent grid (one program per SM, or
    `occupancy`), no more programs than tiles. A tile that stores C by pointer is told
    the vector C allows (`_c_vec` of C's columns, the kernel's M for a tall tile); one
    that stores it through its box, 1, so that it compiles once whatever C is."""
    tall = config.variant == "tma_tall"
    pointer = c_by_pointer(config)
    c_vec = _c_vec(M if tall else N, c_row) if pointer else 1
    bm, width = _sides(config)
    n0, n1 = wide_parts(width)
    grid = (min(sms, cdiv(M, bm) * cdiv(N, width)),)
    kw = dict(BLOCK_M=bm, BLOCK_N0=n0, BLOCK_N1=n1, BLOCK_K=config.block_k,
              GROUP_M=config.group_m, NUM_SMS=sms, A_T=a_t, B_T=b_t,
              C_T=tall, C_PTR=pointer, C_VEC=c_vec, INPUT_PRECISION=input_precision,
              IS_FP32=is_fp32, HAS_SCALE=has_scale,
              I64=pointer and wide_offsets(((N, M) if tall else (M, N), (c_row, 1))),
              num_stages=config.num_stages, num_warps=config.num_warps)
    return Launch(_wide_kernel, grid, (M, N, K, c_row), kw)


def launcher(config: TileConfig, a, b, out, sa, sb, **flags) -> Callable[[], None] | None:
    """The variant's launch for these tensors, prepared, or None (`recipe`)."""
    r = recipe(config, a, b, out, **flags)
    return None if r is None else r.bind(a, b, out, sa, sb)
