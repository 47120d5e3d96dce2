"""kernels/steps.py: the step model that prices a tile on a shape, and the tiles (K split
anew, two programs per SM) a lookup weighs besides a neighbour's own."""

from dataclasses import replace

import pytest

from kernels import steps
from kernels.tile import TileConfig

H200_SMEM = 232448


def test_a_tile_that_fits_twice_has_a_two_program_twin_of_as_many_stages_as_fit():
    """128x64x64 bf16 at 5 stages (138 KiB) fits an SM once; at 4 (112 KiB) twice. A tile
    that fits twice only more than TWIN_MAX_DROP stages fewer or below TWIN_MIN_STAGES, a
    split or tiled one, IEEE fp32 (the launch sets its programs per SM) and a lookup
    without the shared memory have none."""
    narrow = TileConfig(128, 64, 64, 8, 5, 4, "tma")
    assert steps.twins(narrow, "16bit", H200_SMEM, False) == (
        TileConfig(128, 64, 64, 8, 4, 4, "tma", occupancy=2),)
    assert steps.twins(TileConfig(64, 128, 128, 8, 4, 4, "tma"), "16bit", H200_SMEM,
                       False) == ()                    # fits twice at 2 stages only
    assert steps.twins(TileConfig(64, 128, 32, 8, 5, 4, "tma"), "fp32", H200_SMEM,
                       False) == ()                    # tf32: at 3 stages, two fewer
    assert steps.twins(TileConfig(64, 128, 32, 8, 3, 4, "tma"), "fp32", H200_SMEM,
                       False) == (TileConfig(64, 128, 32, 8, 3, 4, "tma", occupancy=2),)
    assert steps.twins(narrow, "16bit", H200_SMEM, True) == ()
    assert steps.twins(narrow, "16bit", 0, False) == ()
    assert steps.twins(TileConfig(128, 64, 64, 8, 4, 4, "tma_split", 2), "16bit",
                       H200_SMEM, False) == ()
    assert steps.twins(TileConfig(128, 64, 64, 8, 4, 4, "tma", occupancy=2), "16bit",
                       H200_SMEM, False) == ()


def test_steps_price_two_programs_on_an_sm_at_pair_step_a_block():
    """A two-program grid is the tiles, up to two per SM: 261 tiles of 128x64 on 132 SMs
    walk one tile each, 30 blocks of K 1920, as pairs on most SMs (PAIR_STEP a block);
    128 tiles run one to an SM, as the one-program tile does; 2048 tiles, 8 each."""
    one = TileConfig(128, 64, 64, 8, 4, 4, "tma")
    two = TileConfig(128, 64, 64, 8, 4, 4, "tma", occupancy=2)
    assert steps.steps(one, 1152, 1856, 1920, 132) == 2 * 30
    assert steps.steps(two, 1152, 1856, 1920, 132) == 30 * steps.PAIR_STEP
    assert steps.steps(two, 1024, 1024, 1024, 132) == steps.steps(one, 1024, 1024, 1024, 132)
    assert steps.steps(two, 4096, 4096, 4096, 132) == 8 * 64 * steps.PAIR_STEP
    assert steps.steps(one, 4096, 4096, 4096, 132) == 16 * 64


def test_resplits_fill_one_wave_with_long_k_ranges():
    """Splits of an unsplit TMA tile, every count from 2: tiles x splits within one wave,
    every K range 2 KB of a row at least (`MIN_RANGE_BYTES`), as `tma_split`; not the
    tiled kernel's."""
    tma = TileConfig(128, 128, 64, 8, 4, 8, "tma")
    both = ("tma", "tma_split")
    got = steps.resplits(tma, 256, 256, 8192, both, 132, "16bit")       # 4 tiles, 16 KB of K
    assert [c.split_k for c in got] == [2, 3, 4, 5, 6, 7, 8]        # 9: ranges < 2 KB
    assert {c.variant for c in got} == {"tma_split"} and got[0].block_k == 64
    assert [c.split_k for c in steps.resplits(tma, 256, 256, 8192, both, 132, "fp32")] == \
        list(range(2, 17))                                          # fp32: 32 KB of K
    assert [c.split_k for c in steps.resplits(tma, 256, 256, 8192, both, 12, "16bit")] == [2, 3]
    # 40 tiles: 3 ranges fill 120 of 132 SMs, where powers of two stopped at 80
    assert [c.split_k for c in steps.resplits(tma, 1024, 640, 8192, both, 132, "16bit")] == [2, 3]
    assert steps.resplits(tma, 256, 256, 1024, both, 132, "16bit") == []    # 2 KB of K in all
    assert steps.resplits(tma, 256, 256, 8192, ("tma",), 132, "16bit") == []   # no split-K here
    assert steps.resplits(tma, 4096, 4096, 8192, both, 132, "16bit") == []  # tiles fill the SMs
    split8 = TileConfig(128, 64, 64, 8, 4, 4, "tma_split", 8)
    # a tile tuned split is split anew where `anew` (16-bit and tf32: 8 tiles, 2 to 16
    # ranges fit one wave, each 2 KB of K at least: up to 8 in 16-bit, 16 in fp32);
    # without it the tile keeps its split
    assert [c.split_k for c in steps.resplits(split8, 256, 256, 8192, both, 132, "16bit",
                                              anew=True)] == list(range(2, 9))
    assert [c.split_k for c in steps.resplits(split8, 256, 256, 8192, both, 132, "fp32",
                                              anew=True)] == list(range(2, 17))
    assert steps.resplits(split8, 256, 256, 8192, both, 132, "fp32") == []
    assert steps.resplits(split8, 256, 256, 8192, both, 132, "fp8") == []
    tiled = TileConfig(64, 64, 64, 8, 4, 4)
    assert steps.resplits(tiled, 256, 256, 4096, ("tiled", "tma_split"), 132, "16bit") == []
    # a tile of two programs per SM splits as one of one (the split grid has no occupancy)
    two = TileConfig(128, 128, 64, 8, 4, 8, "tma", occupancy=2)
    assert steps.resplits(two, 256, 256, 8192, both, 132, "16bit") == got


def test_a_split_tile_that_fits_twice_an_sm_counts_rounds_of_two_programs_an_sm():
    """tf32's 64x128x32:s4 split tile (96 KB) fits twice in the H200's shared memory, the
    5-stage one (120 KB) once, any tile once where the shared memory is not known: 40
    tiles split 4 ways (160 programs) run one round of pairs (PAIR_STEP a block) where
    two fit, two rounds where one does; the split wave (`resplits`) doubles with it."""
    s4 = TileConfig(64, 128, 32, 8, 4, 4, "tma_split", 4)
    s5 = replace(s4, num_stages=5)
    assert steps.split_residency(s4, "fp32", H200_SMEM) == 2
    assert steps.split_residency(s5, "fp32", H200_SMEM) == 1
    assert steps.split_residency(s4, "fp32", 0) == 1                   # unknown: one
    assert steps.split_residency(replace(s4, variant="tma", split_k=1), "fp32",
                                 H200_SMEM) == 1                       # its occupancy
    blocks = 8192 // 4 // 32
    assert steps.steps(s4, 640, 512, 8192, 132, 2) == blocks * steps.PAIR_STEP
    assert steps.steps(s4, 640, 512, 8192, 132) == 2 * blocks
    assert steps.steps(replace(s4, split_k=3), 640, 512, 8192, 132, 2) == \
        steps.steps(replace(s4, split_k=3), 640, 512, 8192, 132)      # 120: one an SM
    # 280 programs (140 tiles x 2): 3 on the busiest SM, a pair and then one alone
    blocks2 = 71   # K ranges of 2260, in blocks of 32
    two = replace(s4, split_k=2)
    assert steps.steps(two, 1248, 784, 4520, 132, 2) == (steps.PAIR_STEP + 1) * blocks2
    assert steps.steps(two, 1248, 784, 4520, 132) == 3 * blocks2
    tma = replace(s4, variant="tma", split_k=1)
    both = ("tma", "tma_split")
    assert [c.split_k for c in steps.resplits(tma, 640, 512, 8192, both, 132, "fp32",
                                              H200_SMEM)] == [2, 3, 4, 5, 6]
    assert [c.split_k for c in steps.resplits(tma, 640, 512, 8192, both, 132, "fp32")] == \
        [2, 3]
    assert [c.split_k for c in steps.resplits(replace(tma, num_stages=5), 640, 512, 8192,
                                              both, 132, "fp32", H200_SMEM)] == [2, 3]


def test_a_tile_whose_last_wave_is_part_full_is_offered_as_a_hybrid():
    """920 x 4504 x 4216 in 128x128 makes 288 tiles: two whole waves (33 tile-columns)
    and 24 tiles left, split 2-4 ways: ranges of MIN_RANGE_BYTES at least (5 ways: 1.7
    KB), programs within one wave; only for one-program TMA tiles where the call runs
    `tma_hybrid`, on shapes of one whole wave at least and a part-full last one."""
    runs = ("tma", "tiled", "tma_split", "tma_hybrid")
    tile = TileConfig(128, 128, 64, 8, 5, 8, "tma")
    got = steps.hybrids(tile, 920, 4504, 4216, runs, 132, 2)
    assert [c.split_k for c in got] == [2, 3, 4]      # 5: ranges of 843 x 2 B < 2 KB
    assert {(c.variant, c.block_m, c.block_n, c.num_stages) for c in got} == {
        ("tma_hybrid", 128, 128, 5)}
    assert steps.hybrids(tile, 920, 4504, 4216, runs[:3], 132, 2) == []     # not runnable
    assert steps.hybrids(tile, 1408, 1536, 4096, runs, 132, 2) == []        # whole waves
    assert steps.hybrids(tile, 1024, 1024, 4096, runs, 132, 2) == []        # under a wave
    assert steps.hybrids(TileConfig(128, 128, 64, 8, 4, 8, "tma", occupancy=2),
                         920, 4504, 4216, runs, 132, 2) == []
    assert steps.hybrids(tile, 920, 4504, 256, runs, 132, 2) == []          # short K


def test_a_16bit_128x128x64_four_warp_tiles_hybrids_run_eight_warps():
    """fp16's 4-warp 128x128x64 entry tile ran its hybrids slower than the 8-warp one
    (session 39, call 7): its hybrid forms are made at HYBRID_EIGHT_WARPS; fp8's, and
    other 16-bit tiles', keep their own stages and warps."""
    runs = ("tma", "tma_split", "tma_hybrid")
    four = TileConfig(128, 128, 64, 8, 4, 4, "tma")
    got = steps.hybrids(four, 920, 4504, 4216, runs, 132, 2)
    assert got and {(c.num_stages, c.num_warps) for c in got} == {steps.HYBRID_EIGHT_WARPS}
    assert {(c.block_m, c.block_n, c.block_k) for c in got} == {(128, 128, 64)}
    mn_major_a = steps.hybrids(four, 920, 4504, 4216, runs, 132, 2, a_kmajor=False)
    assert mn_major_a and {(c.num_stages, c.num_warps) for c in mn_major_a} == {(4, 4)}
    fp8 = steps.hybrids(four, 920, 4504, 4216, runs, 132, 1)
    assert fp8 and {(c.num_stages, c.num_warps) for c in fp8} == {(4, 4)}
    deep = TileConfig(128, 128, 128, 8, 3, 4, "tma")
    assert {(c.num_stages, c.num_warps)
            for c in steps.hybrids(deep, 920, 4504, 4216, runs, 132, 2)} == {(3, 4)}


def test_a_hybrids_steps_and_fixed_part_are_its_parts():
    """The head's two waves of 66 blocks, then 24 tiles x 4 ranges (96 programs, one
    wave) of 17 blocks; the fixed part: two launches, the reduction and the partials."""
    hy = TileConfig(128, 128, 64, 8, 5, 8, "tma_hybrid", 4)
    head, tail = steps.hybrid_parts(hy, 920, 4504, 132)
    assert head == (TileConfig(128, 128, 64, 8, 5, 8, "tma"), 920, 33 * 128)
    assert tail == (TileConfig(128, 128, 64, 8, 5, 8, "tma_split", 4), 920, 4504 - 33 * 128)
    assert steps.steps(hy, 920, 4504, 4216, 132) == 2 * 66 + 17
    assert steps.fixed_ms(hy, 920, 4504, 132) == pytest.approx(
        steps.fixed_ms(head[0], 920, 4224, 132) + steps.fixed_ms(tail[0], 920, 280, 132))
    with pytest.raises(ValueError, match="SM count"):
        steps.fixed_ms(hy, 920, 4504, 0)
    whole = steps.hybrid_parts(hy, 1408, 1536, 132)
    assert whole == ((TileConfig(128, 128, 64, 8, 5, 8, "tma"), 1408, 1536),)
