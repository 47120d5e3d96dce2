"""kernels/matmul_tma_streamk.py: whole waves, then the rest's K blocks shared evenly; a
split tile summed by the last of its programs, its lock left at 0."""

import pytest
import torch

from kernels import matmul_tma_streamk as sk
from kernels.scratch import SCRATCH
from kernels.tile import TileConfig

CPU_TILE = TileConfig(32, 32, 32, 8, 1, 4, "tma_streamk")


def _error(tile, a, b, out, is_fp32=True, precision="ieee", times=1) -> float:
    """The kernel's relative error on a x b into `out`, NaN-filled before each of `times`
    calls (a tile no program stored stays NaN)."""
    for _ in range(times):
        out.fill_(float("nan"))
        sk.recipe(tile, a, b, out, input_precision=precision, is_fp32=is_fp32,
                  has_scale=False).launch(a, b, out, a, a)
    ref = a.double() @ b.double()
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize(("tiles", "sms", "shared"), [
    (144, 132, 144),   # below two waves: every tile
    (264, 132, 0),     # whole waves: none
    (300, 132, 168),   # one wave whole, then 132 + 36
    (70, 132, 70),
    (9, 4, 5),
])
def test_stream_tiles_are_the_last_partial_wave_and_the_one_before(tiles, sms, shared):
    assert sk.stream_tiles(tiles, sms) == shared


@pytest.mark.skipif(torch.cuda.is_available(),
                    reason="the interpreter's run (CPU tensors); the GPU's is test_gpu_*")
@pytest.mark.parametrize(("m", "n", "k"), [
    (96, 96, 128),    # 9 tiles on 4 'SMs': 4 whole, 5 by K blocks (20 blocks, 5 each)
    (96, 96, 40),     # 2 blocks a tile, the last zero-filled past K
    (200, 72, 300),   # 21 tiles, 10 blocks each
    (32, 32, 1000),   # one tile, its 32 blocks over 4 programs
    (64, 64, 64),     # whole waves only
])
@pytest.mark.parametrize("tile", [CPU_TILE, TileConfig(64, 32, 32, 8, 1, 4, "tma_streamk")])
def test_every_tile_is_stored_once_and_summed_whole(m, n, k, tile):
    """(64-row tiles: a split tile's partials summed in two passes of FIX_ROWS rows)"""
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    out = torch.empty(m, n)
    SCRATCH.clear()
    assert _error(tile, a, b, out, times=2) < 1e-6   # the second on the kept locks


@pytest.mark.skipif(torch.cuda.is_available(),
                    reason="the interpreter's run (CPU tensors); the GPU's is test_gpu_*")
def test_a_column_major_operand_and_a_c_the_descriptor_cannot_take():
    """A column-major (described transposed); C of 35 fp32 columns (140-byte rows, which
    a descriptor cannot take) staged and copied into `out`."""
    g = torch.Generator().manual_seed(6)
    a = torch.randn(64, 72, generator=g).t()          # 72 x 64, column-major
    b = torch.randn(64, 35, generator=g)
    b = torch.nn.functional.pad(b, (0, 1))[:, :35]    # rows of 36: 144 bytes
    out = torch.empty(72, 35)
    r = sk.recipe(CPU_TILE, a, b, out, input_precision="ieee", is_fp32=True,
                  has_scale=False)
    assert r.a_t and not r.b_t and r.staged
    assert _error(CPU_TILE, a, b, out) < 1e-6


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize(("shape", "tile"), [
    ((1536, 1536, 3072), TileConfig(128, 256, 64, 8, 3, 8, "tma_streamk")),  # 72 tiles
    ((1152, 1856, 1920), TileConfig(128, 128, 64, 8, 4, 8, "tma_streamk")),  # 135
    ((3144, 880, 5280), TileConfig(128, 128, 64, 8, 5, 8, "tma_streamk")),   # 175
    ((1000, 1000, 1000), TileConfig(64, 128, 128, 8, 4, 4, "tma_streamk")),  # 128
    ((4096, 4096, 512), TileConfig(128, 256, 64, 8, 3, 8, "tma_streamk")),   # 512: 3 waves
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_stream_k_matches_the_reference(shape, tile, dtype):
    m, n, k = shape
    g = torch.Generator().manual_seed(2)
    a = torch.randn(m, k, generator=g).cuda().to(dtype)
    b = torch.randn(k, n, generator=g).cuda().to(dtype)
    out = torch.empty(m, n, device="cuda", dtype=dtype)
    assert _error(tile, a, b, out, is_fp32=False, times=3) < 1e-2


@pytest.mark.gpu
@gpu
def test_gpu_stream_k_tf32_and_a_cuda_graph():
    """tf32 (B K-major, as the dispatcher copies it) and a graph replayed: the locks come
    back to 0 each replay, so every replay sums its tiles whole."""
    m, n, k = 1600, 1700, 1800
    g = torch.Generator().manual_seed(3)
    a = torch.randn(m, k, generator=g).cuda()
    b = torch.randn(n, k, generator=g).cuda().t()
    out = torch.empty(m, n, device="cuda")
    tile = TileConfig(128, 128, 32, 8, 4, 4, "tma_streamk")
    assert _error(tile, a, b, out, precision="tf32") < 1e-2
    run = sk.launcher(tile, a, b, out, a, a, input_precision="tf32", is_fp32=True,
                      has_scale=False)
    run()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    ref = a.double() @ b.double()
    for _ in range(3):
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.parametrize(("tiles", "k_blocks", "sms", "most"), [
    (144, 48, 132, 2),    # 144 tiles' blocks over 132 programs: 52 each, two a tile
    (70, 24, 132, 3),     # 12 each: a tile over three
    (264, 24, 132, 0),    # whole waves: nothing shared
    (1, 32, 4, 4),        # the CPU's 4 'SMs' on one tile: all of them
])
def test_parts_is_the_most_programs_a_shared_tile_is_spread_over(tiles, k_blocks, sms, most):
    assert sk.parts(tiles, k_blocks, sms) == most


def test_too_few_tiles_for_the_sms_is_a_clear_error(monkeypatch):
    """One tile on 132 SMs would spread over 33 programs, past the unrolled fix-up's
    MAX_PARTS: the recipe says so (the lookup offers stream-K from half the SMs up)."""
    monkeypatch.setattr(sk, "num_sms", lambda device: 132)
    a, b, out = torch.zeros(32, 1024), torch.zeros(1024, 32), torch.zeros(32, 32)
    with pytest.raises(ValueError, match="more than 4 programs"):
        sk.recipe(CPU_TILE, a, b, out, input_precision="ieee", is_fp32=True, has_scale=False)
