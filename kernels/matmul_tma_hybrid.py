"""The TMA hybrid variant: the persistent TMA kernel on the output tiles that fill whole
waves, TMA split-K on the tiles left over.

A shape of T output tiles on P persistent programs takes ceil(T / P) waves; the last is
(T mod P) / P full. 920 x 4504 x 4216 in 128x128 makes 288 tiles on the H200's 132 SMs:
three waves, the third 18% full, so the SMs idle through 27% of the call. cuBLAS ran it
at 1.37x this kernel's `tma` (holdout6, session 36, call 1). Stream-K shares the last
wave's K blocks out inside one kernel; this kernel's two tries at it (sessions 12 and 32,
kernels/matmul_tma_streamk.py) lost more to the extra code in the loop than the idle SMs
cost. This variant composes the two kernels that run well alone, on views:

- the head: the tiles of floor(T / P) whole waves, cut as whole tile-rows (A's and C's
  first rows) or tile-columns (B's and C's first columns), whichever leaves fewer
  tiles over, run by `tma` (kernels/matmul_tma.py, unchanged: its table entries keep
  their source hash);
- the tail: the rest of C, run by `tma_split` (kernels/matmul_tma_split.py) with the
  tile's `split_k` K ranges, so its few tiles spread over the SMs.

The two run one after the other on the stream (the tail's partials then its reduction:
three launches). A shape whose tiles fill whole waves runs `tma` alone; one with fewer
tiles than programs runs `tma_split` alone. Both parts take the tile's block sizes,
stages and warps; the head its `occupancy`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from kernels import matmul_tma, matmul_tma_split
from kernels.tile import TileConfig, cdiv, replace

KERNELS = (*matmul_tma.KERNELS, *matmul_tma_split.KERNELS)


def cut(M: int, N: int, config: TileConfig, programs: int) -> tuple[str, int] | None:
    """Where the head ends: ("m", rows) or ("n", columns) of C that whole waves of
    `programs` cover (0: no head, every tile is tail), or None where the tiles fill whole
    waves (no tail). Of the two cuts, the one that leaves fewer tiles over; rows on a tie."""
    bm, bn = config.block_m, config.block_n
    tm, tn = cdiv(M, bm), cdiv(N, bn)
    tiles = tm * tn
    if tiles % programs == 0:
        return None
    room = tiles // programs * programs
    rows, cols = room // tn, room // tm
    if rows * tn >= cols * tm:
        return "m", rows * bm
    return "n", cols * bn


@functools.lru_cache(maxsize=1024)   # a lookup asks it for each neighbour's hybrids
def parts(config: TileConfig) -> tuple[TileConfig, TileConfig]:
    """(the head's `tma` tile, the tail's `tma_split` tile) of a hybrid tile."""
    head = replace(config, variant="tma", split_k=1)
    return head, replace(config, variant="tma_split", occupancy=1)


def _views(where: tuple[str, int], a, b, out) -> tuple[tuple, tuple]:
    """((a, b, out) of the head, the same of the tail) for a cut."""
    axis, at = where
    if axis == "m":
        return (a[:at], b, out[:at]), (a[at:], b, out[at:])
    return (a, b[:, :at], out[:, :at]), (a, b[:, at:], out[:, at:])


@dataclass(frozen=True)
class Recipe:
    """The head's and the tail's recipes (either may be None: no such part) and the cut
    that makes their views."""

    head: object | None
    tail: object | None
    where: tuple[str, int] | None

    def _split(self, a, b, out) -> tuple[tuple, tuple]:
        if self.where is None or self.where[1] == 0:
            return (a, b, out), (a, b, out)
        return _views(self.where, a, b, out)

    def launch(self, a, b, out, sa, sb) -> None:
        head, tail = self._split(a, b, out)
        if self.head is not None:
            self.head.launch(*head, sa, sb)
        if self.tail is not None:
            self.tail.launch(*tail, sa, sb)

    def bind(self, a, b, out, sa, sb) -> Callable[[], None]:
        head, tail = self._split(a, b, out)
        runs = [r.bind(*v, sa, sb) for r, v in ((self.head, head), (self.tail, tail))
                if r is not None]

        def run() -> None:
            for r in runs:
                r()

        return run


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool, b_room: int = 0) -> Recipe | None:
    """The variant's launches for tensors like these, or None when a part's operands
    cannot be described (matmul_tma.tma_operands). `b_room`: zeros past B's N
    (past_n.b_extent), for each part whose B ends at N (a head cut along N ends
    where the tail's columns start)."""
    flags = dict(input_precision=input_precision, is_fp32=is_fp32, has_scale=has_scale,
                 b_room=b_room)
    head_cfg, tail_cfg = parts(config)
    programs = matmul_tma.num_sms(a.device) * matmul_tma.programs_per_sm(
        head_cfg, input_precision, is_fp32, a.device)
    where = cut(a.shape[0], b.shape[1], config, programs)
    if where is None:
        head = matmul_tma.recipe(head_cfg, a, b, out, **flags)
        return None if head is None else Recipe(head, None, None)
    if where[1] == 0:
        tail = matmul_tma_split.recipe(tail_cfg, a, b, out, **flags)
        return None if tail is None else Recipe(None, tail, where)
    (ha, hb, hc), (ta, tb, tc) = _views(where, a, b, out)
    head = matmul_tma.recipe(head_cfg, ha, hb, hc,
                             **(flags if where[0] == "m" else {**flags, "b_room": 0}))
    tail = matmul_tma_split.recipe(tail_cfg, ta, tb, tc, **flags)
    if head is None or tail is None:
        return None
    return Recipe(head, tail, where)


def launcher(config: TileConfig, a, b, out, sa, sb, **flags) -> Callable[[], None] | None:
    """The variant's launches for these tensors, prepared, or None (`recipe`)."""
    r = recipe(config, a, b, out, **flags)
    return None if r is None else r.bind(a, b, out, sa, sb)
