"""kernels/configs.py: shared-memory pruning and the call-time heuristic (no timing)."""

from kernels.configs import CONFIGS, TileConfig, config_name, fits, heuristic

BIG = TileConfig(128, 256, 64, 8, 3, 8)
MID = TileConfig(128, 128, 64, 8, 4, 4)
SMALL = TileConfig(64, 64, 64, 8, 4, 4)
SKINNY = TileConfig(16, 128, 128, 8, 4, 4)
CANDIDATES = (BIG, MID, SMALL)


def test_fits_drops_configs_over_the_shared_memory_limit():
    # bf16: BIG needs (128+256)*64*2*2 = 98304 bytes, MID 3*32768 = 98304, SMALL 49152
    assert fits(CANDIDATES, 2, 232448) == CANDIDATES
    assert fits(CANDIDATES, 2, 60000) == (SMALL,)
    assert fits(CANDIDATES, 2, 1000) == (SMALL,)  # nothing fits: the smallest


def test_heuristic_takes_the_largest_tile_that_fills_the_sms():
    cands = CANDIDATES + (SKINNY,)
    assert heuristic(cands, 8192, 8192, 132) == BIG       # 32*64 programs
    assert heuristic(cands, 2048, 2048, 132) == MID       # BIG gives 128 < 132
    assert heuristic(cands, 256, 256, 132) == SMALL       # nothing fills: the smallest square
    assert heuristic(cands, 16, 4096, 132) == SKINNY      # decode-like M


def test_every_family_has_a_skinny_tile_and_names_read_well():
    for family, cands in CONFIGS.items():
        assert any(c.block_m <= 16 for c in cands), family
    assert config_name(MID) == "128x128x64 g8 s4 w4"
