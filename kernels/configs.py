"""Tile configurations for kernels/matmul.py, kept as data (not inside the decorator).

Each entry: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps. Families differ by
element size: fp32 tiles hold twice the bytes of 16-bit tiles, fp8 wants a deeper K.
Configs whose shared-memory footprint exceeds the device's limit are pruned (`fits`).
`heuristic` is the tile a call gets when the caller passes neither a tile nor a chooser:
picked in microseconds from the shape, never by timing on the call path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TileConfig:
    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_stages: int
    num_warps: int

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "block_k"):
            v = getattr(self, name)
            if v < 16 or v & (v - 1):
                raise ValueError(f"{name}={v} must be a power of two >= 16")
        if self.group_m < 1 or self.num_stages < 1 or self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"invalid launch parameters in {self}")

    def smem_bytes(self, elem_bytes: int) -> int:
        """Shared memory of the software pipeline: one A and one B tile per stage."""
        per_stage = (self.block_m + self.block_n) * self.block_k * elem_bytes
        return per_stage * max(self.num_stages - 1, 1)


def _tiles(rows: list[tuple[int, int, int, int, int, int]]) -> tuple[TileConfig, ...]:
    return tuple(TileConfig(*r) for r in rows)


# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps)
CONFIGS: dict[str, tuple[TileConfig, ...]] = {
    "16bit": _tiles([
        (128, 256, 64, 8, 3, 8),
        (128, 128, 64, 8, 4, 4),
        (128, 64, 64, 8, 4, 4),
        (64, 128, 64, 8, 4, 4),
        (64, 64, 64, 8, 4, 4),
        (16, 128, 128, 8, 4, 4),
    ]),
    "fp32": _tiles([
        (128, 128, 32, 8, 3, 8),
        (128, 64, 32, 8, 4, 4),
        (64, 128, 32, 8, 4, 4),
        (64, 64, 32, 8, 4, 4),
        (16, 128, 64, 8, 4, 4),
    ]),
    "fp8": _tiles([
        (128, 256, 128, 8, 3, 8),
        (128, 128, 128, 8, 4, 8),
        (128, 64, 128, 8, 4, 4),
        (64, 64, 128, 8, 4, 4),
        (16, 128, 128, 8, 4, 4),
    ]),
}

# The Triton interpreter runs programs one by one in numpy: few, large tiles are fastest.
INTERPRETER_CONFIG = TileConfig(32, 32, 32, 4, 1, 4)


def config_name(c: TileConfig) -> str:
    return f"{c.block_m}x{c.block_n}x{c.block_k} g{c.group_m} s{c.num_stages} w{c.num_warps}"


def fits(candidates: Sequence[TileConfig], elem_bytes: int,
         smem_limit: int) -> tuple[TileConfig, ...]:
    """Candidates whose pipeline fits the device's shared memory (the smallest one if
    none does, so that there is always something to launch)."""
    kept = tuple(c for c in candidates if c.smem_bytes(elem_bytes) <= smem_limit)
    return kept or (min(candidates, key=lambda c: c.smem_bytes(elem_bytes)),)


def heuristic(candidates: Sequence[TileConfig], m: int, n: int,
              num_sms: int) -> TileConfig:
    """The largest tile that still gives every SM at least one program; the smallest
    tile when even that is too few (skinny shapes). Candidates come largest first."""
    skinny = [c for c in candidates if c.block_m <= 16]
    if m <= 16 and skinny:
        return skinny[0]
    square = [c for c in candidates if c.block_m > 16] or list(candidates)
    for c in square:
        if -(-m // c.block_m) * -(-n // c.block_n) >= num_sms:
            return c
    return square[-1]
