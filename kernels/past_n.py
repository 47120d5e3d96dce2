"""B read past N over a copy's zeros: where the TMA tiles describe B's last, part-full
column of tiles as whole, and how far.

A TMA box of B reaching past N ran its tile's K loop ~1.9x as long as a whole one (session
47, runs 9 and 11, a scratch copy of the TMA kernel: fp16 6296 x 408 x 7624 on
64x128x128:s4 145.8 us, N = 512 89.8; its part tiles cut to one K block 87.3; C stored by
pointer, or not at all, 147; B described to 512 over zeros 89.0. Not the C store, not
GROUP_M (1-64 alike), not A's M tail). So a copy of B (kept, or per call where the call
copies B anyway: session 48) holds zeros past N up to a multiple of PAD_N
(kernels/dispatch.py's plan, `pads_b`; relayout.aligned_copy's `pad_to`), and the
variants of READS_ROOM describe B to whole tiles over them (`b_extent`).
"""

from __future__ import annotations

from kernels.tile import TileConfig, cdiv

PAD_N = 256   # a copy of B's columns, zeros past N: a multiple of the widest power-of-two BLOCK_N
# A tile reads the zeros past B's N (`b_extent`) where B's part tile is one of
# PAD_COLUMNS columns of tiles or fewer: there the part tiles are a large share of the
# work. Session 47, runs 12-14: A/B against 7e31a3d of every set or drawn case whose B a
# first rule (this one, and tiles of 64 rows or fewer at any count of columns) read past N,
# 296 cases: 8 columns or fewer x1.035 (140, 84 faster; a long-K, small-N draw x1.06-1.11
# a mode, fp8 and tf32 over K-major copies too; holdout6 16-bit x1.05; the holdouts' fp8
# x0.992), more columns x0.993-1.007 (156)
PAD_COLUMNS = 8
# the variants whose B descriptors read that room (kernels/matmul.py passes it to their
# recipes): a `tma_wide` tile's two boxes too (session 48), and the warp-specialized
# kernel's (session 49); a tall tile's N is A's M, and stream-K's B boxes past N are not
# measured
READS_ROOM = ("tma", "tma_split", "tma_hybrid", "tma_wide", "tma_ws")


def reads_room(N: int) -> bool:
    """Whether a tile may read B past N over a copy's zeros (`b_extent`): N leaves a part
    tile of PAD_N or less, one of PAD_COLUMNS columns of tiles or fewer (past PAD_N x
    PAD_COLUMNS, no power-of-two tile up to PAD_N wide has so few)."""
    return N % PAD_N != 0 and N < PAD_N * PAD_COLUMNS


def pads_b(copy_b: str, variants: tuple[str, ...], N: int) -> bool:
    """Whether B's copy is made with zeros past N (`PAD_N`): any copy of B (kept, or
    made per call, where the call copies B anyway: fp8's K-major B, a B whose rows a
    descriptor cannot take) for a call the TMA variants run, where a tile may read them
    (`reads_room`). The copy kernel writes the zeros in its one pass
    (`relayout.aligned_copy`)."""
    return copy_b != "" and variants[0] == "tma" and reads_room(N)


def room(N: int) -> int:
    """Zeros past N in a copy of B padded to PAD_N (`pads_b`)."""
    return cdiv(N, PAD_N) * PAD_N - N


def b_extent(config: TileConfig, N: int, room: int) -> int:
    """B's N as the tile's descriptor reads it: 0 (B's own), or where `room` zeros follow
    B's last column (kernels/dispatch.py `b_room`) and its part tile is one of PAD_COLUMNS
    or fewer, N rounded up to whole tiles (at most N + room)."""
    bn, tiles = config.block_n, cdiv(N, config.block_n)
    if not room or N % bn == 0 or tiles > PAD_COLUMNS:
        return 0
    return min(tiles * bn, N + room)
