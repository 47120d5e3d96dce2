"""kernels/tile.py: a tile's validation, its shared memory and registers, and pruning by
them."""

import pytest

from kernels.tile import TileConfig, cdiv, k_range, resident, usable

H200_SMEM = 232448


@pytest.mark.parametrize("fields, bad", [
    ((16, 16, 16, 1.5, 1, 1), "group_m=1.5"), ((16.0, 16, 16, 1, 1, 1), "block_m=16.0"),
    ((16, 16, 16, 1, 2.5, 1), "num_stages=2.5"), ((16, 16, 16, 1, 1, True), "num_warps=True"),
    ((16, 16, 16, 1, 1, 4, "tiled", 2.5), "split_k=2.5")])
def test_a_tile_field_that_is_no_int_is_named(fields, bad):
    """A float group_m or split_k failed deep in the interpreter's launch, a float block
    size as "unsupported operand type(s) for &" (a review)."""
    with pytest.raises(TypeError, match=f"TileConfig {bad}: give an int"):
        TileConfig(*fields)


def test_tile_fields_are_validated():
    with pytest.raises(ValueError, match="power of two"):
        TileConfig(24, 64, 64, 8, 3, 4)
    with pytest.raises(ValueError, match="unknown variant"):
        TileConfig(64, 64, 64, 8, 3, 4, "wgmma")
    with pytest.raises(ValueError, match="tma variant does not split K"):
        TileConfig(64, 64, 64, 8, 3, 4, "tma", split_k=2)
    # split_k below 1 is named as such, not as a variant that cannot split (a review:
    # the tiled variant's split_k=0 said "the tiled variant does not split K")
    for variant in ("tiled", "tma"):
        with pytest.raises(ValueError, match=r"split_k=0 must be >= 1") as got:
            TileConfig(64, 64, 64, 8, 3, 4, variant, split_k=0)
        assert "does not split K" not in str(got.value)
    # gemv: one row of A a program; the other blocks powers of two from 16
    assert TileConfig(1, 128, 32, 1, 1, 4, "gemv", 8).block_m == 1
    with pytest.raises(ValueError, match="block_m=2: the gemv variant takes one row"):
        TileConfig(2, 128, 32, 1, 1, 4, "gemv")
    with pytest.raises(ValueError, match="block_k=8 must be a power of two >= 16"):
        TileConfig(1, 128, 8, 1, 1, 4, "gemv")
    with pytest.raises(ValueError, match="block_m=1 must be a power of two >= 16"):
        TileConfig(1, 128, 32, 1, 1, 4)
    # programs per SM: 1, or 2 for the persistent TMA grid only
    assert TileConfig(64, 64, 64, 8, 3, 4, "tma", occupancy=2).occupancy == 2
    with pytest.raises(ValueError, match="occupancy=2: programs per SM are 1, or 2 for"):
        TileConfig(64, 64, 64, 8, 3, 4, "tma_split", 2, occupancy=2)
    with pytest.raises(ValueError, match="occupancy=3"):
        TileConfig(64, 64, 64, 8, 3, 4, "tma", occupancy=3)


def test_usable_prunes_by_shared_memory_and_accumulator_registers():
    big = TileConfig(128, 256, 64, 8, 3, 8, "tma")
    assert big.smem_bytes(2) == 3 * (128 + 256) * 64 * 2 + 128 * 256 * 2
    assert usable(big, "16bit", H200_SMEM)
    assert not usable(TileConfig(128, 256, 64, 8, 6, 8, "tma"), "16bit", H200_SMEM)  # smem
    assert not usable(TileConfig(256, 256, 32, 8, 2, 4), "16bit", H200_SMEM)  # 512 regs
    # gemv keeps BLOCK_K products per output in registers until its loop ends
    assert TileConfig(1, 128, 64, 1, 1, 4, "gemv").acc_regs() == 128 * 64 // 128
    assert not usable(TileConfig(1, 256, 128, 1, 1, 4, "gemv"), "fp32", H200_SMEM)


def test_two_programs_must_fit_one_sm_together():
    """Two programs of 128x64x64 bf16 at 4 stages (112 KiB each, C's tile included) fit
    the H200's 228 KiB an SM with their 1 KiB reserves; at 5 stages (136 KiB) they do
    not, though one does. Their accumulators share the register file too."""
    o2 = TileConfig(128, 64, 64, 8, 4, 4, "tma", occupancy=2)
    assert o2.smem_bytes(2) == 4 * (128 + 64) * 64 * 2 + 128 * 64 * 2 == 112 * 1024
    assert usable(o2, "16bit", H200_SMEM)
    deep = TileConfig(128, 64, 64, 8, 5, 4, "tma", occupancy=2)
    assert not usable(deep, "16bit", H200_SMEM)
    assert usable(TileConfig(128, 64, 64, 8, 5, 4, "tma"), "16bit", H200_SMEM)
    # 128x128 on 4 warps: 128 accumulator registers a thread, 256 for two programs
    wide = TileConfig(128, 128, 32, 8, 2, 4, "tma", occupancy=2)
    assert wide.smem_bytes(2) * 2 < H200_SMEM and not usable(wide, "16bit", H200_SMEM)
    assert usable(TileConfig(128, 128, 32, 8, 2, 8, "tma", occupancy=2), "16bit", H200_SMEM)


def test_cdiv_is_the_ceiling_of_a_division():
    assert [cdiv(a, 4) for a in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]


def test_k_range_splits_k_in_whole_blocks_and_may_make_fewer_ranges():
    assert k_range(1503, 5, 128) == 384    # 301 rows a range round up to 3 blocks: 4 ranges
    assert cdiv(1503, k_range(1503, 5, 128)) == 4
    assert k_range(4096, 4, 64) == 1024    # whole blocks already: 4 ranges
    assert k_range(100, 1, 64) == 128      # one range: K rounded up to its blocks


def test_a_tile_hashes_and_compares_by_its_fields_and_pickles_across_hash_seeds(tmp_path):
    """TileConfig keeps its fields' hash (a lookup's caches hash tiles thousands of times);
    a pickled tile is rebuilt, not carried with that hash: str hashes differ between
    processes (PYTHONHASHSEED), and a worker's tiles must still find the parent's."""
    import os
    import pickle
    import subprocess
    import sys

    a = TileConfig(128, 256, 64, 8, 3, 8, "tma")
    b = TileConfig(128, 256, 64, 8, 3, 8, "tma")
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert a != TileConfig(128, 256, 64, 8, 3, 8, "tiled") and a != (128, 256)
    assert pickle.loads(pickle.dumps(a)) == a
    path = tmp_path / "tile.pickle"
    path.write_bytes(pickle.dumps({a: "found"}))
    code = ("import pickle, sys; from kernels.tile import TileConfig; "
            "d = pickle.load(open(sys.argv[1], 'rb')); "
            "print(d[TileConfig(128, 256, 64, 8, 3, 8, 'tma')])")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                             text=True, env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.stdout.strip() == "found", out.stderr


def test_resident_counts_the_programs_one_sm_holds():
    """A tile's programs one SM holds, up to two: tf32's 64x128x32 split tile at 4 stages
    (96 KiB, no C tile: the split kernel stores partials by pointer) twice; at 5 stages
    (120 KiB) once; as a persistent `tma` tile (its fp32 C tile adds 32 KiB) once; a tile
    past the shared memory not at all, and one whose two accumulators overflow the
    registers once."""
    split = TileConfig(64, 128, 32, 8, 4, 4, "tma_split", 4)
    assert split.smem_bytes(4) == 96 * 1024
    assert resident(split, "fp32", H200_SMEM) == 2
    assert resident(TileConfig(64, 128, 32, 8, 5, 4, "tma_split", 4), "fp32", H200_SMEM) == 1
    assert resident(TileConfig(64, 128, 32, 8, 4, 4, "tma"), "fp32", H200_SMEM) == 1
    assert resident(TileConfig(128, 256, 64, 8, 6, 8, "tma"), "16bit", H200_SMEM) == 0
    assert resident(TileConfig(128, 128, 32, 8, 2, 4, "tma"), "16bit", H200_SMEM) == 1


def test_replace_makes_the_tile_dataclasses_replace_makes_and_checks_it_alike():
    """tile.replace (a lookup's derived forms) is dataclasses.replace, faster: the same
    tile, the same checks, an unknown field a TypeError."""
    import dataclasses

    from kernels.tile import replace

    c = TileConfig(128, 128, 64, 8, 4, 4, "tma")
    for changes in ({"num_stages": 3}, {"block_n": 192, "variant": "tma_wide"},
                    {"variant": "tma_split", "split_k": 3}, {"occupancy": 2}, {}):
        assert replace(c, **changes) == dataclasses.replace(c, **changes)
    with pytest.raises(ValueError, match="split K"):
        replace(c, split_k=2)                     # tma does not split K: checked as made
    with pytest.raises(TypeError, match="no field 'stages'"):
        replace(c, stages=3)


def test_usable_at_other_stages_asks_what_the_tile_at_those_stages_would_answer():
    from kernels.tile import replace, usable

    for c in (TileConfig(128, 256, 64, 8, 3, 8, "tma"), TileConfig(128, 192, 128, 8, 4, 8,
                                                                   "tma_wide"),
              TileConfig(64, 64, 64, 8, 4, 4, "tma", occupancy=2),
              TileConfig(64, 64, 32, 8, 2, 4)):
        for fam in ("16bit", "fp8", "fp32"):
            for stages in range(1, 9):
                assert usable(c, fam, 232448, stages) == \
                    usable(replace(c, num_stages=stages), fam, 232448), (c, fam, stages)


def test_wide_offsets_where_an_operand_reaches_2_31_elements_past_its_edge():
    from kernels.tile import wide_offsets

    assert not wide_offsets(((4096, 4096), (4096, 1)))            # 2**24 elements
    assert wide_offsets(((3, 16), (1 << 30, 1)))                  # row 2 at 2**31
    assert wide_offsets(((65536, 32768), (32768, 1)))             # a 2**31-element C
    # the rows and columns masked loads address past the edge count too
    assert wide_offsets(((1, 1), ((1 << 31) // 500, 1)))        # one row, 512 past it
    assert not wide_offsets(((8, 8), (8, 1)), ((16, 16), (16, 1)))
    assert wide_offsets(((2, 2), (1, 1)), ((3, 16), (1 << 30, 1)))   # any operand


def test_a_split_workspace_past_2_31_elements_is_refused():
    from kernels.matmul_tiled import reduction

    with pytest.raises(ValueError, match="workspace of 2147483648 elements, past 2\\*\\*31"):
        reduction(32768, 32768, (32768, 1), 2, False)
    assert reduction(4096, 4096, (4096, 1), 4, False) is not None
