"""kernels/steps.py: the step model that prices a tile on a shape, and the tiles (K split
anew, two programs per SM) a lookup weighs besides a neighbour's own."""

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
    """Splits of an unsplit TMA tile: tiles x splits within one wave, every K range 2 KB
    of a row at least (`MIN_RANGE_BYTES`), as `tma_split`; not the tiled kernel's."""
    tma = TileConfig(128, 128, 64, 8, 4, 8, "tma")
    both = ("tma", "tma_split")
    got = steps.resplits(tma, 256, 256, 8192, both, 132, 2)       # 4 tiles, 16 KB of K
    assert [c.split_k for c in got] == [2, 4, 8]                    # 16: ranges of 1 KB
    assert {c.variant for c in got} == {"tma_split"} and got[0].block_k == 64
    assert [c.split_k for c in steps.resplits(tma, 256, 256, 8192, both, 132, 4)] == \
        [2, 4, 8, 16]                                               # fp32: 32 KB of K
    assert [c.split_k for c in steps.resplits(tma, 256, 256, 8192, both, 12, 2)] == [2]
    assert steps.resplits(tma, 256, 256, 1024, both, 132, 2) == []    # 2 KB of K in all
    assert steps.resplits(tma, 256, 256, 8192, ("tma",), 132, 2) == []   # no split-K here
    assert steps.resplits(tma, 4096, 4096, 8192, both, 132, 2) == []  # tiles fill the SMs
    split8 = TileConfig(128, 64, 64, 8, 4, 4, "tma_split", 8)
    assert steps.resplits(split8, 256, 256, 8192, both, 132, 2) == []   # tuned split: kept
    tiled = TileConfig(64, 64, 64, 8, 4, 4)
    assert steps.resplits(tiled, 256, 256, 4096, ("tiled", "tma_split"), 132, 2) == []
    # a tile of two programs per SM splits as one of one (the split grid has no occupancy)
    two = TileConfig(128, 128, 64, 8, 4, 8, "tma", occupancy=2)
    assert steps.resplits(two, 256, 256, 8192, both, 132, 2) == got


def test_a_16bit_128x256_tile_has_a_wide_cut_with_a_stage_more_where_it_fits():
    """128x256x64 at 3 stages is offered as 128x192x64 at 4 (208 KiB: session 35's measured
    wide tile); where a stage more does not fit, at as many; only where the call can run
    `tma_wide`, for one-program 16-bit TMA tiles 128x256."""
    both = ("tma", "tiled", "tma_split", "tma_wide")
    parent = TileConfig(128, 256, 64, 8, 3, 8, "tma")
    assert steps.wides(parent, "16bit", H200_SMEM, both) == (
        TileConfig(128, 192, 64, 8, 4, 8, "tma_wide"),)
    full = TileConfig(128, 256, 64, 8, 4, 8, "tma")        # 5 wide stages: 248 KiB
    assert steps.wides(full, "16bit", H200_SMEM, both) == (
        TileConfig(128, 192, 64, 8, 4, 8, "tma_wide"),)
    assert steps.wides(parent, "16bit", H200_SMEM, both[:3]) == ()   # no tma_wide here
    assert steps.wides(parent, "fp8", H200_SMEM, both) == ()
    assert steps.wides(parent, "16bit", 0, both) == ()
    assert steps.wides(TileConfig(64, 256, 64, 8, 3, 8, "tma"), "16bit", H200_SMEM, both) == ()
    assert steps.wides(TileConfig(128, 256, 64, 8, 3, 8, "tma", occupancy=2), "16bit",
                       H200_SMEM, both) == ()
    assert steps.wides(TileConfig(128, 256, 64, 8, 3, 8, "tiled"), "16bit", H200_SMEM,
                       both) == ()
    assert steps.wide_step(parent, TileConfig(128, 192, 64, 8, 4, 8, "tma_wide"), "16bit") == \
        steps.WIDE_STEP


def test_a_128x128_tile_is_widened_to_each_fit_width_with_a_stage_more_where_it_fits():
    """16-bit and fp8 128x128 tiles are offered 144, 160 and 192 wide where the call runs
    `tma_wide`, and as many rows tall where it runs `tma_tall` (B K-major: the dispatcher
    says; sessions 37 and 38): at a stage more where it fits
    the H200's shared memory, else as many, else one fewer (128x192 at 5 stages takes 248
    KiB), priced at their columns over 128 times WIDE_COL a block; not over a short K
    (`fit` False), not IEEE fp32's or tf32's, not 16-bit 64-row ones (fp8's 64x128 is
    widened, not made tall), not at two programs per SM."""
    both = ("tma", "tiled", "tma_split", "tma_wide")
    parent = TileConfig(128, 128, 64, 8, 4, 8, "tma")
    got = steps.wides(parent, "16bit", H200_SMEM, both)
    assert [(c.variant, c.block_n, c.num_stages) for c in got] == [
        ("tma_wide", 144, 5), ("tma_wide", 160, 5), ("tma_wide", 192, 4)]
    fp8 = TileConfig(128, 128, 128, 8, 5, 8, "tma")
    assert [(c.block_n, c.num_stages) for c in steps.wides(fp8, "fp8", H200_SMEM, both)] == [
        (144, 5), (160, 5), (192, 4)]
    assert steps.wides(TileConfig(128, 128, 32, 8, 5, 4, "tma"), "fp32", H200_SMEM, both) == ()
    assert steps.wides(TileConfig(64, 128, 64, 8, 4, 4, "tma"), "16bit", H200_SMEM, both) == ()
    # fp8's 64x128 widens (session 39), wide only
    fp8_64 = TileConfig(64, 128, 256, 8, 4, 4, "tma")
    assert [(c.variant, c.block_m, c.block_n) for c in
            steps.wides(fp8_64, "fp8", H200_SMEM, (*both, "tma_tall"))] == [
        ("tma_wide", 64, 144), ("tma_wide", 64, 160), ("tma_wide", 64, 192)]
    assert steps.wide_step(fp8_64, TileConfig(64, 144, 256, 8, 4, 4, "tma_wide"), "fp8") == \
        pytest.approx(144 / 128 * steps.WIDE_COL)
    # a 16-bit 144-wide tile: its 16-wide dot costs more a column (session 41)
    assert steps.wide_step(parent, got[0], "16bit") == \
        pytest.approx(144 / 128 * steps.WIDE_COL_144)
    assert steps.wide_step(fp8, steps.wides(fp8, "fp8", H200_SMEM, both)[0], "fp8") == \
        pytest.approx(144 / 128 * steps.WIDE_COL)
    assert steps.wides(TileConfig(128, 128, 64, 8, 4, 8, "tma", occupancy=2), "16bit",
                       H200_SMEM, both) == ()
    tall = steps.wides(fp8, "fp8", H200_SMEM, (*both, "tma_tall"))
    assert [(c.variant, c.block_m, c.block_n) for c in tall[3:]] == [
        ("tma_tall", 144, 128), ("tma_tall", 160, 128), ("tma_tall", 192, 128)]
    assert steps.wide_step(fp8, tall[4], "fp8") == steps.wide_step(parent, got[1], "16bit")
    tall16 = steps.wides(parent, "16bit", H200_SMEM, (*both, "tma_tall"))
    assert tall16[:3] == got and [(c.block_m, c.num_stages) for c in tall16[3:]] == [
        (144, 5), (160, 5), (192, 4)]
    # tall without wide (a column-major A: kernels/table.py's _LAYOUT_FREE)
    assert steps.wides(parent, "16bit", H200_SMEM, ("tma", "tma_tall")) == tall16[3:]
    assert steps.wides(TileConfig(128, 256, 64, 8, 3, 8, "tma"), "16bit", H200_SMEM,
                       ("tma", "tma_tall")) == ()   # 128x256's cut is wide only
    assert steps.wides(parent, "16bit", H200_SMEM, both, fit=False) == ()
    assert steps.wides(TileConfig(128, 256, 64, 8, 3, 8, "tma"), "16bit", H200_SMEM, both,
                       fit=False) != ()   # 128x256's cut does not depend on K
    assert steps.wide_step(parent, got[1], "16bit") == pytest.approx(160 / 128 * steps.WIDE_COL)


def test_a_128x256_tile_is_offered_one_wave_wide_where_128x256_takes_two():
    """920 x 4504 x 4216 makes 144 tiles of 128x256 (two waves of 132 SMs), 128 of
    128x288 and 120 of 128x320 (one each): both offered wide, C by pointer (3 stages of
    BLOCK_K 64 fit without a C box), and made tall where the call runs `tma_tall` (320x128:
    on 4504 x 920, 15 x 8 = 120 tiles; on 920 x 4504 3 x 36 = 108, where 288x128 makes
    4 x 36 = 144, two waves, not offered); not where 128x256
    already fits one wave, nor for other tiles, families or two programs per SM. Priced at
    the work over 128x256's times ONE_WAVE_COL, NARROW_32 more at 288. Not over a K of
    fewer than ONE_WAVE_MIN_K_BYTES a row."""
    runs = ("tma", "tma_wide")
    parent = TileConfig(128, 256, 64, 8, 3, 8, "tma")
    got = steps.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, runs, 132)
    assert got == [TileConfig(128, 288, 64, 8, 3, 8, "tma_wide"),
                   TileConfig(128, 320, 64, 8, 3, 8, "tma_wide")]
    tall = steps.one_wave(parent, 4504, 920, 4216, "16bit", H200_SMEM, ("tma", "tma_tall"), 132)
    assert tall == [TileConfig(288, 128, 64, 8, 3, 8, "tma_tall"),
                    TileConfig(320, 128, 64, 8, 3, 8, "tma_tall")]
    both = steps.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, (*runs, "tma_tall"), 132)
    assert both[2:] == [tall[1]]   # 320 rows: 3 x 36 tiles, one wave; 288: 4 x 36, two
    assert steps.one_wave(parent, 1024, 4096, 4216, "16bit", H200_SMEM, runs, 132) == []  # 128
    assert steps.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, ("tma",), 132) == []
    # K of 1,536 bytes a row at least: 16-bit K 768, fp8 1536 (ONE_WAVE_MIN_K_BYTES)
    assert steps.one_wave(parent, 920, 4504, 768, "16bit", H200_SMEM, runs, 132) == got
    assert steps.one_wave(parent, 920, 4504, 760, "16bit", H200_SMEM, runs, 132) == []
    assert steps.one_wave(parent, 920, 4504, 4216, "fp32", H200_SMEM, runs, 132) == []
    assert steps.one_wave(parent, 920, 4504, 4216, "16bit", 0, runs, 132) == []
    for other in (TileConfig(128, 128, 64, 8, 4, 8, "tma"),
                  TileConfig(128, 256, 64, 8, 3, 8, "tma", occupancy=2),
                  TileConfig(128, 256, 64, 8, 3, 8, "tma_split", 2)):
        assert steps.one_wave(other, 920, 4504, 4216, "16bit", H200_SMEM, runs, 132) == []
    fp8 = TileConfig(128, 256, 128, 8, 3, 8, "tma")
    assert [(c.block_n, c.num_stages) for c in
            steps.one_wave(fp8, 920, 4504, 4216, "fp8", H200_SMEM, runs, 132)] == [
        (288, 3), (320, 3)]
    assert steps.wide_step(parent, got[1], "16bit") == pytest.approx(
        320 / 256 * steps.ONE_WAVE_COL["16bit"])
    assert steps.wide_step(parent, got[0], "16bit") == pytest.approx(
        288 / 256 * steps.ONE_WAVE_COL["16bit"] * steps.NARROW_32)
    fp8_tall = steps.one_wave(fp8, 4504, 920, 4216, "fp8", H200_SMEM, ("tma", "tma_tall"), 132)
    assert steps.wide_step(fp8, fp8_tall[1], "fp8") == pytest.approx(
        320 / 256 * steps.ONE_WAVE_COL["fp8"])


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


def test_an_fp8_128x128_tile_is_offered_at_half_height_where_it_cuts_a_wave():
    """fp8 128x128x128 as 64xW at BLOCK_K 256, one warpgroup (session 40): where
    HALF_MIN_STAGES stages fit (64x144 on the H200; 64x160 and 64x192 ran at 3 stages and
    lost) and its tiles take fewer waves than 64x128's (3628 x 259 x 5063: 57 x 3 = 171
    tiles of 64x128, two waves; 57 x 2 = 114 of 64x144, one; 784 x 1280 x 7040: 130 and
    117, one wave each, ran x0.91); wide only, fp8 128x128x128 only; priced at its work
    over the parent's times WIDE_COL and HALF_ROW."""
    runs = ("tma", "tma_split", "tma_wide")
    fp8 = TileConfig(128, 128, 128, 8, 4, 4, "tma")
    half = TileConfig(64, 144, 256, 8, 4, 4, "tma_wide")
    assert steps.halves(fp8, 3628, 259, "fp8", H200_SMEM, runs, 132) == [half]
    assert steps.halves(fp8, 784, 1280, "fp8", H200_SMEM, runs, 132) == []     # one wave
    assert [c.block_n for c in steps.halves(fp8, 3628, 259, "fp8", 10 ** 6, runs, 132)] == [
        144, 160, 192]                                       # where 4 stages fit, each
    assert steps.halves(fp8, 3628, 259, "fp8", H200_SMEM, runs, 132, fit=False) == []
    assert all(c.variant == "tma_tall" for c in
               steps.halves(fp8, 3628, 259, "fp8", H200_SMEM, ("tma", "tma_tall"), 132))
    # made tall alike where N is the side covered (B K-major: the call runs `tma_tall`)
    tall = TileConfig(144, 64, 256, 8, 4, 4, "tma_tall")
    assert steps.halves(fp8, 259, 3628, "fp8", H200_SMEM, ("tma", "tma_tall"), 132) == [tall]
    assert steps.halves(fp8, 1024, 1024, "fp8", H200_SMEM, ("tma", "tma_tall"), 132) == []
    # 784 x 1280: 144x64 makes 120 tiles against 128x64's 140 but 64x128's 130, one wave
    assert steps.halves(fp8, 784, 1280, "fp8", H200_SMEM, ("tma", "tma_tall"), 132) == []
    assert steps.wide_step(fp8, tall, "fp8") == steps.wide_step(fp8, half, "fp8")
    assert steps.halves(fp8, 3628, 259, "fp8", 0, runs, 132) == []
    for other, fam in ((TileConfig(128, 128, 64, 8, 4, 8, "tma"), "fp8"), (fp8, "16bit"),
                       (TileConfig(64, 128, 256, 8, 4, 4, "tma"), "fp8"),
                       (TileConfig(128, 128, 128, 8, 4, 4, "tma", occupancy=2), "fp8")):
        assert steps.halves(other, 3628, 259, fam, H200_SMEM, runs, 132) == []
    assert steps.wide_step(fp8, half, "fp8") == pytest.approx(
        64 * 144 * 256 / (128 * 128 * 128) * steps.WIDE_COL * steps.HALF_ROW)


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
