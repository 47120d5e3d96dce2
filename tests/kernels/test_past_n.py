"""kernels/past_n.py: where a tile reads B past N over a copy's zeros, and how far."""

import pytest

from kernels import past_n
from kernels.tile import TileConfig


@pytest.mark.parametrize(("tile", "n", "room", "cols"), [
    (TileConfig(64, 128, 128, 8, 4, 4, "tma"), 408, 104, 512),     # 4 columns of tiles
    (TileConfig(128, 128, 64, 8, 4, 4, "tma"), 1000, 24, 1024),    # 8
    (TileConfig(64, 128, 128, 8, 4, 4, "tma"), 1032, 248, 0),      # 9: as described
    (TileConfig(128, 128, 64, 8, 4, 4, "tma"), 6200, 200, 0),
    (TileConfig(128, 256, 64, 8, 3, 8, "tma"), 216, 40, 256),
    (TileConfig(64, 128, 128, 8, 4, 4, "tma"), 512, 0, 0),         # whole tiles
    (TileConfig(64, 128, 128, 8, 4, 4, "tma"), 408, 0, 0),         # no room
    (TileConfig(64, 64, 64, 8, 4, 4, "tma"), 408, 104, 448),       # whole tiles, no more
    (TileConfig(64, 128, 128, 8, 4, 4, "tma"), 408, 50, 458),      # the room's end
])
def test_b_is_read_past_n_to_whole_tiles_where_zeros_follow(tile, n, room, cols):
    assert past_n.b_extent(tile, n, room) == cols
