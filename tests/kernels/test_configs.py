"""kernels/configs.py: the search space `gemmgate tune` times and the call-time heuristic
(no timing)."""

import pytest

from kernels.configs import heuristic, search_space, split_for, thin_n, tma_split_space
from kernels.fma import fma_skinny_split, fma_split, fma_thin
from kernels.tile import TileConfig, cdiv, k_range, usable

H200_SMEM, H200_SMS = 232448, 132


@pytest.mark.parametrize("family", ["16bit", "fp32", "fp8"])
def test_search_space_is_bounded_pruned_and_tries_every_kind(family):
    space = search_space(family, ("tma", "tiled"), H200_SMEM, skinny=False, split_ks=(2, 4))
    assert 0 < len(space) <= 30 and len(set(space)) == len(space)
    assert all(usable(c, family, H200_SMEM) for c in space)
    kinds = {(c.variant, c.split_k > 1, c.occupancy) for c in space}
    assert kinds == {("tma", False, 1), ("tma", False, 2), ("tiled", False, 1),
                     ("tiled", True, 1)}
    skinny = search_space(family, ("tiled",), H200_SMEM, skinny=True)
    assert skinny and all(c.variant == "tiled" and c.block_m <= 128 for c in skinny)
    assert any(c.block_m <= 32 for c in skinny)
    # split-K tries whole 128x128 tiles (8 warps) at every split within the 30: session 8's
    # retune took them for tf32 and tf32x3 m128 x 8192^2 (0.55 -> 1.00, 0.81 -> 1.47)
    split = [c for c in space if c.split_k > 1]
    assert {c.split_k for c in split if (c.block_m, c.block_n) == (128, 128)} == {2, 4}
    assert all(c.num_warps == 8 for c in split if c.block_m * c.block_n >= 128 * 128)


@pytest.mark.parametrize(("family", "elem"), [("16bit", 2), ("fp8", 1)])
def test_the_search_times_the_warp_specialized_kernels_tiles_where_its_forms_run(family,
                                                                               elem):
    """Where decide lists `tma_ws` (ws_forms.kind_of), a tune times that kernel's own tiles
    within the 30, each one it runs (`ws_forms.fits`); 64 rows at most at thin M; none
    where it is not listed."""
    from kernels import ws_forms

    runs = ("tma", "tiled", "tma_split", "tma_wide", "tma_hybrid")
    space = search_space(family, (*runs, "tma_ws"), H200_SMEM, skinny=False, split_ks=(2,),
                         limit=29)
    ws = [c for c in space if c.variant == "tma_ws"]
    assert len(space) <= 29 and 3 <= len(ws) <= len(ws_forms.search_tiles(elem))
    assert all(ws_forms.fits(c, elem) and usable(c, family, H200_SMEM) for c in ws)
    assert ws[0] == ws_forms.search_tiles(elem)[0]   # 128x128 first
    assert {c.block_k * elem for c in ws if c.block_m == 128} == {128}   # 128 bytes deep
    thin = search_space(family, (*runs, "tma_ws"), H200_SMEM, skinny=False, tma_rows=64)
    assert all(c.block_m <= 64 for c in thin if c.variant == "tma_ws")
    assert not [c for c in search_space(family, runs, H200_SMEM, skinny=False)
                if c.variant == "tma_ws"]


@pytest.mark.parametrize("family", ["16bit", "fp32", "fp8"])
def test_the_search_offers_tma_tiles_at_two_programs_per_sm_where_two_fit(family):
    """Two programs per SM (session 31: bf16 1152 x 1856 x 1920 on 128x64x64, 0.72 -> 0.97
    of cuBLAS) for the wgmma modes' TMA tiles, as a group of their own within the 30;
    not for IEEE fp32, whose programs per SM its shared memory decides."""
    space = search_space(family, ("tma", "tiled"), H200_SMEM, skinny=False, split_ks=(2,))
    two = [c for c in space if c.occupancy == 2]
    assert 3 <= len(two) <= 6 and all(c.variant == "tma" for c in two)
    assert all(usable(c, family, H200_SMEM) for c in two)   # both programs fit one SM
    assert {(c.block_m, c.block_n) for c in two} >= {(128, 64), (64, 128)}
    fma = search_space("fp32", ("tma", "tiled"), H200_SMEM, skinny=False, fma=True)
    assert all(c.occupancy == 1 for c in fma)


def test_ieee_fp32_searches_small_fma_tiles_first():
    """IEEE fp32 runs on the FMA units: TMA 64x64x32 ran mid-size shapes at 0.45-0.67 of
    cuBLAS where the tf32-shaped 128x128 tiles ran 0.20-0.53 (session 19, call A); split
    K over many programs 0.83-1.06 (session 22, calls A and B)."""
    ts = tma_split_space("fp32", 1721, 191, 3309, H200_SMS, H200_SMEM, fma=True)
    space = search_space("fp32", ("tma", "tiled", "tma_split"), H200_SMEM, skinny=False,
                         split_ks=(2, 4), tma_splits=ts, limit=29, fma=True)
    assert len(space) == 29 and len(set(space)) == len(space)
    tma = [c for c in space if c.variant == "tma"]
    assert (tma[0].block_m, tma[0].block_n, tma[0].block_k, tma[0].num_warps) == (64, 64, 32, 4)
    assert tma[0].num_stages == 3          # three programs an SM (matmul_tma.programs_per_sm)
    assert all(c.block_m * c.block_n <= 128 * 128 for c in space)
    assert all(c.acc_regs() <= 64 for c in space)          # 128 a thread ran at a tenth
    # 81 tiles of 64x64: K split 16 ways (1296 programs, ranges of 207 rows) comes first
    split = [c for c in space if c.variant == "tma_split"]
    assert split[0] == TileConfig(64, 64, 32, 8, 3, 4, "tma_split", 16)
    assert {c.split_k for c in split} >= {8, 16, 32}
    assert all((c.block_m, c.block_n) != (128, 128) for c in ts)   # small tiles split
    tiled = {(c.block_m, c.block_n) for c in space if c.variant == "tiled"}
    assert (64, 64) in tiled
    # tf32 (the same family) keeps the tensor-core list
    tf32 = search_space("fp32", ("tma", "tiled"), H200_SMEM, skinny=False)
    assert (tf32[0].block_m, tf32[0].block_n) == (128, 128)


@pytest.mark.parametrize(("shape", "split"), [
    ((5120, 4001, 4240), 2),     # 5040 tiles: 2 where ranges are 256 rows or more
    ((6096, 333, 489), 2),       # 576 tiles: 4 would pass 1536 programs
    ((1792, 751, 801), 4),       # 336 tiles
    ((512, 512, 8192), 16),      # 64 tiles
    ((100, 169, 887), 4),        # 6 tiles: ranges of four blocks at least
    ((4096, 4096, 253), 1),      # K short: unsplit, the persistent kernel
    ((5248, 7271, 272), 1),      # 9348 tiles, ranges of 136 rows: unsplit
])
def test_ieee_fp32_heuristic_splits_its_tile_over_many_programs(shape, split):
    """With nothing near in the table, IEEE fp32 on TMA loads takes 64x64x32 at 3 stages,
    K split by fma_split (session 22: the split tile beat every unsplit one from 0.56 to
    0.83 on 3147 x 875 x 5283 and on 2048^3 and 4096^3; unsplit won where K is short)."""
    assert fma_split(*shape) == split
    c = heuristic("fp32", *shape, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM,
                  fma=True)
    assert (c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps) == (64, 64, 32, 3, 4)
    assert (c.variant, c.split_k) == (("tma_split", split) if split > 1 else ("tma", 1))
    # the pointer path (a column-major A beside a row-major B) keeps the tiled kernel
    ptr = heuristic("fp32", *shape, tma=False, num_sms=H200_SMS, smem_limit=H200_SMEM,
                    fma=True)
    assert ptr.variant == "tiled"


@pytest.mark.parametrize("shape,split", [
    ((384, 1568, 3200), 8),      # 150 tiles of 64x64
    ((3360, 304, 6624), 4),      # 265 tiles
    ((256, 432, 1408), 8),       # 28 tiles: ranges of 176 rows
])
def test_ieee_fp32_on_pointer_loads_splits_the_tiled_kernel_where_tiles_are_few(shape, split):
    """A column-major A beside a row-major B (the tiled kernel only) with nothing near:
    64x64x32 split by fma_split on the tiled kernel, where tiles x 2 fit 1536 programs
    (session 23: holdout4 cr split 4 / 8 ran 0.93 / 1.06 of cuBLAS, unsplit 0.60)."""
    c = heuristic("fp32", *shape, tma=False, num_sms=H200_SMS, smem_limit=H200_SMEM,
                  fma=True)
    assert (c.variant, c.block_m, c.block_n, c.block_k, c.split_k) == \
        ("tiled", 64, 64, 32, split)


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (1536, 5241, 433), (2267, 608, 128)])
def test_ieee_fp32_on_pointer_loads_keeps_unsplit_tiles_where_they_fill_the_sms(shape):
    """Past 768 tiles of 64x64 (or at a K too short to split) the pointer path keeps the
    unsplit heuristic: split-K on the tiled kernel there is not measured."""
    c = heuristic("fp32", *shape, tma=False, num_sms=H200_SMS, smem_limit=H200_SMEM,
                  fma=True)
    assert (c.variant, c.split_k) == ("tiled", 1)


def test_ieee_fp32_thin_m_searches_16_and_32_row_tma_split_tiles():
    """The FMA units have no wgmma's 64 rows: at thin M the search times 16- and 32-row
    TMA tiles split 16 ways among its first split tiles (session 23, call 6: 26 x 5523 x
    7310 0.57 -> 1.08 of cuBLAS, 30 x 169 x 887 0.86 -> 1.43); not at M >= 64."""
    def split_tiles(m, n, k):
        ts = tma_split_space("fp32", m, n, k, H200_SMS, H200_SMEM, fma=True)
        space = search_space("fp32", ("tma", "tiled", "tma_split"), H200_SMEM,
                             skinny=m <= 32, split_ks=(2, 4), tma_splits=ts, limit=29,
                             fma=True, tma_rows=64 if m < 64 else 256)
        return [(c.block_m, c.block_n, c.split_k) for c in space if c.variant == "tma_split"]
    thin = split_tiles(26, 5523, 7310)
    assert {(16, 64, 16), (16, 128, 16), (32, 64, 16), (32, 128, 16)} <= set(thin)
    assert split_tiles(30, 169, 887)[1:5] == [(16, 64, 16), (16, 128, 16), (32, 64, 16),
                                              (32, 128, 16)]
    assert all(bm == 64 for bm, _, _ in split_tiles(64, 5523, 7310))
    assert all(bm == 64 for bm, _, _ in split_tiles(4096, 4096, 4096))


@pytest.mark.parametrize("shape,tile", [
    ((26, 5523, 7310), (32, 128, 16)),   # 26 rows pad to 32 either way: 32 (B reuse)
    ((45, 5239, 3349), (16, 128, 16)),   # 48 rows padded, not 64
    ((32, 512, 3376), (16, 64, 16)),     # 32x128 x 16 = 64 programs: 16x64
    ((30, 169, 887), (16, 64, 16)),      # K ranges of 1.7 blocks
    ((39, 271, 559), (16, 64, 8)),       # K ranges of 2.2 blocks at 8, 1.1 at 16
    ((63, 8000, 300), None),             # K too short for 8 ranges of 1.5 blocks
])
def test_ieee_fp32_thin_m_heuristic_takes_a_16_or_32_row_tma_split_tile(shape, tile):
    """Below wgmma's M with nothing near, IEEE fp32 on TMA loads takes `fma_thin`'s tile,
    the one measured fastest on each of session 23's four shapes (call 6); where K is too
    short for it, the 64x64x32 rule as before."""
    c = fma_thin(*shape, H200_SMS)
    h = heuristic("fp32", *shape, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM,
                  tiled=False, fma=True)
    if tile is None:
        assert c is None and (h.block_m, h.block_n) == (64, 64)
        return
    assert (c.block_m, c.block_n, c.split_k) == tile
    assert (c.block_k, c.num_stages, c.num_warps, c.variant) == (32, 3, 4, "tma_split")
    assert h == c and usable(c, "fp32", H200_SMEM)
    # 16-bit and M >= 64 are untouched
    assert heuristic("16bit", *shape, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM,
                     tiled=False).block_m == 64
    wide = heuristic("fp32", 64, *shape[1:], tma=True, num_sms=H200_SMS,
                     smem_limit=H200_SMEM, tiled=False, fma=True)
    assert (wide.block_m, wide.block_n) == (64, 64)


@pytest.mark.parametrize("shape,split,tf32_split", [
    ((32, 512, 3376), 16, 14),    # 8 tiles: 16 (128 programs), ranges of 211 rows; tf32's
    #                               16 ranges of 211 are 14 of whole 64-deep blocks
    ((32, 3328, 571), 4, 2),      # 52 tiles: 8 would pass three programs per SM
    ((29, 288, 192), 1, 1),       # K of three blocks: no split
    ((16, 32768, 4096), 1, 1),    # 256 tiles of 16x128: 2 would pass 396 programs
])
def test_ieee_fp32_skinny_tiled_splits_k_to_three_programs_per_sm(shape, split, tf32_split):
    """M <= 32 on the tiled kernel with nothing near: IEEE fp32 splits K up to three
    programs per SM in ranges of two blocks (32 x 512 x 3376: split 16 ran 0.93 of
    cuBLAS, 8 0.78; session 23, call 5); tf32 keeps `split_for`'s one per SM (ranges of
    two blocks past the first split, session 40), counted as the launch's ranges of whole
    blocks (session 41)."""
    c = heuristic("fp32", *shape, tma=False, num_sms=H200_SMS, smem_limit=H200_SMEM,
                  fma=True)
    assert (c.variant, c.block_m, c.block_n, c.split_k) == ("tiled", 16, 128, split)
    assert fma_skinny_split(*shape, c, H200_SMS) == split
    tf32 = heuristic("fp32", *shape, tma=False, num_sms=H200_SMS, smem_limit=H200_SMEM)
    assert tf32.split_k == tf32_split == split_for(*shape, tf32, H200_SMS)


def test_ieee_fp32_thin_m_search_times_split_tiles_first():
    """Below wgmma's M the unsplit TMA tiles ran 2-7x slower than the best split tile on
    every thin fp32 key (session 24, call 1), so there the split tiles take three of each
    round's places and the unsplit ones one; at M >= 64, as before, the other way."""
    def first(m, n, k, count=8):
        ts = tma_split_space("fp32", m, n, k, H200_SMS, H200_SMEM, fma=True)
        space = search_space("fp32", ("tma", "tma_split"), H200_SMEM, skinny=False,
                             tma_splits=ts, limit=29, fma=True,
                             tma_rows=64 if m < 64 else 256)
        return [c.variant for c in space[:count]]
    thin = first(40, 3000, 5000)
    assert thin.count("tma_split") == 6 and thin[:3] == ["tma_split"] * 3
    wide = first(1536, 1280, 6144)
    assert wide.count("tma") == 6 and wide[0] == "tma_split"
    # 16-bit thin M keeps the unsplit group's share (not measured this way)
    ts = tma_split_space("16bit", 40, 3000, 5000, H200_SMS, H200_SMEM)
    space = search_space("16bit", ("tma", "tma_split"), H200_SMEM, skinny=False,
                         tma_splits=ts, limit=29, tma_rows=64)
    assert [c.variant for c in space[:4]].count("tma") == 3


def test_fma_split_space_offers_the_split_twice_and_half_it_at_any_tile_count():
    space = tma_split_space("fp32", 4096, 4096, 4096, H200_SMS, H200_SMEM, fma=True)
    assert [(c.split_k, c.num_stages) for c in space] == [(2, 3), (2, 4), (4, 3), (4, 4)]
    assert all((c.block_m, c.block_n, c.block_k) == (64, 64, 32) for c in space)
    short = tma_split_space("fp32", 4096, 4096, 253, H200_SMS, H200_SMEM, fma=True)
    assert {c.split_k for c in short} == {2}     # the search still times split 2
    assert tma_split_space("fp32", 4096, 4096, 100, H200_SMS, H200_SMEM, fma=True) == []


@pytest.mark.parametrize("family", ["16bit", "fp32", "fp8"])
def test_the_tma_share_of_the_search_tries_every_tile_shape(family):
    """Cut at its share of the 30, the TMA list still holds every tile shape that fits at
    3-5 stages (session 9's tile-by-tile order reached only three of 16-bit's eight)."""
    from kernels.configs import _TILES

    space = search_space(family, ("tma", "tiled"), H200_SMEM, skinny=False, split_ks=(2, 4),
                         limit=29)
    tried = {(c.block_m, c.block_n, c.block_k) for c in space if c.variant == "tma"}
    fits = {t for t in _TILES[family] if any(
        usable(TileConfig(*t, 8, st, w, "tma"), family, H200_SMEM)
        for st in (3, 4, 5) for w in (4, 8))}
    assert len(fits) >= 5 and fits <= tried


@pytest.mark.parametrize("family", ["16bit", "fp32", "fp8"])
@pytest.mark.parametrize("m,n,k", [(128, 128, 65536), (1024, 1024, 2048), (256, 256, 2048),
                                   (192, 160, 50000)])
def test_tma_split_space_fills_idle_sms_with_k_ranges_of_two_blocks(family, m, n, k):
    space = tma_split_space(family, m, n, k, H200_SMS, H200_SMEM)
    assert space and all(usable(c, family, H200_SMEM) for c in space)
    for c in space:
        tiles = cdiv(m, c.block_m) * cdiv(n, c.block_n)
        assert c.variant == "tma_split" and 2 <= c.split_k <= 64
        assert c.split_k & (c.split_k - 1) == 0 and tiles <= H200_SMS
        assert tiles * c.split_k <= 2 * H200_SMS and k >= c.split_k * 2 * c.block_k
    # a whole 128x128 tile is tried wherever it leaves SMs idle and K allows a split
    assert any((c.block_m, c.block_n) == (128, 128) for c in space) == (k >= 2 * 2 * 128)


def test_tma_split_space_is_empty_where_tiles_fill_the_sms_or_k_is_short():
    assert tma_split_space("16bit", 2048, 2048, 2048, H200_SMS, H200_SMEM) == []  # 256 tiles
    assert tma_split_space("16bit", 4096, 4096, 4096, H200_SMS, H200_SMEM) == []
    assert tma_split_space("16bit", 256, 256, 64, H200_SMS, H200_SMEM) == []   # one block


def test_tma_split_space_splits_a_one_wave_tile_in_two():
    space = tma_split_space("16bit", 64, 11008, 4096, H200_SMS, H200_SMEM)
    wide = {(c.block_m, c.block_n, c.split_k) for c in space}
    assert (64, 128, 2) in wide and (128, 128, 2) in wide     # 86 tiles each: one wave
    assert all(n != 64 for _, n, _ in wide)                    # 172 tiles: more than a wave


def test_search_space_gives_tma_split_its_share():
    extra = tma_split_space("16bit", 1024, 1024, 2048, H200_SMS, H200_SMEM)
    space = search_space("16bit", ("tma", "tiled", "tma_split"), H200_SMEM, skinny=False,
                         split_ks=(2, 4), tma_splits=extra, limit=29)
    assert len(space) <= 29
    assert {(c.variant, c.split_k > 1) for c in space} == \
        {("tma", False), ("tiled", False), ("tiled", True), ("tma_split", True)}
    # one a round against the unsplit TMA kernel's three: the first of them, in order
    share = 29 // 6
    assert len(extra) > share and set(extra[:share]) <= set(space)
    assert sum(c.variant == "tma_split" for c in space) >= share
    without = search_space("16bit", ("tma", "tiled"), H200_SMEM, skinny=False,
                           split_ks=(2, 4), tma_splits=extra, limit=29)
    assert all(c.variant != "tma_split" for c in without)   # not a variant the call runs


def test_the_unsplit_tma_kernel_tries_a_second_setting_of_its_tiles():
    """Three TMA configs a round: past each tile's first setting, one stage more, where
    128x64x64 at 5 stages ran 1152 x 1856 x 1920 bf16 in 22.3 us against 25.3 at 4
    (session 18); never fewer than 3 stages."""
    space = search_space("16bit", ("tma", "tiled", "tma_split"), H200_SMEM, skinny=False,
                         split_ks=(2, 4), tma_splits=tma_split_space(
                             "16bit", 1408, 1408, 2048, H200_SMS, H200_SMEM))
    tma = [c for c in space if c.variant == "tma"]
    assert TileConfig(128, 64, 64, 8, 5, 4, "tma") in tma
    assert TileConfig(128, 128, 64, 8, 5, 8, "tma") in tma
    assert all(c.num_stages >= 3 for c in tma) and len(space) == 30
    assert {(c.variant, c.split_k > 1) for c in space} == \
        {("tma", False), ("tiled", False), ("tiled", True), ("tma_split", True)}


def test_skinny_m_searches_every_variant_the_call_can_run():
    """M <= 32 searches the tiled kernel's skinny tiles and, where the call can run them,
    TMA's 64-row tiles and the TMA split-K configs (session 19: bf16 32 x 512 x 3376 on
    64x64x128 split 4 ran 1.13 of cuBLAS, the tiled pick 0.96)."""
    splits = tma_split_space("fp8", 16, 4096, 4096, H200_SMS, H200_SMEM)
    assert splits
    only = search_space("fp8", ("tma", "tma_split"), H200_SMEM, skinny=True,
                        tma_splits=splits, limit=29, tma_rows=64)
    assert {c.variant for c in only} == {"tma", "tma_split"} and len(only) >= 10
    thin = [c for c in splits if c.block_m <= 64]
    both = search_space("16bit", ("tma", "tiled", "tma_split"), H200_SMEM, skinny=True,
                        split_ks=(2, 4),
                        tma_splits=[c for c in tma_split_space("16bit", 32, 512, 3376,
                                                               H200_SMS, H200_SMEM)
                                    if c.block_m <= 64], limit=29, tma_rows=64)
    assert {c.variant for c in both} == {"tma", "tiled", "tma_split"} and thin
    assert all(c.block_m <= 64 for c in both if c.variant == "tma")
    assert any(c.block_m <= 32 for c in both if c.variant == "tiled")
    assert any((c.block_m, c.block_n, c.block_k) == (64, 64, 128)
               for c in both if c.variant == "tma_split")
    # split-K tiles of 128 rows are left out at thin M whoever passes them
    wide = search_space("16bit", ("tma", "tiled", "tma_split"), H200_SMEM, skinny=True,
                        tma_splits=tma_split_space("16bit", 32, 512, 3376, H200_SMS,
                                                   H200_SMEM), limit=29, tma_rows=64)
    assert all(c.block_m <= 64 for c in wide if c.variant == "tma_split")


@pytest.mark.parametrize("m, n, k", [(16, 10240, 6144), (24, 6000, 3000), (8, 5120, 3072),
                                     (32, 600, 1200)])
def test_tf32x3_skinny_heuristic_takes_64_wide_tiles_over_a_k_major_b_alone(m, n, k):
    """Over a K-major B, 16x128x64 spilled in its K loop (three dots' hi and lo parts) and
    16x64x64 ran x1.471 on the 49 picks it moved (session 54, call 9); over a row-major B
    16x128x64 stays (x0.933 there). Other modes at M <= 32 keep 16x128x64 either way."""
    kw = dict(tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
    kmajor = heuristic("fp32", m, n, k, three_pass=True, b_kmajor=True, **kw)
    assert (kmajor.variant, kmajor.block_m, kmajor.block_n, kmajor.block_k) == \
        ("tiled", 16, 64, 64)
    assert kmajor.split_k == split_for(m, n, k, kmajor, H200_SMS)
    rowmajor = heuristic("fp32", m, n, k, three_pass=True, **kw)
    assert (rowmajor.block_m, rowmajor.block_n, rowmajor.block_k) == (16, 128, 64)
    tf32 = heuristic("fp32", m, n, k, b_kmajor=True, **kw)
    assert (tf32.block_m, tf32.block_n, tf32.block_k) == (16, 128, 64)


@pytest.mark.parametrize("m, n, k, split", [
    (17, 2272, 3104, 6), (20, 3264, 2336, 4), (32, 3504, 2544, 4), (32, 1296, 4992, 12),
    (28, 1360, 1888, 6), (16, 4096, 11008, 4), (8, 5120, 3072, 3), (32, 8192, 4096, 1),
    (18, 240, 13304, 30), (24, 1440, 2000, 8)])
def test_tf32x3_heuristic_splits_twice_at_16_to_32_rows_over_a_row_major_b(m, n, k, split):
    """tf32x3 at 16 < M <= 32 over a row-major B: twice `split_for`'s split where it is
    2-6 and each K range keeps 256 deep (sessions 55 and 56: x1.05-1.17; doubled from 7
    and up, x0.87-1.05). Kept: K ranges under 256 (28 x 1360 x 1888 at 12: 192 deep), a
    split over 6 (18 x 240 x 13304), M <= 16, no split to double; tf32 and a K-major B
    are not affected."""
    kw = dict(tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
    x3 = heuristic("fp32", m, n, k, three_pass=True, **kw)
    assert (x3.variant, x3.block_m, x3.block_n, x3.split_k) == ("tiled", 16, 128, split)
    own = split_for(m, n, k, x3, H200_SMS)
    assert heuristic("fp32", m, n, k, **kw).split_k == own
    if split != own:
        assert split > own and k_range(k, split, x3.block_k) >= 256
    kmajor = heuristic("fp32", m, n, k, three_pass=True, b_kmajor=True, **kw)
    assert kmajor.split_k == split_for(m, n, k, kmajor, H200_SMS)


@pytest.mark.parametrize("k, block_k", [(192, 64), (160, 64), (448, 64), (480, 64),
                                         (256, 128), (384, 128), (512, 128), (4096, 128)])
def test_16bit_skinny_heuristic_takes_64_deep_blocks_over_a_short_k_with_a_tail(k, block_k):
    """A K under four 128-deep blocks and not a multiple of 128: the tiled kernel's
    masked tail is not pipelined (session 27, call 4: x1.04-1.19 at K = 160-448, x0.97-1.00
    without a tail)."""
    for m, n in ((29, 288), (4, 1024)):
        c = heuristic("16bit", m, n, k, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
        assert (c.variant, c.block_m, c.block_n, c.block_k) == ("tiled", 16, 128, block_k)
    fp8 = heuristic("fp8", 29, 288, 192, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
    assert fp8.block_k == 256                               # other families: as before


def test_heuristic_fills_the_sms_and_splits_k_when_tiles_cannot():
    big = heuristic("16bit", 8192, 8192, 8192, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
    assert (big.variant, big.block_m, big.block_n) == ("tma", 128, 256)
    mid = heuristic("16bit", 2048, 2048, 2048, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
    assert (mid.block_m, mid.block_n) == (128, 128)        # 128x256 gives 128 < 132 tiles
    long_k = heuristic("16bit", 128, 128, 65536, tma=True, num_sms=H200_SMS,
                       smem_limit=H200_SMEM)
    assert long_k.variant == "tiled" and long_k.split_k > 1
    # fp8 splits K on TMA loads where both variants run: its tiled split ran 176 x 128 x
    # 1503 cc at 0.36 of cuBLAS, TMA split-K at 0.84 (session 22, call A)
    fp8_long = heuristic("fp8", 176, 128, 1503, tma=True, num_sms=H200_SMS,
                         smem_limit=H200_SMEM)
    assert (fp8_long.variant, fp8_long.split_k) == ("tma_split", 4)   # 2 ways: 0.82, 4: 0.88
    assert heuristic("fp8", 176, 128, 1000, tma=True, num_sms=H200_SMS,   # (session 40)
                     smem_limit=H200_SMEM).split_k == 1   # halves under 4 blocks: none
    skinny = heuristic("fp8", 16, 4096, 4096, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
    assert skinny.block_m == 16 and skinny.variant == "tiled"
    assert skinny.split_k == 4     # 32 tiles: K split 4 ways (unsplit: 0.34x, session 9)
    few = heuristic("fp8", 273, 1060, 2567, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
    assert few.variant == "tma" and few.split_k == 1    # tiles < SMs, K too short to split
    no_tiled = heuristic("16bit", 128, 128, 65536, tma=True, num_sms=H200_SMS,
                         smem_limit=H200_SMEM, tiled=False)
    assert no_tiled.variant == "tma_split" and no_tiled.split_k > 1   # split-K on TMA loads
    decode = heuristic("fp8", 1, 4096, 4096, tma=True, num_sms=H200_SMS,
                       smem_limit=H200_SMEM, tiled=False)     # fp8 with a kept K-major B
    # one row of 64 x 128 tiles, K split 4: 32 x 4 programs (64 x 64 split 2 was slower)
    assert (decode.variant, decode.block_m, decode.block_n, decode.split_k) == \
        ("tma_split", 64, 128, 4)
    rows = heuristic("fp8", 24, 6144, 2560, tma=True, num_sms=H200_SMS,
                     smem_limit=H200_SMEM, tiled=False)   # 96 tiles of 64 x 64: no split
    assert (rows.variant, rows.block_n, rows.split_k) == ("tma", 64, 1)
    thin = heuristic("16bit", 26, 5523, 7310, tma=True, num_sms=H200_SMS,
                     smem_limit=H200_SMEM, tiled=False)
    assert (thin.variant, thin.block_m, thin.split_k) == ("tma_split", 64, 3)   # 44 tiles x 3
    # 16-bit thin M on TMA alone (x @ W.T): 64x128x128, K split where its tiles leave SMs
    # idle (session 20: 1 and 16 x 4096 x 4096 rc at 1.02 of cuBLAS split 4)
    for m, n, k, split in ((1, 4096, 4096, 4), (16, 4096, 4096, 4), (16, 28672, 8192, 1)):
        c = heuristic("16bit", m, n, k, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM,
                      tiled=False)
        assert (c.block_m, c.block_n, c.block_k, c.split_k) == (64, 128, 128, split)
        assert c.variant == ("tma_split" if split > 1 else "tma")
    # 16-bit thin N (y = W x) where no entry is near: one 32-column tile across N, two
    # programs an SM unsplit, not the size loop's 128x256x64 (15/16 of each wgmma's
    # columns empty; session 79, call B) nor 64x128x128 (3/4 empty; session 81's tune)
    for m, n, k, split in ((24576, 16, 6144, 1), (24576, 1, 6144, 1), (4096, 8, 4096, 2),
                           (11008, 32, 4096, 1)):
        c = heuristic("16bit", m, n, k, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
        assert (c.block_m, c.block_n, c.block_k, c.split_k) == (64, 32, 128, split)
        assert (c.variant, c.occupancy) == (("tma_split", 1) if split > 1 else ("tma", 2))
        assert thin_n("16bit", m, n) and usable(c, "16bit", H200_SMEM)
    for m, n in ((24576, 33), (1000, 16)):   # wider, or not tall: the size loop as before
        c = heuristic("16bit", m, n, 6144, tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM)
        assert (c.block_m, c.block_n, c.block_k) not in ((64, 128, 128), (64, 32, 128))
        assert not thin_n("16bit", m, n)
    assert not thin_n("fp8", 24576, 16) and not thin_n("fp32", 24576, 16)
    for fam in ("16bit", "fp32", "fp8"):   # whatever the shape, the pick fits the chip
        for shape in ((1, 1, 1), (64, 64, 64), (4096, 4096, 253), (300, 300, 100000)):
            c = heuristic(fam, *shape, tma=False, num_sms=H200_SMS, smem_limit=H200_SMEM)
            assert usable(c, fam, H200_SMEM) and c.variant == "tiled"


def test_split_for_keeps_whole_blocks_per_split():
    c = TileConfig(64, 64, 64, 8, 4, 4)
    assert split_for(4096, 4096, 4096, c, H200_SMS) == 1      # tiles fill the SMs
    s = split_for(128, 128, 65536, c, H200_SMS)
    assert s > 1 and 4 * s <= H200_SMS and 65536 // s >= 4 * 64
    assert split_for(128, 128, 256, c, H200_SMS) == 1          # too short to split


@pytest.mark.parametrize(("m", "n", "k", "bn", "bk", "want"), [
    (26, 5523, 7310, 128, 128, 3),   # 44 tiles: 3 ranges fill 132 SMs (powers of two: 2)
    (176, 128, 2000, 64, 64, 11),    # 6 tiles: 15 ranges of 134 rows keep 2 blocks each;
    #                                  they are 11 ranges of three whole 64-deep blocks
    (176, 128, 1503, 64, 128, 4),    # 5 ranges of 301 rows are 4 of three whole blocks
    (32, 512, 3376, 128, 64, 18),    # 4 tiles: 26 ranges of 130 rows are 18 of three
    (64, 64, 500, 64, 64, 1),        # each half under 4 blocks: no split
])
def test_split_for_takes_any_count_of_whole_block_ranges(m, n, k, bn, bk, want):
    """After the first split, one range more at a time while the ranges fit the SMs and
    keep 2 blocks each; the count is the ranges the launch makes (session 41)."""
    c = TileConfig(64, bn, bk, 8, 4, 4)
    got = split_for(m, n, k, c, H200_SMS)
    assert got == want
    assert cdiv(k, cdiv(cdiv(k, got), bk) * bk) == got   # the launch makes `got` ranges


def test_thin_m_split_space_offers_64x128_with_128_deep_k_blocks():
    """16-bit thin M (26-81 rows) ran split 2-4 of 64x128x128 at 1.36-1.48x the unsplit
    64x32x128 the table borrowed (session 18): the split search offers it."""
    space = tma_split_space("16bit", 64, 4096, 2048, H200_SMS, H200_SMEM)
    got = {(c.block_m, c.block_n, c.block_k, c.split_k) for c in space}
    assert (64, 128, 128, 4) in got


def test_tf32_heuristic_takes_the_tuned_keys_stages_and_warps_tf32x3_keeps_eight_warps():
    kw = dict(tma=True, num_sms=H200_SMS, smem_limit=H200_SMEM, tiled=False)
    tf32 = heuristic("fp32", 7904, 384, 3744, **kw)
    assert (tf32.variant, tf32.block_m, tf32.block_n, tf32.block_k) == ("tma", 128, 128, 32)
    assert (tf32.num_stages, tf32.num_warps) == (5, 4)
    x3 = heuristic("fp32", 7904, 384, 3744, three_pass=True, **kw)
    assert (x3.block_m, x3.block_n, x3.num_stages, x3.num_warps) == (128, 128, 3, 8)
    # a chip with less shared memory than 5 stages and the fp32 C tile: the 3-stage tile
    small = heuristic("fp32", 7904, 384, 3744, tma=True, num_sms=H200_SMS,
                      smem_limit=200_000, tiled=False)
    assert (small.block_m, small.num_stages, small.num_warps) == (128, 3, 8)
    assert heuristic("fp32", 7904, 384, 3744, fma=True, **kw).block_m == 64   # IEEE: FMA tile


@pytest.mark.parametrize("family, m, tiled", [("16bit", 16, True), ("fp8", 16, True),
                                              ("fp32", 32, True), ("16bit", 40, False)])
def test_thin_m_tiles_fit_a_chip_with_less_shared_memory(family, m, tiled):
    """The thin-M tiles are Hopper's: on a 99 KiB chip (L40S, RTX 4090 and 5090) they
    asked 108-147 KB, and the launch failed (a review). Cut to fit there; as they were on
    the H200."""
    from kernels.tile import usable

    small = 101376
    kw = dict(tma=not tiled, num_sms=142, tiled=tiled)
    there = heuristic(family, m, 4096, 4096, smem_limit=small, **kw)
    here = heuristic(family, m, 4096, 4096, smem_limit=H200_SMEM, **kw)
    assert usable(there, family, small) and usable(here, family, H200_SMEM)
    assert not usable(here, family, small)   # (what the 99 KiB chip was given)
    assert (there.block_m, there.block_n) == (here.block_m, here.block_n)
