"""kernels/forms.py: the wide and tall forms a lookup derives from a neighbour's TMA
tile (a cut, widened, at half height, in one wave) and their price a block."""

import pytest

from kernels import wide_forms as forms
from kernels.tile import TileConfig

H200_SMEM = 232448


def test_a_16bit_128x256_tile_has_a_wide_cut_with_a_stage_more_where_it_fits():
    """128x256x64 at 3 stages is offered as 128x192x64 at 4 (208 KiB: session 35's measured
    wide tile); where a stage more does not fit, at as many; only where the call can run
    `tma_wide`, for one-program 16-bit TMA tiles 128x256."""
    both = ("tma", "tiled", "tma_split", "tma_wide")
    parent = TileConfig(128, 256, 64, 8, 3, 8, "tma")
    assert forms.wides(parent, "16bit", H200_SMEM, both) == (
        TileConfig(128, 192, 64, 8, 4, 8, "tma_wide"),)
    full = TileConfig(128, 256, 64, 8, 4, 8, "tma")        # 5 wide stages: 248 KiB
    assert forms.wides(full, "16bit", H200_SMEM, both) == (
        TileConfig(128, 192, 64, 8, 4, 8, "tma_wide"),)
    assert forms.wides(parent, "16bit", H200_SMEM, both[:3]) == ()   # no tma_wide here
    assert forms.wides(parent, "fp8", H200_SMEM, both) == ()
    assert forms.wides(parent, "16bit", 0, both) == ()
    assert forms.wides(TileConfig(64, 256, 64, 8, 3, 8, "tma"), "16bit", H200_SMEM, both) == ()
    assert forms.wides(TileConfig(128, 256, 64, 8, 3, 8, "tma", occupancy=2), "16bit",
                       H200_SMEM, both) == ()
    assert forms.wides(TileConfig(128, 256, 64, 8, 3, 8, "tiled"), "16bit", H200_SMEM,
                       both) == ()
    assert forms.wide_step(parent, TileConfig(128, 192, 64, 8, 4, 8, "tma_wide"), "16bit") == \
        forms.WIDE_STEP


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
    got = forms.wides(parent, "16bit", H200_SMEM, both)
    assert [(c.variant, c.block_n, c.num_stages) for c in got] == [
        ("tma_wide", 144, 5), ("tma_wide", 160, 5), ("tma_wide", 192, 4)]
    fp8 = TileConfig(128, 128, 128, 8, 5, 8, "tma")
    assert [(c.block_n, c.num_stages) for c in forms.wides(fp8, "fp8", H200_SMEM, both)] == [
        (144, 5), (160, 5), (192, 4)]
    assert forms.wides(TileConfig(128, 128, 32, 8, 5, 4, "tma"), "fp32", H200_SMEM, both) == ()
    assert forms.wides(TileConfig(64, 128, 64, 8, 4, 4, "tma"), "16bit", H200_SMEM, both) == ()
    # fp8's 64x128 widens (session 39), wide only
    fp8_64 = TileConfig(64, 128, 256, 8, 4, 4, "tma")
    assert [(c.variant, c.block_m, c.block_n) for c in
            forms.wides(fp8_64, "fp8", H200_SMEM, (*both, "tma_tall"))] == [
        ("tma_wide", 64, 144), ("tma_wide", 64, 160), ("tma_wide", 64, 192)]
    assert forms.wide_step(fp8_64, TileConfig(64, 144, 256, 8, 4, 4, "tma_wide"), "fp8") == \
        pytest.approx(144 / 128 * forms.WIDE_COL)
    # a 16-bit 144-wide tile: its 16-wide dot costs more a column (session 41)
    assert forms.wide_step(parent, got[0], "16bit") == \
        pytest.approx(144 / 128 * forms.WIDE_COL_144)
    assert forms.wide_step(fp8, forms.wides(fp8, "fp8", H200_SMEM, both)[0], "fp8") == \
        pytest.approx(144 / 128 * forms.WIDE_COL)
    assert forms.wides(TileConfig(128, 128, 64, 8, 4, 8, "tma", occupancy=2), "16bit",
                       H200_SMEM, both) == ()
    tall = forms.wides(fp8, "fp8", H200_SMEM, (*both, "tma_tall"))
    assert [(c.variant, c.block_m, c.block_n) for c in tall[3:]] == [
        ("tma_tall", 144, 128), ("tma_tall", 160, 128), ("tma_tall", 192, 128)]
    assert forms.wide_step(fp8, tall[4], "fp8") == forms.wide_step(parent, got[1], "16bit")
    tall16 = forms.wides(parent, "16bit", H200_SMEM, (*both, "tma_tall"))
    assert tall16[:3] == got and [(c.block_m, c.num_stages) for c in tall16[3:]] == [
        (144, 5), (160, 5), (192, 4)]
    # tall without wide (a column-major A: kernels/table.py's _LAYOUT_FREE)
    assert forms.wides(parent, "16bit", H200_SMEM, ("tma", "tma_tall")) == tall16[3:]
    assert forms.wides(TileConfig(128, 256, 64, 8, 3, 8, "tma"), "16bit", H200_SMEM,
                       ("tma", "tma_tall")) == ()   # 128x256's cut is wide only
    assert forms.wides(parent, "16bit", H200_SMEM, both, fit=False) == ()
    assert forms.wides(TileConfig(128, 256, 64, 8, 3, 8, "tma"), "16bit", H200_SMEM, both,
                       fit=False) != ()   # 128x256's cut does not depend on K
    assert forms.wide_step(parent, got[1], "16bit") == pytest.approx(160 / 128 * forms.WIDE_COL)


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
    got = forms.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, runs, 132)
    assert got == [TileConfig(128, 288, 64, 8, 3, 8, "tma_wide"),
                   TileConfig(128, 320, 64, 8, 3, 8, "tma_wide")]
    tall = forms.one_wave(parent, 4504, 920, 4216, "16bit", H200_SMEM, ("tma", "tma_tall"), 132)
    assert tall == [TileConfig(288, 128, 64, 8, 3, 8, "tma_tall"),
                    TileConfig(320, 128, 64, 8, 3, 8, "tma_tall")]
    both = forms.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, (*runs, "tma_tall"), 132)
    assert both[2:] == [tall[1]]   # 320 rows: 3 x 36 tiles, one wave; 288: 4 x 36, two
    assert forms.one_wave(parent, 1024, 4096, 4216, "16bit", H200_SMEM, runs, 132) == []  # 128
    assert forms.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, ("tma",), 132) == []
    # K of 1,536 bytes a row at least: 16-bit K 768, fp8 1536 (ONE_WAVE_MIN_K_BYTES)
    assert forms.one_wave(parent, 920, 4504, 768, "16bit", H200_SMEM, runs, 132) == got
    assert forms.one_wave(parent, 920, 4504, 760, "16bit", H200_SMEM, runs, 132) == []
    assert forms.one_wave(parent, 920, 4504, 4216, "fp32", H200_SMEM, runs, 132) == []
    assert forms.one_wave(parent, 920, 4504, 4216, "16bit", 0, runs, 132) == []
    for other in (TileConfig(128, 128, 128, 8, 4, 8, "tma"),
                  TileConfig(128, 256, 64, 8, 3, 8, "tma", occupancy=2),
                  TileConfig(128, 256, 64, 8, 3, 8, "tma_split", 2)):
        assert forms.one_wave(other, 920, 4504, 4216, "16bit", H200_SMEM, runs, 132) == []
    fp8 = TileConfig(128, 256, 128, 8, 3, 8, "tma")
    assert [(c.block_n, c.num_stages) for c in
            forms.one_wave(fp8, 920, 4504, 4216, "fp8", H200_SMEM, runs, 132)] == [
        (288, 3), (320, 3)]
    assert forms.wide_step(parent, got[1], "16bit") == pytest.approx(
        320 / 256 * forms.ONE_WAVE_COL["16bit"])
    assert forms.wide_step(parent, got[0], "16bit") == pytest.approx(
        288 / 256 * forms.ONE_WAVE_COL["16bit"] * forms.NARROW_32)
    fp8_tall = forms.one_wave(fp8, 4504, 920, 4216, "fp8", H200_SMEM, ("tma", "tma_tall"), 132)
    assert forms.wide_step(fp8, fp8_tall[1], "fp8") == pytest.approx(
        320 / 256 * forms.ONE_WAVE_COL["fp8"])


def test_an_fp8_128x128_tile_is_offered_one_wave_tall_where_128x128_takes_more():
    """fp8's 128x128x128 neighbours (920 x 4504 x 4216: 288 tiles, three waves of 132)
    made 288 or 320 tall at 8 warps (`tma_tall`, B K-major as fp8's copies are), at the
    most stages up to the parent's that fit: 320x128 makes 3 x 36 = 108 tiles (one
    wave), 288x128 4 x 36 = 144 (not offered); on 4504 x 920 16 x 8 = 128 and 15 x 8 =
    120, both. Not wide, not 16-bit, not where 128x128 already fits one wave, not over a
    short K. Priced at the work over 128x128x128's times ONE_WAVE_TALL_128, NARROW_32
    more at 288."""
    runs = ("tma", "tma_wide", "tma_tall")
    parent = TileConfig(128, 128, 128, 8, 5, 4, "tma")
    got = forms.one_wave(parent, 920, 4504, 4216, "fp8", H200_SMEM, runs, 132)
    assert got == [TileConfig(320, 128, 128, 8, 4, 8, "tma_tall")]
    both = forms.one_wave(parent, 4504, 920, 4216, "fp8", H200_SMEM, runs, 132)
    assert both == [TileConfig(288, 128, 128, 8, 4, 8, "tma_tall"),
                    TileConfig(320, 128, 128, 8, 4, 8, "tma_tall")]
    assert forms.one_wave(parent, 920, 4504, 4216, "fp8", H200_SMEM, ("tma", "tma_wide"),
                          132) == []
    assert forms.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, runs, 132) == []
    assert forms.one_wave(parent, 1408, 1536, 4216, "fp8", H200_SMEM, runs, 132) == []  # 132
    assert forms.one_wave(parent, 920, 4504, 1528, "fp8", H200_SMEM, runs, 132) == []
    assert forms.one_wave(TileConfig(128, 128, 64, 8, 5, 4, "tma"), 920, 4504, 4216, "fp8",
                          H200_SMEM, runs, 132) == []
    assert forms.wide_step(parent, got[0], "fp8") == pytest.approx(
        320 / 128 * forms.ONE_WAVE_TALL_128)
    assert forms.wide_step(parent, both[0], "fp8") == pytest.approx(
        288 / 128 * forms.ONE_WAVE_TALL_128 * forms.NARROW_32)


def test_a_16bit_128x128x64_tile_is_offered_one_wave_tall_or_where_it_cannot_be_wide():
    """A 16-bit 128x128x64 neighbour (920 x 4504 x 4216: 288 tiles, three waves of 132)
    made 288 or 320 tall at 8 warps and 3 stages at most (128x256's forms): 320x128 makes
    3 x 36 = 108 tiles, 288x128 4 x 36 = 144 (not offered); on 4504 x 920 both. Wide only
    where the call cannot run `tma_tall` (cr), over K of 1,536 elements (session 44, call
    1: 128x320 wide from 128x128 ran x0.96 under it; call 6, cr: x1.22 over it). Not from
    BLOCK_K 128 or two programs per SM. A 16-bit tall one is priced ONE_WAVE_TALL_16 of
    the wide, from 128x128 at ONE_WAVE_16_128 a parent's output."""
    runs = ("tma", "tma_wide", "tma_tall")
    parent = TileConfig(128, 128, 64, 8, 5, 4, "tma")
    got = forms.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, runs, 132)
    assert got == [TileConfig(320, 128, 64, 8, 3, 8, "tma_tall")]
    assert forms.one_wave(parent, 4504, 920, 4216, "16bit", H200_SMEM, runs, 132) == [
        TileConfig(288, 128, 64, 8, 3, 8, "tma_tall"), got[0]]
    assert forms.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, runs[:2], 132) == [
        TileConfig(128, 288, 64, 8, 3, 8, "tma_wide"), TileConfig(128, 320, 64, 8, 3, 8,
                                                                  "tma_wide")]
    assert forms.one_wave(parent, 920, 4504, 1535, "16bit", H200_SMEM, runs[:2], 132) == []
    assert forms.one_wave(parent, 920, 4504, 1536, "16bit", H200_SMEM, runs[:2], 132) != []
    assert forms.one_wave(parent, 920, 4504, 4216, "16bit", H200_SMEM, runs[:1], 132) == []
    for other in (TileConfig(128, 128, 128, 8, 3, 8, "tma"),
                  TileConfig(128, 128, 64, 8, 4, 4, "tma", occupancy=2)):
        assert forms.one_wave(other, 920, 4504, 4216, "16bit", H200_SMEM, runs, 132) == []
    assert forms.one_wave(parent, 920, 4504, 760, "16bit", H200_SMEM, runs, 132) == []
    assert forms.wide_step(parent, got[0], "16bit") == pytest.approx(
        320 / 128 * forms.ONE_WAVE_16_128 * forms.ONE_WAVE_TALL_16)
    wide_parent = TileConfig(128, 256, 64, 8, 3, 8, "tma")
    tall = forms.one_wave(wide_parent, 4504, 920, 4216, "16bit", H200_SMEM, runs, 132)
    assert forms.wide_step(wide_parent, tall[-1], "16bit") == pytest.approx(
        320 / 256 * forms.ONE_WAVE_COL["16bit"] * forms.ONE_WAVE_TALL_16)


def test_a_tf32_128x128x32_tile_is_offered_320_tall_only_where_that_is_one_wave():
    """A tf32 call's (fp32 family, `tf32`) 128x128x32 neighbour made 320 tall at 8 warps
    and the most stages up to 4 that fit (session 44, call 4: 288 tall ran 0.64-0.85 of
    cuBLAS, not offered): 2096 x 2184 makes 306 tiles of 128x128, 7 x 18 = 126 of 320x128.
    Not for IEEE fp32 or tf32x3 (`tf32` False), not where 320x128 takes more than a wave,
    not over K under ONE_WAVE_MIN_K_BYTES (384 fp32 elements). Priced ONE_WAVE_TF32 an
    output of the parent's block."""
    runs = ("tma", "tma_split", "tma_wide", "tma_tall", "tma_hybrid")
    parent = TileConfig(128, 128, 32, 8, 5, 4, "tma")
    got = forms.one_wave(parent, 2096, 2184, 2768, "fp32", H200_SMEM, runs, 132, tf32=True)
    assert got == [TileConfig(320, 128, 32, 8, 4, 8, "tma_tall")]
    assert forms.one_wave(parent, 2096, 2184, 2768, "fp32", H200_SMEM, runs, 132) == []
    assert forms.one_wave(parent, 2096, 2184, 2768, "fp32", H200_SMEM, runs[:3], 132,
                          tf32=True) == []
    assert forms.one_wave(parent, 688, 6472, 5552, "fp32", H200_SMEM, runs, 132,
                          tf32=True) == []   # 3 x 51 = 153 tiles of 320x128
    assert forms.one_wave(parent, 2096, 2184, 380, "fp32", H200_SMEM, runs, 132,
                          tf32=True) == []
    assert forms.one_wave(parent, 2096, 2184, 384, "fp32", H200_SMEM, runs, 132,
                          tf32=True) == got
    assert forms.one_wave(TileConfig(128, 128, 32, 8, 3, 4, "tma"), 2096, 2184, 2768, "fp32",
                          H200_SMEM, runs, 132, tf32=True)[0].num_stages == 3
    assert forms.wide_step(parent, got[0], "fp32") == pytest.approx(
        320 / 128 * forms.ONE_WAVE_TF32)


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
    assert forms.halves(fp8, 3628, 259, "fp8", H200_SMEM, runs, 132) == [half]
    assert forms.halves(fp8, 784, 1280, "fp8", H200_SMEM, runs, 132) == []     # one wave
    assert [c.block_n for c in forms.halves(fp8, 3628, 259, "fp8", 10 ** 6, runs, 132)] == [
        144, 160, 192]                                       # where 4 stages fit, each
    assert forms.halves(fp8, 3628, 259, "fp8", H200_SMEM, runs, 132, fit=False) == []
    assert all(c.variant == "tma_tall" for c in
               forms.halves(fp8, 3628, 259, "fp8", H200_SMEM, ("tma", "tma_tall"), 132))
    # made tall alike where N is the side covered (B K-major: the call runs `tma_tall`)
    tall = TileConfig(144, 64, 256, 8, 4, 4, "tma_tall")
    assert forms.halves(fp8, 259, 3628, "fp8", H200_SMEM, ("tma", "tma_tall"), 132) == [tall]
    assert forms.halves(fp8, 1024, 1024, "fp8", H200_SMEM, ("tma", "tma_tall"), 132) == []
    # 784 x 1280: 144x64 makes 120 tiles against 128x64's 140 but 64x128's 130, one wave
    assert forms.halves(fp8, 784, 1280, "fp8", H200_SMEM, ("tma", "tma_tall"), 132) == []
    assert forms.wide_step(fp8, tall, "fp8") == forms.wide_step(fp8, half, "fp8")
    assert forms.halves(fp8, 3628, 259, "fp8", 0, runs, 132) == []
    for other, fam in ((TileConfig(128, 128, 64, 8, 4, 8, "tma"), "fp8"), (fp8, "16bit"),
                       (TileConfig(64, 128, 256, 8, 4, 4, "tma"), "fp8"),
                       (TileConfig(128, 128, 128, 8, 4, 4, "tma", occupancy=2), "fp8")):
        assert forms.halves(other, 3628, 259, fam, H200_SMEM, runs, 132) == []
    assert forms.wide_step(fp8, half, "fp8") == pytest.approx(
        64 * 144 * 256 / (128 * 128 * 128) * forms.WIDE_COL * forms.HALF_ROW)
