"""kernels/table.py: the committed tuning table, read at call time."""

import json
import math
import warnings
from dataclasses import asdict, replace

import pytest

from kernels import steps, table, table_file, ws_forms
from kernels.tile import TileConfig
from kernels.wide_forms import WIDE_COL_144, WIDE_STEP

TMA = TileConfig(128, 256, 64, 8, 3, 8, "tma")
TILED = TileConfig(64, 64, 64, 8, 4, 4, split_k=4)


def _entry(m, n, k, config, bucket="16bit bf16 rr tma", kernel=None, tuned_ms=None):
    e = {"bucket": bucket, "m": m, "n": n, "k": k, "config": asdict(config),
         "kernel": kernel or table_file.variant_hash(config.variant), "ms": 1.0}
    return e if tuned_ms is None else {**e, "tuned_ms": tuned_ms}


def _write(tmp_path, entries, match=("h200",)):
    d = tmp_path / "tuned"
    d.mkdir(exist_ok=True)
    (d / "nvidia-h200.json").write_text(json.dumps({
        "schema": table_file.SCHEMA, "version": table_file.VERSION, "chip": "nvidia-h200",
        "match": list(match), "entries": entries}))
    table.reload()
    return d


def test_exact_then_nearest_then_nothing(tmp_path):
    d = _write(tmp_path, [_entry(4096, 4096, 4096, TMA),
                          _entry(128, 128, 65536, TILED, bucket="16bit bf16 rr ptr")])
    look = lambda *a: table.lookup("NVIDIA H200", *a, directory=d)  # noqa: E731
    assert look("16bit bf16 rr tma", 4096, 4096, 4096) == (TMA, "table")
    assert look("16bit bf16 rr tma", 4096, 8192, 4096) == (TMA, "table-nearest")
    assert look("16bit bf16 rr tma", 64, 64, 64) is None          # too far: the heuristic
    assert look("16bit bf16 rc tma", 4096, 4096, 4096) is None    # another bucket
    assert look("16bit bf16 rr ptr", 128, 128, 32768) == (TILED, "table-nearest")
    assert table.lookup("NVIDIA A100", "16bit bf16 rr tma", 4096, 4096, 4096,
                        directory=d) is None                      # no table matches


def test_nearest_is_by_regime_not_by_shape(tmp_path):
    """A shape of the same regime (tile count and K past their caps) takes the entry even
    when M, N, K are far apart; a shape near in M, N, K but with 4x the tiles and 2x the
    K does not (session 5: 1024^3's tile on 2048^3 ran at 0.40 of cuBLAS)."""
    small = TileConfig(64, 128, 64, 8, 4, 4)
    d = _write(tmp_path, [_entry(8192, 8192, 8192, TMA), _entry(1024, 1024, 1024, small)])
    look = lambda *a: table.lookup("NVIDIA H200", "16bit bf16 rr tma", *a, directory=d)  # noqa: E731
    assert look(8192, 28672, 8192) == (TMA, "table-nearest")
    assert look(4096, 256, 2048) == (small, "table-nearest")      # 64 tiles, like 1024^2
    assert look(2048, 2048, 2048) is None                         # 256 tiles, K 2x: 3 apart
    assert look(1024, 1024, 1024) == (small, "table")


def test_lookup_takes_only_variants_the_call_can_run_and_borrows_from_ld128(tmp_path):
    d = _write(tmp_path, [_entry(4096, 4096, 4096, TMA),
                          _entry(4096, 4096, 2048, TileConfig(64, 64, 64, 8, 4, 4))])
    look = lambda b, v: table.lookup("NVIDIA H200", b, 4096, 4096, 2048,  # noqa: E731
                                     directory=d, variants=v)
    assert look("16bit bf16 rr tma", ("tma", "tiled"))[0].variant == "tiled"   # exact
    assert look("16bit bf16 rr tma", ("tma",)) == (TMA, "table-nearest")
    d = _write(tmp_path, [{**_entry(4096, 4096, 4096, TMA), "bucket": "16bit bf16 rr tma ld128"}])
    look = lambda b: table.lookup("NVIDIA H200", b, 4096, 4096, 4096, directory=d)  # noqa: E731
    assert look("16bit bf16 rr tma ld32") == (TMA, "table-nearest")
    assert look("16bit bf16 rr tma ld128") == (TMA, "table")
    # 16-bit TMA tiles carry across layouts (wgmma reads either major order); pointer
    # tiles and other families' do not
    assert look("16bit bf16 rc tma ld32") == (TMA, "table-nearest")
    assert look("16bit bf16 cc tma ld128") == (TMA, "table-nearest")
    assert look("16bit bf16 rc ptr ld128") is None
    assert look("fp32 tf32 rr tma ld128") is None                   # another family's
    tiled = TileConfig(64, 64, 64, 8, 4, 4)
    d = _write(tmp_path, [{**_entry(4096, 4096, 4096, tiled), "bucket": "16bit bf16 rr tma ld128"}])
    assert look("16bit bf16 rr tma ld128") == (tiled, "table")
    assert look("16bit bf16 cc tma ld128") is None                 # pointer tiles stay
    # IEEE fp32 with A column-major borrows row-major's tiled tiles, not its TMA ones
    fp32 = [{**_entry(4096, 4096, 4096, tiled), "bucket": "fp32 fp32 rr tma ld128"}]
    d = _write(tmp_path, fp32)
    assert look("fp32 fp32 cr ptr ld128") == (tiled, "table-nearest")
    assert look("fp32 fp32 rc ptr ld128") is None
    # ... IEEE fp32's alone, where it was measured: tf32's and tf32x3's cr pointer calls
    # had borrowed by the same rule (a review)
    for mode in ("tf32", "tf32x3"):
        d = _write(tmp_path, [{**fp32[0], "bucket": f"fp32 {mode} rr tma ld128"}])
        assert look(f"fp32 {mode} cr ptr ld128") is None
    d = _write(tmp_path, [{**fp32[0], "config": asdict(TMA),
                           "kernel": table_file.variant_hash("tma")}])
    assert look("fp32 fp32 cr ptr ld128") is None
    d = _write(tmp_path, [{**_entry(4096, 4096, 4096, TMA), "bucket": "fp8 fp8 rr tma ld128"}])
    assert look("fp8 fp8 rc tma ld128") is None


def test_the_two_16bit_types_lend_each_other_tiles_predicted_clearly_faster(tmp_path):
    """A bf16 call also runs the nearest lookup on fp16's entries, and an fp16 call on
    bf16's (the H200 runs both at one rate): the other type's tile is taken where it is
    predicted OTHER_TYPE_MARGIN faster than the call's own type's best, or where its own
    type has nothing near; an exact entry of its own type decides alone (session 26,
    call 3: fp16 80 x 608 x 320 ran 0.78 of cuBLAS on its own table's tile where bf16's
    ran 0.95)."""
    own = TileConfig(64, 32, 128, 8, 5, 4, "tma")
    lent = TileConfig(64, 64, 128, 8, 5, 4, "tma")
    bf16, fp16 = "16bit bf16 rr tma ld128", "16bit fp16 rr tma ld128"
    entry = lambda shape, c, b, ms: {**_entry(*shape, c, tuned_ms=ms), "bucket": b}  # noqa: E731
    q, near = (256, 512, 1024), (256, 512, 1100)   # 256x512: 64 or 32 programs, 1 an SM
    look = lambda b, *s: table.lookup("NVIDIA H200", b, *s, directory=d, sms=132)  # noqa: E731
    for gain, want in ((1.10, lent), (1.02, own)):
        d = _write(tmp_path, [entry(near, own, fp16, 0.010),
                              entry(near, lent, bf16, 0.010 / gain),
                              entry(near, lent, "fp32 tf32 rr tma ld128", 0.001)])
        assert look(fp16, *q) == (want, "table-nearest"), gain
        assert look(bf16, *q) == (lent, "table-nearest")    # its own: not lent
        assert look(fp16, *near) == (own, "table")           # an exact entry decides
    assert look(bf16, 256, 512, 1300) == (lent, "table-nearest")
    d = _write(tmp_path, [entry(near, lent, bf16, 0.010)])   # fp16 has nothing near
    assert look(fp16, *q) == (lent, "table-nearest")
    assert look("fp32 tf32 rr tma ld128", *q) is None        # other families: apart
    assert table._other_type(bf16) == fp16 and table._other_type(fp16) == bf16
    assert table._other_type("fp8 fp8 rc tma ld128") == ""


def test_a_fragile_tile_serves_its_own_shape_and_exact_multiples_only(tmp_path):
    big = TileConfig(128, 256, 32, 8, 3, 8)                      # tiled, unsplit, 128x256
    d = _write(tmp_path, [_entry(1536, 1536, 256, big)])
    look = lambda *a: table.lookup("NVIDIA H200", "16bit bf16 rr tma", *a, directory=d)  # noqa: E731
    assert look(1536, 1536, 256) == (big, "table")
    assert look(1024, 2048, 256) == (big, "table-nearest")       # tiles it exactly
    assert look(1427, 1377, 300) is None                         # partial tiles: heuristic
    assert table.fragile(big, 278, 4538)
    assert not table.fragile(TileConfig(128, 256, 64, 8, 3, 8, "tma"), 278, 4538)
    assert not table.fragile(TileConfig(128, 128, 64, 8, 4, 8, split_k=4), 278, 4538)
    assert not table.fragile(TileConfig(64, 128, 64, 8, 4, 4), 278, 4538)


def test_a_tma_tile_taller_than_64_rows_serves_thin_m_only_from_its_own_shape(tmp_path):
    """Below M = 64 the search offers 64-row TMA tiles only; a borrowed 128-row one ran fp32
    63 x 1000 x 2048 at 0.34 of cuBLAS (session 19, call F)."""
    tall = TileConfig(128, 64, 32, 8, 4, 4, "tma_split", 4)
    d = _write(tmp_path, [_entry(96, 2500, 2000, tall, tuned_ms=0.02)])
    look = lambda *a: table.lookup("NVIDIA H200", "16bit bf16 rr tma", *a, directory=d,  # noqa: E731
                                   variants=("tma", "tiled", "tma_split"), sms=132)
    assert look(96, 2500, 2000) == (tall, "table")
    assert look(80, 2500, 2000) == (tall, "table-nearest")
    assert look(63, 2500, 2000) is None
    assert table.fragile(tall, 63, 1000)
    assert not table.fragile(tall, 64, 1000)
    assert not table.fragile(TileConfig(64, 128, 32, 8, 4, 4, "tma_split", 4), 16, 1000)


def test_an_unsplit_ieee_fp32_tma_tile_is_not_borrowed_where_k_splits_four_ways(tmp_path):
    """1024^3's unsplit 64x64x64 (3 programs per SM) won its own shape by 4% over split 4,
    and ran holdout5's 463 x 1227 x 581 and 3717 x 320 x 640 rc at x0.79-0.83 of the split
    tile (session 23, calls 3 and 4). Other modes and short K still borrow it."""
    flat = TileConfig(64, 64, 64, 8, 3, 4, "tma")
    bucket = "fp32 fp32 rr tma ld128"
    d = _write(tmp_path, [_entry(1024, 1024, 1024, flat, bucket=bucket, tuned_ms=0.06)])
    look = lambda b, *a: table.lookup("NVIDIA H200", b, *a, directory=d,  # noqa: E731
                                      variants=("tma", "tiled", "tma_split"), sms=132)
    assert look(bucket, 1024, 1024, 1024) == (flat, "table")          # its own shape
    assert look(bucket, 463, 1227, 581) is None                        # fma_split 4
    assert look(bucket, 1024, 1024, 384) == (flat, "table-nearest")    # fma_split 2
    assert table.fragile(flat, 463, 1227, 581, fma=True)
    assert not table.fragile(flat, 463, 1227, 581)                     # tf32's tiles
    assert not table.fragile(TileConfig(64, 64, 32, 8, 3, 4, "tma_split", 4), 463, 1227, 581,
                             fma=True)


def test_nearest_lookup_weighs_the_neighbours_tiles_by_their_steps_on_the_shape(tmp_path):
    """Session 12's tunes, H200 bf16: 3072 x 320 x 2304 won with 128x64x64 (120 tiles: one
    wave), 1280 x 768 x 2560 with 64x128x128. For 1024 x 1024 x 2048 the first is nearer,
    but the second takes half the K steps per SM: measured 12.6 us against 16.2."""
    narrow = TileConfig(128, 64, 64, 8, 4, 4, "tma")
    wide = TileConfig(64, 128, 128, 8, 4, 4, "tma")
    d = _write(tmp_path, [_entry(3072, 320, 2304, narrow, tuned_ms=0.0196),
                          _entry(1280, 768, 2560, wide, tuned_ms=0.0147)])
    look = lambda *a, **kw: table.lookup("NVIDIA H200", "16bit bf16 rr tma", *a,  # noqa: E731
                                         directory=d, **kw)
    assert look(1024, 1024, 2048) == (narrow, "table-nearest")      # no SM count: nearest
    assert look(1024, 1024, 2048, sms=132) == (wide, "table-nearest")
    assert look(3072, 320, 2304, sms=132) == (narrow, "table")      # exact stays exact
    assert steps.steps(narrow, 3072, 320, 2304, 132) == 36          # 120 programs: 1 per SM
    assert steps.steps(wide, 3072, 320, 2304, 132) == 2 * 18        # 144 programs: 2
    d = _write(tmp_path, [_entry(3072, 320, 2304, narrow, tuned_ms=0.0196),
                          _entry(1280, 768, 2560, wide)])             # no tuned time
    assert look(1024, 1024, 2048, sms=132) == (narrow, "table-nearest")


H200_SMEM = 232448


def test_a_neighbours_twin_is_taken_where_its_pairs_take_one_wave_of_two(tmp_path):
    """Session 31: bf16 1152 x 1856 x 1920 (261 tiles of 128x64, 135 of 128x128) ran its
    pick 64x128x128 at 0.78 of cuBLAS, 128x64x64 alone at 0.72, two to an SM at 0.97.
    3072 x 320 x 2304's 128x64x64 (5 stages, one wave of 120) is offered at two programs
    of 4 stages: one wave of pairs where alone it takes two."""
    narrow = TileConfig(128, 64, 64, 8, 5, 4, "tma")
    wide = TileConfig(64, 128, 128, 8, 4, 4, "tma")
    d = _write(tmp_path, [_entry(3072, 320, 2304, narrow, tuned_ms=0.0170),
                          _entry(1280, 1792, 1792, wide, tuned_ms=0.0222)])
    look = lambda **kw: table.lookup("NVIDIA H200", "16bit bf16 rr tma",  # noqa: E731
                                     1152, 1856, 1920, directory=d, sms=132, **kw)
    twin = TileConfig(128, 64, 64, 8, 4, 4, "tma", occupancy=2)
    assert look(smem=H200_SMEM) == (twin, "table-nearest")
    assert look() == (wide, "table-nearest")                 # no shared memory: no twins
    per_step = (0.0170 - steps.FIXED_MS) / 36                # one wave of 36 blocks
    predicted = table.predict("NVIDIA H200", "16bit bf16 rr tma", 1152, 1856, 1920, twin,
                              directory=d, smem=H200_SMEM)
    assert predicted == pytest.approx(                       # a stage fewer than tuned
        steps.FIXED_MS + per_step * steps.STAGE_COST * 30 * steps.PAIR_STEP)
    # a twin wins by TWIN_MARGIN: the wide tile's entry tuned just slower than the twin
    for gain, want in ((1.05, wide), (1.2, twin)):
        wide_ms = steps.FIXED_MS + (predicted * gain - steps.FIXED_MS) * 42 / 45
        d = _write(tmp_path, [_entry(3072, 320, 2304, narrow, tuned_ms=0.0170),
                              _entry(1280, 1792, 1792, wide, tuned_ms=wide_ms)])
        assert look(smem=H200_SMEM) == (want, "table-nearest"), gain
    assert table.predict("NVIDIA H200", "16bit bf16 rr tma", 1152, 1856, 1920, twin,
                         directory=d) is None


@pytest.mark.parametrize(("parent", "wide", "near", "square_ms", "shape", "step", "blocks"), [
    # session 35: 128x256x64:s3 ran 7904 x 384 x 3744 (two column tiles, the second half
    # empty) at 0.75 of cuBLAS, 128x192x64:s4 at 0.89
    (TileConfig(128, 256, 64, 8, 3, 8, "tma"), TileConfig(128, 192, 64, 8, 4, 8, "tma_wide"),
     (3968, 384, 4096, 0.0463), 0.178, (7904, 384, 3744), WIDE_STEP, 59),
    # session 37: 8136 x 280 x 7592 in 128x128 makes three column tiles (the third 24
    # columns full), two waves; 128x144 two, one wave (1.19 of cuBLAS, the pick 0.94)
    (TileConfig(128, 128, 64, 8, 4, 8, "tma"), TileConfig(128, 144, 64, 8, 5, 8, "tma_wide"),
     (1408, 1536, 4096, 0.0300), 0.215, (8136, 280, 7592), 144 / 128 * WIDE_COL_144, 119),
])
def test_a_neighbours_tile_is_offered_wide_where_fewer_column_tiles_cover_n(
        tmp_path, parent, wide, near, square_ms, shape, step, blocks):
    """A neighbour tuned on one 64-block tile a program lends its tile in the wide form
    at `wide_step` of its time a block, where the call can run `tma_wide`; at 4096^3,
    whose tiles fill waves, the parent stays."""
    *near_shape, near_ms = near
    d = _write(tmp_path, [_entry(*near_shape, parent, tuned_ms=near_ms),
                          _entry(4096, 4096, 4096, parent, tuned_ms=square_ms)])
    runs = ("tma", "tiled", "tma_split", "tma_wide")
    look = lambda *shape, **kw: table.lookup("NVIDIA H200", "16bit bf16 rr tma",  # noqa: E731
                                             *shape, directory=d, sms=132, **kw)
    assert look(*shape, variants=runs, smem=H200_SMEM) == (wide, "table-nearest")
    assert look(*shape, variants=runs[:3], smem=H200_SMEM) == (parent, "table-nearest")
    assert look(4096, 4096, 4352, variants=runs, smem=H200_SMEM) == (parent, "table-nearest")
    per_step = (near_ms - steps.FIXED_MS) / 64
    predicted = table.predict("NVIDIA H200", "16bit bf16 rr tma", *shape, wide,
                              directory=d, variants=runs, smem=H200_SMEM)
    # at the speed of its warp-specialized form, the one a 16-bit rr pick runs in
    assert predicted == pytest.approx((steps.FIXED_MS + per_step * step * blocks)
                                      / ws_forms.gain(wide))


def test_an_fp8_neighbours_128x128_tile_is_made_tall_where_fewer_row_tiles_cover_m(tmp_path):
    """Session 37: fp8 6040 x 328 x 4560 ran 144x128 tall (42 row tiles x 3 column tiles,
    126 tiles, one wave) at 1.05 of cuBLAS, its pick 128x256 at 0.81. A neighbour's
    128x128x128 lends it tall where the call can run `tma_tall`, else 128x192 wide (96
    tiles: a wave, its columns 85% full)."""
    parent = TileConfig(128, 128, 128, 8, 5, 8, "tma")
    d = _write(tmp_path, [_entry(1408, 1536, 4096, parent, "fp8 fp8 rc tma", tuned_ms=0.0180)])
    runs = ("tma", "tma_split", "tma_wide", "tma_tall")
    look = lambda *shape, **kw: table.lookup("NVIDIA H200", "fp8 fp8 rc tma",  # noqa: E731
                                             *shape, directory=d, sms=132, smem=H200_SMEM,
                                             **kw)
    assert look(6040, 328, 4560, variants=runs) == (
        TileConfig(144, 128, 128, 8, 5, 8, "tma_tall"), "table-nearest")
    assert look(6040, 328, 4560, variants=runs[:3]) == (
        TileConfig(128, 192, 128, 8, 4, 8, "tma_wide"), "table-nearest")


def test_a_row_major_neighbours_derived_forms_carry_to_other_layouts_where_they_ran(tmp_path):
    """A 16-bit call of another layout borrows the row-major bucket's TMA tiles, and the
    forms derived from them where they ran as fast there (session 38, call 1: bf16 280 x
    8136 x 7592, 144 rows tall, 64.7 us over rc and 68.5 cc against its picks' 85.8 and
    85.2; a wide tile over a column-major A, cr or cc, 1.08-1.25x its row-major time):
    the tall form where B is K-major (the dispatcher offers `tma_tall` there), the wide
    one where A is row-major."""
    parent = TileConfig(128, 128, 64, 8, 5, 8, "tma")
    d = _write(tmp_path, [_entry(1408, 1408, 4096, parent, "16bit bf16 rr tma ld128",
                                 tuned_ms=0.0288)])
    runs = ("tma", "tma_split", "tma_wide", "tma_hybrid")
    kb = ("tma", "tma_split", "tma_wide", "tma_tall", "tma_hybrid")
    look = lambda lay, *shape, variants=kb: table.lookup(  # noqa: E731
        "NVIDIA H200", f"16bit bf16 {lay} tma ld128", *shape, directory=d, sms=132,
        smem=H200_SMEM, variants=variants)
    tall = (TileConfig(144, 128, 64, 8, 5, 8, "tma_tall"), "table-nearest")
    assert look("rc", 280, 8136, 7592) == tall
    assert look("cc", 280, 8136, 7592) == tall
    assert look("rr", 280, 8136, 7592, variants=runs)[0].variant != "tma_tall"
    # 16-bit rr runs `tma_tall` too (the dispatcher offers it), but `wides`' tall forms
    # only over a K-major B: 144 rows tall is not offered over rr
    assert look("rr", 280, 8136, 7592) == look("rr", 280, 8136, 7592, variants=runs)
    # N thin: widened over rc; over cr and cc (A column-major) not
    assert look("rc", 8136, 280, 7592)[0].variant == "tma_wide"
    assert look("cr", 8136, 280, 7592, variants=runs)[0].variant == "tma_hybrid"
    assert look("cc", 8136, 280, 7592)[0].variant == "tma_tall"   # 57 x 3 tiles


def test_a_neighbours_tile_runs_as_a_hybrid_where_its_last_wave_is_short(tmp_path):
    """Holdout6's 920 x 4504 x 4216 (session 36): 128x128x64 makes 288 tiles, three waves,
    the third 18% full. Its neighbour 1408 x 1536 x 4096 tuned the tile on 132 tiles (one
    whole wave, 64 blocks): lent here, whole waves as they are and the 24 tiles left over
    split K are predicted HYBRID_MARGIN faster; fp32 on the FMA units (its programs per SM
    set by the launch) is not offered it, nor a call that cannot run it."""
    tile = TileConfig(128, 128, 64, 8, 5, 8, "tma")
    d = _write(tmp_path, [_entry(1408, 1536, 4096, tile, tuned_ms=0.030)])
    runs = ("tma", "tiled", "tma_split", "tma_hybrid")
    look = lambda *shape, **kw: table.lookup("NVIDIA H200", "16bit bf16 rr tma",  # noqa: E731
                                             *shape, directory=d, sms=132, **kw)
    hybrid = TileConfig(128, 128, 64, 8, 5, 8, "tma_hybrid", 4)
    assert look(920, 4504, 4216, variants=runs) == (hybrid, "table-nearest")
    assert look(920, 4504, 4216, variants=runs[:3]) == (tile, "table-nearest")
    assert look(1408, 1536, 4224, variants=runs) == (tile, "table-nearest")   # whole wave
    per_step = (0.030 - steps.FIXED_MS) / 64
    predicted = table.predict("NVIDIA H200", "16bit bf16 rr tma", 920, 4504, 4216, hybrid,
                              directory=d, variants=runs)
    assert predicted == pytest.approx(steps.fixed_ms(hybrid, 920, 4504, 132)
                                      + per_step * (2 * 66 + 17))
    assert table.predict("NVIDIA H200", "16bit bf16 rr tma", 920, 4504, 4216, tile,
                         directory=d, variants=runs) > predicted * steps.HYBRID_MARGIN
    fp32 = _write(tmp_path, [_entry(1408, 1536, 4096, TileConfig(128, 128, 32, 8, 3, 4, "tma"),
                                    bucket="fp32 fp32 rr tma", tuned_ms=0.5)])
    got = table.lookup("NVIDIA H200", "fp32 fp32 rr tma", 920, 4504, 4216, directory=fp32,
                       sms=132, variants=runs)
    assert got is not None and got[0].variant == "tma"


def test_a_four_warp_neighbours_hybrid_runs_eight_warps_only_over_a_k_major_a(tmp_path):
    """fp16's 4-warp 128x128x64 entry tile lent as a hybrid (session 40, call 1): at
    steps.HYBRID_EIGHT_WARPS where A is row-major (rr, rc), at its own warps where A is
    column-major (cc, cr: the 8-warp hybrid ran x0.885 there), borrowed from rr alike."""
    tile = TileConfig(128, 128, 64, 8, 4, 4, "tma")
    d = _write(tmp_path, [_entry(1408, 1536, 4096, tile, bucket="16bit fp16 rr tma ld128",
                                 tuned_ms=0.030)])
    runs = ("tma", "tiled", "tma_split", "tma_hybrid")
    stages, warps = steps.HYBRID_EIGHT_WARPS
    for layouts, want in (("rr", (stages, warps)), ("rc", (stages, warps)),
                          ("cc", (4, 4)), ("cr", (4, 4))):
        got = table.lookup("NVIDIA H200", f"16bit fp16 {layouts} tma ld128", 920, 4504,
                           4216, directory=d, sms=132, variants=runs)
        assert got is not None and got[0].variant == "tma_hybrid", layouts
        assert (got[0].num_stages, got[0].num_warps) == want, layouts


def test_a_farther_neighbour_competes_only_with_a_clear_predicted_win(tmp_path):
    """Past the three nearest entries, an entry's tile is taken only where `pricing.transfer`
    predicts it FAR_MARGIN faster than the nearest three's best (session 17, call G)."""
    near_tile = TileConfig(128, 128, 128, 8, 3, 8, "tma")   # no ws form: priced as tuned
    far_tile = TileConfig(64, 128, 128, 8, 4, 4, "tma")
    q, far = (1024, 1024, 1024), (2048, 2048, 1024)      # regime distance 2.0: the 4th

    def tuned(tile, shape, predicted_ms):   # the tuned time that predicts this on q
        fixed = steps.FIXED_MS
        return fixed + (predicted_ms - fixed) * steps.steps(tile, *shape, 132) / \
            steps.steps(tile, *q, 132)

    nears = [(1024, 1024, k) for k in (1100, 1200, 950)]
    entries = [_entry(*s, near_tile, tuned_ms=tuned(near_tile, s, 0.020)) for s in nears]
    for gain, want in ((1.2, far_tile), (1.05, near_tile)):
        d = _write(tmp_path, [*entries, _entry(*far, far_tile,
                                               tuned_ms=tuned(far_tile, far, 0.020 / gain))])
        assert table.lookup("NVIDIA H200", "16bit bf16 rr tma", *q, directory=d,
                            sms=132) == (want, "table-nearest"), gain
        # the model's own figures, as scripts/lookup_diff.py --predict prints them
        guess = [table.predict("NVIDIA H200", "16bit bf16 rr tma", *q, c, directory=d)
                 for c in (near_tile, far_tile, TileConfig(32, 32, 32, 8, 4, 4, "tma"))]
        assert guess[:2] == [pytest.approx(0.020), pytest.approx(0.020 / gain)]
        assert guess[2] is None                              # no entry has that tile


def test_a_split_tile_is_not_borrowed_where_its_k_ranges_would_be_one_block(tmp_path):
    split32 = TileConfig(64, 128, 64, 8, 4, 4, "tma_split", 32)
    split8 = TileConfig(128, 64, 64, 8, 4, 4, "tma_split", 8)
    d = _write(tmp_path, [_entry(160, 192, 36864, split32, tuned_ms=0.001),
                          _entry(256, 384, 3072, split8, tuned_ms=0.02)])
    look = lambda *a: table.lookup("NVIDIA H200", "16bit bf16 rr tma", *a, directory=d,  # noqa: E731
                                   variants=("tma", "tma_split"), sms=132)
    assert look(256, 256, 2048) == (split8, "table-nearest")         # 2048 / 32 = 1 block
    # 4 blocks a range: fits; a 16-bit split tile is split anew (`steps.resplits`), and
    # at this entry's tiny tuned time the fewest partials win: 2 ranges
    assert look(256, 256, 8192) == (replace(split32, split_k=2), "table-nearest")


def test_a_borrowed_16bit_split_tile_is_cut_to_fit_one_wave(tmp_path):
    """A 16-bit tile tuned split 4 ways on a shape of 20 tiles (80 programs), lent to one
    of 40 tiles: 4 ways would make 160 programs, two rounds of 132 SMs; 3 ways (120) fit
    one (session 45, call 4: such cuts ran x1.173, 55 of 55 faster). An fp8 split tile
    keeps its split (the same call: fp8 re-splits ran x0.876)."""
    split4 = TileConfig(64, 32, 128, 8, 5, 4, "tma_split", 4)
    d = _write(tmp_path, [_entry(64, 640, 3600, split4, tuned_ms=0.010),
                          _entry(64, 640, 3600, split4, bucket="fp8 fp8 rc tma",
                                 tuned_ms=0.010)])
    look = lambda b, *a: table.lookup("NVIDIA H200", b, *a, directory=d,  # noqa: E731
                                      variants=("tma", "tma_split"), sms=132)
    assert look("16bit bf16 rr tma", 88, 624, 3624) == \
        (replace(split4, split_k=3), "table-nearest")
    assert look("fp8 fp8 rc tma", 88, 624, 3624) == (split4, "table-nearest")


def test_a_borrowed_tf32_split_tile_that_fits_twice_an_sm_splits_into_two_rounds(tmp_path):
    """tf32's 64x128x32:s4 split tile (96 KB) runs two programs an SM: tuned 4 ways on 20
    tiles, lent to 40, it is split anew up to 264 programs (6 ways: 240 programs, 43
    blocks each at PAIR_STEP, 53.75 steps, against 3 ways' one-a-SM 86), where the lookup
    knows the shared memory; without it, cut to one wave of 132 (3 ways). IEEE fp32 keeps
    its split: a tile tuned split is not split anew there, and on the FMA units a second
    program an SM adds nothing (session 46, call 1: tf32 x1.106 and x1.043, IEEE x0.980)."""
    split4 = TileConfig(64, 128, 32, 8, 4, 4, "tma_split", 4)
    d = _write(tmp_path, [_entry(320, 512, 8192, split4, bucket=b, tuned_ms=0.030)
                          for b in ("fp32 tf32 rr tma", "fp32 fp32 rr tma")])
    look = lambda b, smem: table.lookup("NVIDIA H200", b, 640, 512, 8192, directory=d,  # noqa: E731
                                        variants=("tma", "tma_split"), sms=132, smem=smem)
    assert look("fp32 tf32 rr tma", H200_SMEM) == (replace(split4, split_k=6), "table-nearest")
    assert look("fp32 tf32 rr tma", 0) == (replace(split4, split_k=3), "table-nearest")
    assert look("fp32 fp32 rr tma", H200_SMEM) == (split4, "table-nearest")


def test_a_borrowed_tile_is_split_anew_for_few_tiles_over_a_long_k(tmp_path):
    """A tile tuned unsplit where its tiles filled the SMs, borrowed by a shape of few
    tiles and a long K: K split so that tiles x splits make one wave (fp8 832 x 496 x
    7392, session 15: 64x128x128 unsplit 0.67 of cuBLAS, split 4 0.98), where the call
    can run split-K, into K ranges of 2 KB of a row at least."""
    tile = TileConfig(64, 128, 128, 8, 4, 4, "tma")
    d = _write(tmp_path, [_entry(1280, 768, 2560, tile, tuned_ms=0.0147)])   # 120 tiles
    look = lambda *a, v=("tma", "tma_split"): table.lookup(  # noqa: E731
        "NVIDIA H200", "16bit bf16 rr tma", *a, directory=d, variants=v, sms=132)
    got = look(832, 496, 7392)[0]                                     # 52 tiles, 58 K steps
    assert (got.variant, got.split_k, got.block_k) == ("tma_split", 2, 128)
    assert look(832, 496, 7392, v=("tma",)) == (tile, "table-nearest")
    assert look(1280, 768, 2560) == (tile, "table")                   # exact stays exact
    assert look(1024, 1536, 2048) == (tile, "table-nearest")          # 192 tiles: no split


def test_regime_caps_and_symmetry():
    assert table.regime(8192, 28672, 8192) == table.regime(4096, 4096, 4096)
    assert table.regime(256, 4096, 2048) == table.regime(4096, 256, 2048)
    assert table.regime(64, 4096, 2048)[2] == 6.0                 # thin side counts
    assert table.regime(0, 0, 0) == (0.0, 0.0, 0.0)               # degenerate: no error


def test_stale_entries_are_never_used_and_are_reported(tmp_path):
    d = _write(tmp_path, [_entry(4096, 4096, 4096, TMA, kernel="0123456789ab")])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert table.lookup("NVIDIA H200", "16bit bf16 rr tma", 4096, 4096, 4096,
                            directory=d) is None
    assert any("gemmgate tune --stale" in str(x.message) for x in w)
    assert len(table_file.stale_entries("NVIDIA H200", d)) == 1


def test_the_stale_warning_counts_the_stale_entries_the_call_could_run(tmp_path):
    """`_exacts` counts a bucket's stale entries per variant once per table: a lookup
    warns of those of a variant it can run, each once, and of none where it can run none
    (`warn_stale` warns once per table and count: each ask below a count of its own)."""
    table_file.warn_stale.cache_clear()
    old = dict(kernel="0123456789ab")
    d = _write(tmp_path, [_entry(4096, 4096, 4096, TMA, **old),
                          _entry(2048, 2048, 2048, TMA, **old),
                          _entry(1024, 1024, 1024, TILED, **old)])

    def warned(variants):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            table.lookup("NVIDIA H200", "16bit bf16 rr tma", 512, 512, 512, directory=d,
                         variants=variants)
        return [str(x.message).split(": ")[1].split(" ")[0] for x in w
                if "tune --stale" in str(x.message)]

    assert warned(("tma", "tma")) == ["2"]
    assert warned(("tma_split",)) == []
    assert warned(("tiled", "tma", "tiled")) == ["3"]
    table.reload()
    table_file.warn_stale.cache_clear()


def test_a_16bit_128x128_neighbour_is_made_320_tall_over_any_b_where_that_is_one_wave(
        tmp_path):
    """Session 44: a 16-bit 128x128x64 neighbour lends its tile 288 or 320 tall (8 warps,
    3 stages) where that covers the shape in one wave and 128x128 takes more, over a
    row-major B too (calls 1 and 2: x1.12-1.18 on the picks it moved); wide only where the
    call cannot run the tall form, over a K of 1,536 (the wide form lost under it, x0.96;
    call 6, cr: x1.22 over it)."""
    parent = TileConfig(128, 128, 64, 8, 4, 4, "tma")
    d = _write(tmp_path, [_entry(2048, 2048, 2048, parent, tuned_ms=0.0300)])
    kb = ("tma", "tiled", "tma_split", "tma_wide", "tma_tall", "tma_hybrid")
    look = lambda *shape, variants=kb: table.lookup(  # noqa: E731
        "NVIDIA H200", "16bit bf16 rr tma", *shape, directory=d, sms=132, smem=H200_SMEM,
        variants=variants)
    # 2096 x 2184: 17 x 18 = 306 tiles of 128x128 (three waves), 7 x 18 = 126 of 320x128
    assert look(2096, 2184, 2768) == (TileConfig(320, 128, 64, 8, 3, 8, "tma_tall"),
                                      "table-nearest")
    # where the call cannot run the tall form (cr), 320 wide over a K of 1,536 or more
    no_tall = tuple(v for v in kb if v != "tma_tall")
    assert look(2096, 2184, 2768, variants=no_tall) == (
        TileConfig(128, 320, 64, 8, 3, 8, "tma_wide"), "table-nearest")
    assert look(2096, 2184, 1024, variants=no_tall)[0].variant not in ("tma_tall", "tma_wide")


def test_a_tf32_128x128_neighbour_is_made_320_tall_for_tf32_calls_only(tmp_path):
    """Session 44: a tf32 128x128x32 neighbour lends its tile 320 tall where that covers
    the shape in one wave (calls 4 and 5: x1.18 on the 188 picks it moved); a tf32x3 or
    IEEE fp32 bucket's same neighbour does not (their kernels walk other loops)."""
    parent = TileConfig(128, 128, 32, 8, 5, 4, "tma")
    buckets = ("fp32 tf32 rc tma", "fp32 tf32x3 rc tma", "fp32 fp32 rr tma")
    d = _write(tmp_path, [_entry(2048, 2048, 2048, parent, b, tuned_ms=0.080) for b in buckets])
    runs = ("tma", "tma_split", "tma_wide", "tma_tall", "tma_hybrid")
    look = lambda bucket: table.lookup(  # noqa: E731
        "NVIDIA H200", bucket, 2096, 2184, 2768, directory=d, sms=132, smem=H200_SMEM,
        variants=runs)
    assert look(buckets[0]) == (TileConfig(320, 128, 32, 8, 4, 8, "tma_tall"), "table-nearest")
    assert look(buckets[1])[0].variant != "tma_tall"
    assert look(buckets[2])[0].variant != "tma_tall"


def test_a_tuned_tma_ws_entry_is_read_where_decide_lists_the_kernel_and_priced_as_it_ran(
        tmp_path):
    """A `tma_ws` entry (a tune timed it: configs.search_space) is taken where the call's
    variants list `tma_ws` (decide.decide: a bucket whose picks run warp-specialized),
    exact or nearest, and not elsewhere; the lookup prices it at its tuned time, with no
    form's credit (ws_forms.gain: 1)."""
    from kernels import dispatch
    from kernels.modes import mode_named

    ws = TileConfig(128, 128, 64, 8, 5, 8, "tma_ws")
    bucket = "16bit bf16 rr tma ld128"
    d = _write(tmp_path, [_entry(4096, 4096, 4096, ws, bucket=bucket, tuned_ms=0.2)])
    rr = dispatch.decide(mode_named("bf16"), (9, 0), 4096, 4096, 4096, (4096, 1), (4096, 1),
                         (True, True), 2, has_tma=True)
    assert rr[2] == bucket and "tma_ws" in rr[5]
    look = lambda m, variants: table.lookup(  # noqa: E731
        "NVIDIA H200", bucket, m, 4096, 4096, directory=d, variants=variants, sms=132,
        smem=ws_forms.SMEM)
    assert look(4096, rr[5]) == (ws, "table")
    assert look(4608, rr[5]) == (ws, "table-nearest")
    assert look(4096, tuple(v for v in rr[5] if v != "tma_ws")) is None
    assert ws_forms.gain(ws, "rr") == 1.0 and dispatch._ws(ws, bucket) is ws
    cr = dispatch.decide(mode_named("bf16"), (9, 0), 4096, 4096, 4096, (1, 4096), (4096, 1),
                         (True, True), 2, has_tma=True)
    assert cr[2].startswith("16bit bf16 cr tma") and "tma_ws" not in cr[5]
    table.reload()


def _near_by_scan(rows, m, n, k, variants):
    """`table._near` as a scan of every row in file order (what the window must equal):
    by regime distance, then uncapped log2 distance in M, N, K (a stable sort keeps file
    order within)."""
    t, d, w = table.regime(m, n, k)
    scored = []
    for r in sorted(rows, key=lambda r: r.order):
        dist = abs(t - r.where[0]) + abs(d - r.where[1]) + abs(w - r.where[2])
        spread = sum(abs(math.log2(a) - math.log2(b)) for a, b in zip((m, n, k), r.shape))
        if round(dist, 9) <= table.NEAREST_MAX and r.config.variant in variants \
                and not r.stale and not table.fragile(r.config, m, n, k):
            scored.append((round(dist, 9), round(spread, 9), r))
    return [r for *_, r in sorted(scored, key=lambda x: x[:2])]


def test_near_reads_the_window_of_a_sorted_bucket_and_breaks_ties_by_shape_then_file():
    """`_index` sorts a bucket's rows by their output tiles (file order within) and `_near`
    reads the rows within NEAREST_MAX of a shape's tiles: the same rows, nearest first, of
    equal distance nearest in uncapped M, N, K, then first in the file, as a scan of all
    of them (the committed table's largest bucket, shapes on and off the entries' own)."""
    import random

    _, rows = table._index("NVIDIA H200", str(table_file.DEFAULT_DIR))
    bucket = max(rows, key=lambda b: len(rows[b]))
    got = rows[bucket]
    assert [r.where[0] for r in got] == sorted(r.where[0] for r in got)
    assert sorted(r.order for r in got) == list(range(len(got)))
    variants = ("tma", "tiled", "tma_split", "tma_wide", "tma_tall", "tma_hybrid", "tma_ws")
    rng = random.Random(11)
    shapes = [r.shape for r in got] + [tuple(rng.randint(1, 9000) for _ in range(3))
                                       for _ in range(300)]
    for m, n, k in shapes:
        assert table._near(got, m, n, k, variants) == _near_by_scan(got, m, n, k, variants)


def test_of_rows_the_regime_caps_tie_the_nearer_shape_comes_first(tmp_path):
    """8192 x 8192 x 28672 is at regime distance 0 from both 4096 x 4096 x 11008 and 8192^3
    (output tiles, K and the thin side are capped): 8192^3, nearer in M, N, K, comes
    first though the other is first in the file (session 65: file order gave the 4096
    entry's tile, x0.575 on an H100). Of two rows of one shape, file order decides."""
    small, big = TileConfig(128, 128, 32, 8, 4, 4, "tma"), TileConfig(128, 256, 64, 8, 3, 8, "tma")
    d = _write(tmp_path, [_entry(4096, 4096, 11008, small), _entry(8192, 8192, 8192, big),
                          _entry(8192, 8192, 8192, small)])
    _, rows = table._index("NVIDIA H200", str(d))
    got = rows["16bit bf16 rr tma"]
    assert table.regime(8192, 8192, 28672) == table.regime(4096, 4096, 11008) \
        == table.regime(8192, 8192, 8192)
    near = table._near(got, 8192, 8192, 28672, ("tma",))
    assert [(r.shape, r.config) for r in near] == [
        ((8192, 8192, 8192), big), ((8192, 8192, 8192), small), ((4096, 4096, 11008), small)]
    table.reload()


def test_distances_equal_but_for_rounding_tie(tmp_path):
    """3072 x 192 x 5098 is log2(8/3) from both entries' regimes, the two sums 4e-16 apart
    in floating point: a tie, so the entry nearer in M, N, K (1280 x 768 x 2560, second in
    the file and a hair farther as summed) comes first."""
    far, near = TileConfig(64, 64, 32, 8, 3, 4, "tma"), TileConfig(128, 64, 32, 8, 3, 4, "tma")
    d = _write(tmp_path, [_entry(160, 5120, 3072, far), _entry(1280, 768, 2560, near)])
    q = table.regime(3072, 192, 5098)
    dists = [sum(abs(a - b) for a, b in zip(q, table.regime(*s)))
             for s in ((160, 5120, 3072), (1280, 768, 2560))]
    assert dists[0] < dists[1] and dists[1] - dists[0] < 1e-12   # the case this guards
    got = table._near(table._index("NVIDIA H200", str(d))[1]["16bit bf16 rr tma"],
                      3072, 192, 5098, ("tma",))
    assert [r.config for r in got] == [near, far]
    table.reload()


def test_a_row_at_exactly_nearest_max_is_in_and_shape_distances_tie_to_rounding(tmp_path):
    """A review: 128 x 640 x 1024 is exactly NEAREST_MAX (2) from 128 x 256 x 640's regime,
    summed to 2.0000000000000004 (left out) where 128 x 768 x 1024 from 128 x 256 x 768 sums
    to 2.0 (kept); 256 x 1408 x 4096 is log2(3) in M, N, K from both 768 x 1408 x 4096 and
    256 x 4224 x 4096, summed 2e-15 apart: a tie, which file order decides."""
    a, b = TileConfig(64, 64, 32, 8, 3, 4, "tma"), TileConfig(128, 64, 32, 8, 3, 4, "tma")
    edge = sum(abs(x - y) for x, y in zip(table.regime(128, 640, 1024),
                                          table.regime(128, 256, 640)))
    assert edge > table.NEAREST_MAX and edge - table.NEAREST_MAX < 1e-12   # the case
    d = _write(tmp_path, [_entry(128, 256, 640, a)])
    rows = table._index("NVIDIA H200", str(d))[1]["16bit bf16 rr tma"]
    assert [r.config for r in table._near(rows, 128, 640, 1024, ("tma",))] == [a]
    table.reload()
    for first, second in ((a, b), (b, a)):   # whichever is first in the file comes first
        d = _write(tmp_path, [_entry(256, 4224, 4096, first), _entry(768, 1408, 4096, second)])
        rows = table._index("NVIDIA H200", str(d))[1]["16bit bf16 rr tma"]
        assert [r.config for r in table._near(rows, 256, 1408, 4096, ("tma",))][:2] == \
            [first, second]
        table.reload()


def test_of_two_exact_entries_of_a_shape_the_first_in_the_file_is_taken(tmp_path):
    """Entries of one shape sort together, in file order: the exact lookup takes the first
    that the call can run and that is fresh."""
    other = TileConfig(128, 128, 64, 8, 4, 4, "tma")
    stale = _entry(4096, 4096, 4096, TileConfig(64, 64, 64, 8, 4, 4, "tma"),
                   kernel="0123456789ab")
    d = _write(tmp_path, [_entry(64, 64, 64, TILED), stale, _entry(4096, 4096, 4096, TMA),
                          _entry(4096, 4096, 4096, other), _entry(8192, 8192, 8192, other)])
    look = lambda v: table.lookup("NVIDIA H200", "16bit bf16 rr tma", 4096, 4096,  # noqa: E731
                                  4096, directory=d, variants=v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert look(("tma", "tiled")) == (TMA, "table")
        d = _write(tmp_path, [stale, _entry(4096, 4096, 4096, other),
                              _entry(4096, 4096, 4096, TMA)])
        assert look(("tma", "tiled")) == (other, "table")
    table.reload()


def test_rows_of_one_tile_share_its_options_priced_by_each_rows_own_time():
    """`priced` works a tile's options out once for all the rows that have it (`memo`, a
    lookup's for its shape): each row's prices are its own tuned time per step on them,
    exactly as without the memo, and a slower row of the same tile prices every option
    slower."""
    from kernels import pricing

    tile = TileConfig(128, 128, 64, 8, 4, 4, "tma")
    fast = table._Row(tile, (2048, 2048, 2048), table.regime(2048, 2048, 2048), False, 0.05)
    slow = table._Row(tile, (2048, 2048, 4096), table.regime(2048, 2048, 4096), False, 0.2)
    variants = ("tma", "tma_split", "tma_wide", "tma_tall", "tma_hybrid")
    chip = pricing.chip_for(132, ws_forms.SMEM, "16bit", "16bit bf16 rr tma ld128")
    memo: dict = {}
    both = pricing.priced([fast, slow], 1500, 2100, 3000, variants, chip, memo)
    assert list(memo) == [tile] and len(memo[tile]) > 1
    alone = [pricing.priced([r], 1500, 2100, 3000, variants, chip) for r in (fast, slow)]
    assert both == alone[0] + alone[1]
    assert pricing.priced([slow], 1500, 2100, 3000, variants, chip, memo) == alone[1]
    assert all(f[0] < s[0] and f[1:] == s[1:] for f, s in zip(*alone))


def test_a_thin_m_entry_is_not_lent_to_a_thin_n_call_the_heuristic_answers(tmp_path):
    """`regime` takes the thinner side whichever it is: 11008 x 32 x 4096 cr bf16 borrowed
    24 x 6000 x 3000's 64-row tile (its columns across the thin N) and ran 0.88 of cuBLAS
    where the heuristic's thin-N tile is what a search found (H100, session 81). The
    thin-M entry stays lent to thin-M calls, to calls of a family without a thin-N tile,
    and to a thin-N call too short for the thin-N tile; an exact entry is used as ever."""
    thin_m = TileConfig(64, 64, 128, 8, 5, 4, "tma")
    thin_n = TileConfig(64, 32, 128, 8, 4, 4, "tma", occupancy=2)
    fp8 = TileConfig(64, 64, 256, 8, 5, 4, "tma")
    d = _write(tmp_path, [_entry(24, 6000, 3000, thin_m),
                          _entry(24, 6000, 3000, fp8, bucket="fp8 fp8 rr tma")])
    look = lambda b, *a: table.lookup("NVIDIA H200", b, *a, directory=d)  # noqa: E731
    assert look("16bit bf16 rr tma", 11008, 32, 4096) is None          # the heuristic's
    assert look("16bit bf16 rr tma", 32, 11008, 4096) == (thin_m, "table-nearest")
    assert look("fp8 fp8 rr tma", 11008, 32, 4096) == (fp8, "table-nearest")
    d = _write(tmp_path, [_entry(24, 6000, 3000, thin_m), _entry(6000, 24, 3000, thin_n)])
    assert look("16bit bf16 rr tma", 11008, 32, 4096) == (thin_n, "table-nearest")
    assert look("16bit bf16 rr tma", 24, 6000, 3000) == (thin_m, "table")
    assert table.crossed(11008, 32, (24, 6000, 3000), "16bit")
    assert not table.crossed(11008, 32, (6000, 24, 3000), "16bit")   # thin N itself
    assert not table.crossed(11008, 32, (24, 6000, 3000), "fp8")
    assert not table.crossed(900, 32, (24, 6000, 3000), "16bit")     # M < 1024: not thin N
