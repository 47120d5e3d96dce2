"""What a tile is: a TileConfig, its validation, its shared memory and registers, and
whether a chip can run it (`usable`). kernels/configs.py chooses among them.

A TileConfig names the variant it is for and that variant's launch parameters:

- `tiled` (kernels/matmul_tiled.py): one program per BLOCK_M x BLOCK_N tile, pointer loads,
  any strides. `split_k` > 1 splits K over that many programs per tile (fp32 partials,
  then a reduction): for small M*N with a long K, where tiles alone cannot fill the SMs.
- `tma` (kernels/matmul_tma.py): persistent, `occupancy` programs per SM (1 or 2; IEEE
  fp32: as many as shared memory holds, up to three: `programs_per_sm`), operands through
  Hopper's tensor-memory descriptors. Needs 16-byte aligned operands (kernels/dispatch.py).
  Two programs of a small tile resident on one SM interleave one's loads, waits and
  epilogue with the other's dots: bf16 1152 x 1856 x 1920 ran 128x64x64 at 0.72 of cuBLAS
  with one, 0.97 with two (session 31, call 2).
- `tma_split` (kernels/matmul_tma_split.py): split-K (`split_k` K ranges per tile) with
  TMA loads, where `tma` runs: for few output tiles over a long K.
- `tma_streamk` (kernels/matmul_tma_streamk.py): the persistent TMA kernel with its last
  waves' tiles shared out by K blocks (stream-K), where the tiles fill the SMs unevenly.
- `tma_wide` (kernels/matmul_tma_wide.py): the persistent TMA GEMM on tiles a power of
  two plus a smaller one wide (`block_n` 96, 144, 160, 192, ...: two power-of-two parts side
  by side, `wide_parts`), which fill a wave or cover N where power-of-two tiles do not.
- `tma_tall` (kernels/matmul_tma_wide.py): the same kernel on C.T = B.T @ A.T, for tiles
  `block_m` a power of two plus a smaller one tall (144, 160, 192), which cover M so.
- `tma_hybrid` (kernels/matmul_tma_hybrid.py): `tma` on the tiles of the whole waves,
  `tma_split` (`split_k` K ranges) on the tiles left over, where the last wave is part full.
- `gemv` (kernels/matmul_gemv.py): decode-like M on the CUDA cores, no dot; one row of A
  a program (`block_m` 1), `split_k` the K ranges.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

VARIANTS = ("tiled", "tma", "tma_split", "tma_streamk", "tma_wide", "tma_tall", "tma_hybrid",
            "gemv", "tma_ws")
FAMILIES = ("16bit", "fp32", "fp8")
ELEM_BYTES = {"16bit": 2, "fp32": 4, "fp8": 1}
_MAX_ACC_REGS = 128  # fp32 accumulator registers per thread; more spills (255 in all)
# A tile that stores C by pointer (`c_by_pointer`) holds 160: 16-bit and fp8 128x320 on 8
# warps compiled to 255 registers with no spill or 232 bytes (triton 3.6, sm_90a); 16-bit
# 128x320x64 ran one wave at 0.82-0.99 of cuBLAS (session 42, calls 2-4); 128x384 (192)
# ran 0.77-0.87
_MAX_ACC_REGS_POINTER_C = 160
# (with `occupancy` programs resident on an SM, the register file is theirs together)
CTA_SMEM = 1024      # shared memory the hardware reserves per resident program
OCCUPANCIES = (1, 2)
WGMMA_M = 64   # wgmma's M: below it a TMA tile of 64 rows (the search's, the table's reach)
MAX_TMA_SPLIT = 64   # K ranges: the reduction reads splits x M x N fp32 partials
_PERSISTENT = ("tma", "tma_wide", "tma_tall", "tma_hybrid", "tma_ws")   # may run 2 an SM
_SPLITTING = ("tiled", "tma_split", "tma_hybrid", "gemv")   # split_k may be > 1


# A `tma_wide` tile wider than C_BOX_MAX (a `tma_tall` one taller) stores C from its
# registers by pointer: its C box would take the shared memory of a pipeline stage (16-bit
# 128x320x64 at 3 stages: 172 KiB of stages and 80 KiB of C, past the H200's 227 KiB).
C_BOX_MAX = 256


def c_by_pointer(c: TileConfig) -> bool:
    """Whether the tile stores C by pointer, holding no C box in shared memory."""
    if c.variant == "tma_wide":
        return c.block_n > C_BOX_MAX
    return c.variant == "tma_tall" and c.block_m > C_BOX_MAX


def pow2_floor(x: int) -> int:
    """The largest power of two not above `x` (1 for x < 1)."""
    return 1 << (max(x, 1).bit_length() - 1)


def wide_parts(width: int, name: str = "block_n") -> tuple[int, int]:
    """A `tma_wide` tile's (a `tma_tall` tile's rows') two power-of-two parts, side by
    side: the largest power of two below `width` and the rest, itself a power of two of
    16 or more (192 -> 128 + 64, 160 -> 128 + 32, 144 -> 128 + 16, 96 -> 64 + 32)."""
    wide = pow2_floor(width)
    if wide == width:
        wide //= 2
    rest = width - wide
    if rest < 16 or rest & (rest - 1) or rest >= wide:
        raise ValueError(f"{name}={width}: the tma_wide variant's tiles are a power of two "
                         "plus a smaller power of two >= 16 wide (48, 80, 96, 144, 160, 192, "
                         "288, 320, 384), the tma_tall variant's as many rows")
    return wide, rest


INT_FIELDS = ("block_m", "block_n", "block_k", "group_m", "num_stages", "num_warps",
              "split_k", "occupancy")


@dataclass(frozen=True)
class TileConfig:
    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_stages: int
    num_warps: int
    variant: str = "tiled"
    split_k: int = 1
    occupancy: int = 1   # tma: programs per SM of the persistent grid (module docstring)

    def __post_init__(self) -> None:
        for name in INT_FIELDS:   # (a float group_m or split_k failed deep in the launch,
            v = getattr(self, name)   # a float block size as "unsupported operand &")
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"TileConfig {name}={v!r}: give an int")
        for name in ("block_m", "block_n", "block_k"):
            v = getattr(self, name)
            if self.variant == "gemv" and name == "block_m":
                if v != 1:
                    raise ValueError(f"block_m={v}: the gemv variant takes one row of A "
                                     "a program (block_m=1)")
            elif (self.variant, name) in (("tma_wide", "block_n"), ("tma_tall", "block_m")) \
                    or (self.variant, name) == ("tma_ws", "block_n") and v & (v - 1):
                wide_parts(v, name)
            elif v < 16 or v & (v - 1):
                raise ValueError(f"{name}={v} must be a power of two >= 16")
        if self.group_m < 1 or self.num_stages < 1 or self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"invalid launch parameters in {self}")
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r}; known: {', '.join(VARIANTS)}")
        if self.split_k < 1:   # (it said "the tiled variant does not split K", a review)
            raise ValueError(f"split_k={self.split_k} must be >= 1 (1: K unsplit)")
        if self.split_k > 1 and self.variant not in _SPLITTING:
            raise ValueError(f"split_k={self.split_k}: the {self.variant} variant does not "
                             f"split K ({', '.join(_SPLITTING)} do)")
        if self.occupancy not in OCCUPANCIES or (
                self.occupancy > 1 and self.variant not in _PERSISTENT):
            raise ValueError(f"occupancy={self.occupancy}: programs per SM are 1, or 2 for "
                             "the tma, tma_wide, tma_tall, tma_hybrid and tma_ws variants "
                             "(their persistent grid)")
        # A lookup hashes and compares tiles thousands of times (its caches' keys): the
        # fields' tuple and its hash are made once. Not pickled (`__reduce__`): str hashes
        # differ between processes.
        key = (self.block_m, self.block_n, self.block_k, self.group_m, self.num_stages,
               self.num_warps, self.variant, self.split_k, self.occupancy)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_hash", hash(key))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not TileConfig:
            return NotImplemented
        return self._hash == other._hash and self._key == other._key

    def __reduce__(self):
        return TileConfig, self._key

    def smem_bytes(self, elem_bytes: int, stages: int = 0) -> int:
        """Shared memory of the software pipeline: one A and one B tile per stage (triton
        3.6 on the H200 asked 4 x 64 KiB for a 4-stage 128x128x64 fp32 tile), plus the
        TMA, stream-K, wide, tall and hybrid variants' epilogue tile of C (fp32 for fp32
        inputs, else 16-bit), but for tiles that store C by pointer (`c_by_pointer`).
        `stages`: the tile at that many stages (0: its own)."""
        per_stage = (self.block_m + self.block_n) * self.block_k * elem_bytes
        pipeline = per_stage * (stages or self.num_stages)
        if self.variant in ("tma", "tma_streamk", "tma_wide", "tma_tall", "tma_hybrid") \
                and not c_by_pointer(self):
            out_bytes = 4 if elem_bytes == 4 else 2
            return pipeline + self.block_m * self.block_n * out_bytes
        return pipeline

    def acc_regs(self) -> int:
        """fp32 accumulator registers per thread (gemv's holds BLOCK_K products per output
        until its loop ends)."""
        k = self.block_k if self.variant == "gemv" else 1
        return self.block_m * self.block_n * k // (self.num_warps * 32)


# TileConfig's fields in its constructor's order (`replace`)
_FIELD_AT = {f.name: i for i, f in enumerate(fields(TileConfig))}


def replace(c: TileConfig, **changes) -> TileConfig:
    """`dataclasses.replace` for a tile, checked alike, made from its fields' tuple: a
    lookup's first use of a table tile makes its derived forms, ~30 tiles (3.7 us a tile
    through dataclasses.replace on the dev CPU, 2.4 this way)."""
    key = list(c._key)
    for name, v in changes.items():
        if name not in _FIELD_AT:
            raise TypeError(f"TileConfig has no field {name!r}")
        key[_FIELD_AT[name]] = v
    return TileConfig(*key)


def k_range(k: int, split: int, block_k: int) -> int:
    """K a range covers when K is split `split` ways in whole BLOCK_K blocks (only the
    last range has a tail); cdiv(k, k_range(...)) ranges, which can be fewer than
    `split`. The split-K launches' and `configs.split_for`'s one rule."""
    return cdiv(cdiv(k, split), block_k) * block_k


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for the host path in plain integers: triton.cdiv took 3.4 us a call
    on triton 3.9 (it also runs inside kernels), this 0.07 us (session 7, timeit)."""
    return -(-a // b)


def usable(c: TileConfig, family: str, smem_limit: int, stages: int = 0) -> bool:
    """Whether the chip runs the tile with `smem_limit` bytes of shared memory a program:
    its pipeline within that (all `occupancy` programs within one SM's, which is the
    limit plus one program's reserve) and its accumulator within the registers. `stages`:
    the tile at that many stages (0: its own), asked without making that tile."""
    return _fits(c, family, smem_limit, c.occupancy, stages)


def resident(c: TileConfig, family: str, smem_limit: int) -> int:
    """How many of the tile's programs one SM holds, up to the most OCCUPANCIES names (0:
    not one), as `usable` counts them. A persistent tile runs `occupancy` of them; a
    one-program-a-tile grid (`tma_split`) as many as the hardware fits
    (`steps.split_residency`)."""
    return next((p for p in reversed(OCCUPANCIES) if _fits(c, family, smem_limit, p)), 0)


def _fits(c: TileConfig, family: str, smem_limit: int, programs: int, stages: int = 0
          ) -> bool:
    """Whether `programs` of the tile (at `stages`, 0: its own) fit one SM together
    (`usable`, `resident`)."""
    smem = c.smem_bytes(ELEM_BYTES[family], stages)
    regs = _MAX_ACC_REGS_POINTER_C if c_by_pointer(c) else _MAX_ACC_REGS
    return smem <= smem_limit and c.acc_regs() * programs <= regs \
        and (programs == 1 or programs * (smem + CTA_SMEM) <= smem_limit + CTA_SMEM)


def cfg(bm: int, bn: int, bk: int, stages: int, warps: int, variant: str = "tiled",
        split: int = 1, group: int = 8, occupancy: int = 1) -> TileConfig:
    """A TileConfig in the order tile lists are written: block shape, stages, warps."""
    return TileConfig(bm, bn, bk, group, stages, warps, variant, split, occupancy)


_INT32_ELEMENTS = 2**31   # the first element offset a pointer kernel's int32 arithmetic wraps at
_PAST_EDGE = 512          # rows and columns past an operand's edge whose addresses masked
                          # loads form (a block, a split's range) before the mask drops them


def wide_offsets(*operands: tuple[tuple[int, ...], tuple[int, ...]]) -> bool:
    """Whether a pointer kernel must form element offsets in 64 bits (`jit_parts.wide`):
    some operand, of (shape, strides), has an element whose offset from its base, counted
    `_PAST_EDGE` rows and columns past its edge, reaches 2**31. A (3 x 16) view whose rows
    lie 2**30 elements apart read its third row 4 GiB before it in int32 (session 57)."""
    return any(sum((n + _PAST_EDGE) * abs(s) for n, s in zip(shape, strides)) >= _INT32_ELEMENTS
               for shape, strides in operands)
