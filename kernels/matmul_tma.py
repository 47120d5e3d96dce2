"""The TMA variant: a persistent GEMM fed by Hopper's tensor-memory accelerator.

NUM_SMS programs (one per SM; for IEEE fp32 up to three, `programs_per_sm`) walk the
output tiles tile_id = pid, pid + NUM_SMS, ... in grouped order (GROUP_M tile-rows share
B tiles in L2). Operands arrive through host-built tensor descriptors
(triton.tools.tensor_descriptor): the copy engine moves whole BLOCK x BLOCK boxes into
shared memory, zero-filling what lies past M, N or K, so the kernel has no masks and no
address arithmetic, and a K of 1000 or 253 needs no tail code. `tl.range(...,
flatten=True)` lets Triton pipeline across tile boundaries (the next tile's first loads
overlap this tile's last dots and epilogue).

Layouts: a descriptor's last dimension must be contiguous, so a column-major operand is
described transposed (A_T / B_T) and transposed back in shared memory (`.T`), which
wgmma takes for 16-bit types. tf32 and fp8 wgmma take K-major operands only: the
dispatcher (kernels/dispatch.py) hands this kernel K-major copies where needed.
Descriptors need 16-byte aligned base and leading dimension; the dispatcher checks.
C is stored through a descriptor too: into `out` when it is aligned, else into an aligned
staging buffer copied into `out` (the launcher); IEEE fp32 into an unaligned `out` by
masked pointer stores (C_TMA=False).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels.fma import b_first
from kernels.jit_parts import dot_acc, grouped_tile, k_step, load_oriented, wide
from kernels.launch import Bound, Launch
from kernels.past_n import b_extent
from kernels.relayout import LINE, aligned_empty, copy_launch, pitch, unstage_launch
from kernels.tile import CTA_SMEM, TileConfig, cdiv, wide_offsets


@triton.jit
def _tma_kernel(
    a_desc, b_desc, c_desc, c_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K, scm, scn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
    A_T: tl.constexpr, B_T: tl.constexpr, C_TMA: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr, HAS_SCALE: tl.constexpr,
    B_FIRST: tl.constexpr = False, I64: tl.constexpr = False,
):
    scm = wide(scm, I64)   # C by pointer (not C_TMA) past 2**31 elements
    scn = wide(scn, I64)
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    if HAS_SCALE:
        scale = tl.load(scale_a_ptr) * tl.load(scale_b_ptr)
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            acc = k_step(a_desc, b_desc, acc, off_m, off_n, off_k, A_T, B_T, INPUT_PRECISION,
                         IS_FP32, B_FIRST)
        if HAS_SCALE:
            acc = acc * scale
        c = acc.to(c_ptr.dtype.element_ty)
        if C_TMA:
            c_desc.store([off_m, off_n], c)
        else:
            offs_m = off_m + tl.arange(0, BLOCK_M)
            offs_n = off_n + tl.arange(0, BLOCK_N)
            c_ptrs = c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn
            tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


KERNELS = (_tma_kernel, k_step, load_oriented, dot_acc, grouped_tile, wide)   # its source
# host parts that decide a constexpr the entry's tile does not hold: in the source hash too
COMPILED_IN = ("b_first", "wide_offsets")   # (kernels/table_file.variant_hash)


def describable(shape: tuple, stride: tuple, elem: int) -> bool | None:
    """Whether a tensor descriptor can take a 2-D operand of this shape and strides: as
    it is (False), transposed (True: column-major), or not at all (None). The last
    dimension must be contiguous and the leading one 16-byte aligned."""
    if stride[1] == 1 and (stride[0] * elem) % 16 == 0 and stride[0] >= shape[1]:
        return False
    if stride[0] == 1 and (stride[1] * elem) % 16 == 0 and stride[1] >= shape[0]:
        return True
    return None


def tma_form(x: torch.Tensor) -> bool | None:
    """How a tensor descriptor takes x: row-major (False), transposed (True: x is
    column-major), or not at all (None: `describable` says no, or the base is not 16-byte
    aligned)."""
    if x.data_ptr() % 16:
        return None
    return describable(x.shape, x.stride(), x.element_size())


def tma_operands(a: torch.Tensor, b: torch.Tensor) -> tuple[bool, bool, int, int, int] | None:
    """(how a descriptor takes a and b (`tma_form`), M, N, K), or None where it takes
    either not at all, or a dimension is 0 (a descriptor's box needs every extent
    positive: a `config=` naming a TMA variant on K = 0 failed inside Triton): where each
    TMA variant's recipe starts."""
    if not (a.shape[0] and a.shape[1] and b.shape[1]):
        return None
    a_t, b_t = tma_form(a), tma_form(b)
    if a_t is None or b_t is None:
        return None
    return a_t, b_t, a.shape[0], b.shape[1], a.shape[1]


@functools.cache
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def num_sms(device: torch.device) -> int:
    return 4 if device.type == "cpu" else _sm_count(device.index or 0)


@functools.cache
def _sm_smem(device_index: int) -> int:
    """Shared memory per SM (a torch without the field: the per-block opt-in limit and
    the one program's reserve, 228 KiB on the H200)."""
    p = torch.cuda.get_device_properties(device_index)
    return getattr(p, "shared_memory_per_multiprocessor", 0) or \
        p.shared_memory_per_block_optin + CTA_SMEM


_FMA_RESIDENT = 3   # IEEE fp32: programs per SM at most (`programs_per_sm`)


def programs_per_sm(config: TileConfig, input_precision: str, is_fp32: bool,
                    device: torch.device) -> int:
    """The persistent grid's programs per SM: the tile's `occupancy` for the wgmma modes
    (16-bit, fp8, tf32: one program's warps keep the tensor cores busy on a large tile; two
    of a small tile interleave, kernels/tile.py); for IEEE fp32, which runs on the FMA
    units, as many as the SM's shared memory holds, up to `_FMA_RESIDENT`: one program
    of 4 warps per SM left the FMA units waiting on latency (TMA 64x64x32 ran 0.56-0.76
    of cuBLAS on mid shapes where the same tile with many programs, split-K 2, ran
    0.83-0.97; session 22, call A)."""
    if not is_fp32 or input_precision != "ieee" or device.type == "cpu":
        return config.occupancy
    per_sm = _sm_smem(device.index or 0) // (config.smem_bytes(4) + CTA_SMEM)
    return max(1, min(_FMA_RESIDENT, per_sm))


def _descriptor(t: torch.Tensor, transposed: bool, block: list[int], cols: int = 0
                ) -> TensorDescriptor:
    """A host descriptor of t (of t.T when `transposed`, without making the view) built
    without from_tensor's per-call validation: the launcher checked it (`tma_form`), and
    this runs on every eager call. `cols`: t's columns as described, past its own where
    its memory holds zeros there (B's N, `b_extent`)."""
    (r, c), (sr, sc) = t.shape, t.stride()
    c = cols or c
    d = object.__new__(TensorDescriptor)
    d.__dict__.update(_descriptor_defaults(), base=t, block_shape=block,
                      shape=[c, r] if transposed else [r, c],
                      strides=[sc, sr] if transposed else [sr, sc])
    return d


@functools.cache
def _descriptor_defaults() -> dict[str, object]:
    """TensorDescriptor's fields with defaults (this triton's), read once."""
    return {f.name: f.default for f in dataclasses.fields(TensorDescriptor)
            if f.default is not dataclasses.MISSING}


class StagedC:
    """`launch` and `bind` of a TMA recipe whose C may go through an aligned staging
    buffer (tma, tma_wide and tma_tall, tma_ws): the recipe has the fields `run`,
    `staged`, `unstage` and `repeats`, and `_args(a, b, c, sa, sb)`, the kernel's
    leading arguments for C at `c`."""

    def launch(self, a, b, out, sa, sb) -> None:
        """bind(...)(); a call on tensors at addresses launched before (on this device
        and stream) takes its bound launch (kernels/launch.py), the staging buffer's
        included (the caching allocator's block of the call before)."""
        c = _stage(out, "c") if self.staged else out
        pa = a.data_ptr()   # unscaled modes pass a for both scales (read once)
        self.repeats.run(
            (pa, b.data_ptr(), c.data_ptr(), pa if sa is a else sa.data_ptr(),
             pa if sb is a else sb.data_ptr()),
            self.run, lambda: self._args(a, b, c, sa, sb))
        if c is not out:
            unstage(self.unstage, c, out)

    def bind(self, a, b, out, sa, sb) -> Callable[[], None]:
        stage = _stage(out) if self.staged else None
        c = out if stage is None else stage
        return bound(self.run, self._args(a, b, c, sa, sb), stage, out, self.unstage)


@dataclass(frozen=True)
class Recipe(StagedC):
    """The TMA variant's launch for operands of given shapes, layouts and alignment: all
    but the descriptors, which `bind` builds from a call's tensors."""

    run: Launch
    a_t: bool
    b_t: bool
    blocks: tuple[list[int], list[int], list[int]]   # A's, B's, C's descriptor boxes
    staged: bool
    unstage: Launch | None = None   # the staged C's copy into a row-major `out`
    b_cols: int = 0                 # B's N as its descriptor reads it (`b_extent`)
    repeats: Bound = field(default_factory=Bound, compare=False, repr=False)

    @property
    def c_tma(self) -> bool:
        """Whether the kernel stores C through a descriptor (else by masked pointer stores
        into `out`): the launch's C_TMA."""
        return self.run.kw["C_TMA"]

    def _args(self, a, b, c, sa, sb) -> tuple:
        """The kernel's leading arguments: A's, B's and C's descriptors, then C and the
        scales."""
        ab, bb, cb = self.blocks
        # C by pointer stores: the kernel never reads its descriptor argument, which must
        # still encode (its rows are not 16-byte aligned): A's memory stands in, as an
        # operand of C's dtype (`recipe`), with C's box
        c_desc = _descriptor(c, False, cb) if self.c_tma else _descriptor(a, self.a_t, cb)
        return (_descriptor(a, self.a_t, ab), _descriptor(b, self.b_t, bb, self.b_cols),
                c_desc, c, sa, sb)


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool, b_room: int = 0) -> Recipe | None:
    """The TMA variant's launch for tensors like these, or None when a or b cannot be
    described (`tma_form`); C is stored through a descriptor, into `out` or into an
    aligned staging buffer copied into `out`. `b_room`: zeros past B's N (`b_extent`)."""
    got = tma_operands(a, b)
    if got is None:
        return None
    a_t, b_t, M, N, K = got
    # C rows a descriptor cannot take (N = 4097 bf16): stage C in an aligned buffer and
    # copy it into `out` after; the kernel's masked pointer stores ran the whole GEMM at
    # 0.51-0.59 of the aligned speed (session 9, fp8 and bf16 4096 x 4097 x 4096). IEEE
    # fp32 (FMA units, three programs per SM) stores by pointer instead: its stores
    # overlap the other programs' dots, where the staged C's copy is a pass of its own
    # over twice C's bytes (session 24).
    described = tma_form(out) is False
    pointer_c = not described and is_fp32 and input_precision == "ieee" \
        and a.dtype == out.dtype
    staged = not described and not pointer_c
    sc = (pitch(N, out.element_size(), LINE), 1) if staged else out.stride()
    programs = num_sms(a.device) * programs_per_sm(config, input_precision, is_fp32,
                                                      a.device)
    run = _launch(config, M, N, K, a_t, b_t, sc, a.dtype, programs, input_precision, is_fp32,
                  has_scale, not pointer_c)
    blocks = (*operand_boxes(config, a_t, b_t), [config.block_m, config.block_n])
    return Recipe(run, a_t, b_t, blocks, staged, unstager(out, sc[0]) if staged else None,
                  b_extent(config, N, b_room))


def unstager(out: torch.Tensor, stage_pitch: int) -> Launch | None:
    """The launch that copies a staged C (rows `stage_pitch` elements apart) into `out`:
    for a contiguous `out` the flat copy, whose stores are whole vectors (session 17); for
    other row-major strides the copy kernel (torch's strided copy ran at ~1.7 TB/s, 91 us
    of a 131 us fp8 4933 x 7763 x 186 call, session 11); None (torch's copy) otherwise."""
    M, N = out.shape
    if out.stride(1) != 1 or not (M and N):
        return None
    return unstage_launch(M, N, stage_pitch) if out.stride(0) == N or M == 1 \
        else copy_launch(M, N, stage_pitch, 1, out.stride(0))


def unstage(launch: Launch | None, stage: torch.Tensor, out: torch.Tensor) -> None:
    """Copy the staged C into `out` (`unstager`'s launch, or torch's copy)."""
    if launch is None:
        out.copy_(stage)
    else:
        launch.fast(stage, out)


def bound(run: Launch, args: tuple, stage: torch.Tensor | None, out: torch.Tensor,
          unstage_with: Launch | None) -> Callable[[], None]:
    """A recipe's prepared call: the kernel on its bound arguments, then the staged C's
    copy into `out` where C was staged."""
    if stage is None:
        return lambda: run(*args)

    def staged() -> None:
        run(*args)
        unstage(unstage_with, stage, out)

    return staged


def _stage(out: torch.Tensor, role: str | None = None) -> torch.Tensor:
    """The aligned buffer a C that `out` cannot take is stored into: rows on whole
    128-byte lines, as kept operand copies are (their TMA loads ran ~28% faster so,
    session 14), and a pitch of 16 elements or more, which the unstaging copy reads
    (`role`: a buffer kept for the next call, kernels/scratch.py; a bound launch holds
    its own)."""
    return aligned_empty(*out.shape, out.dtype, out.device, LINE, role)


def operand_boxes(config: TileConfig, a_t: bool, b_t: bool) -> tuple[list[int], list[int]]:
    """A's and B's descriptor boxes for a tile: BLOCK_M x BLOCK_K and BLOCK_K x BLOCK_N,
    each the other way round for an operand described transposed (`tma_form`)."""
    bm, bn, bk = config.block_m, config.block_n, config.block_k
    return [bk, bm] if a_t else [bm, bk], [bn, bk] if b_t else [bk, bn]


def launcher(config: TileConfig, a, b, out, sa, sb, **flags) -> Callable[[], None] | None:
    """The TMA variant's launch for these tensors, prepared, or None (`recipe`)."""
    r = recipe(config, a, b, out, **flags)
    return None if r is None else r.bind(a, b, out, sa, sb)


@functools.lru_cache(maxsize=1024)
def _launch(config: TileConfig, M: int, N: int, K: int, a_t: bool, b_t: bool, sc: tuple,
            dtype: torch.dtype, sms: int, input_precision: str, is_fp32: bool,
            has_scale: bool, c_tma: bool = True) -> Launch:
    """The kernel's launch but for its tensors, made once per shape, layout, operand
    dtype, tile and flags (kernels/launch.py: the descriptors' specialization, their
    dtype and block shape, is fixed by these)."""
    bm, bn = config.block_m, config.block_n
    grid = (min(sms, cdiv(M, bm) * cdiv(N, bn)),)
    kw = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=config.block_k, GROUP_M=config.group_m,
              NUM_SMS=sms, A_T=a_t, B_T=b_t, C_TMA=c_tma, INPUT_PRECISION=input_precision,
              IS_FP32=is_fp32, HAS_SCALE=has_scale,
              B_FIRST=b_first(input_precision, is_fp32),
              I64=not c_tma and wide_offsets(((M, N), sc)),
              num_stages=config.num_stages,
              num_warps=config.num_warps)
    return Launch(_tma_kernel, grid, (M, N, K, *sc), kw)


def launch(config: TileConfig, a, b, out, sa, sb, **flags) -> None:
    launcher(config, a, b, out, sa, sb, **flags)()
