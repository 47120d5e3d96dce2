"""kernels/matmul_tma_band.py: the cut (whole waves of tile-rows or -columns), and C
whole from the band's `tma` launch and the rest's split-K launches."""

import pytest
import torch

from kernels import matmul_tma
from kernels import matmul_tma_band as tb
from kernels.tile import TileConfig

CPU_TILE = TileConfig(16, 16, 32, 8, 1, 4, "tma_band", 2)


@pytest.mark.parametrize(("shape", "programs", "want"), [
    # 1536^2 at 128x128: 12 x 12 tiles; 11 rows fill one wave of 132 exactly
    ((1536, 1536, 128, 128, 132), None, tb.Cut(True, 1408, 132, 12)),
    # 1152 x 1856: 9 x 15 tiles; 8 rows make 120, 14 columns 126: columns win
    ((1152, 1856, 128, 128, 132), None, tb.Cut(False, 1792, 126, 9)),
    # 365 x 5904: 3 x 47; 44 columns fill the wave
    ((365, 5904, 128, 128, 132), None, tb.Cut(False, 5632, 132, 9)),
    ((1000, 1000, 64, 128, 132), None, None),     # 16 x 8 = 128 tiles: no whole wave
    ((4096, 4096, 128, 128, 128), None, None),   # 1024 tiles: 8 whole waves, no rest
    ((80, 32, 16, 16, 4), None, tb.Cut(True, 64, 8, 2)),   # the CPU's 4 'SMs'
])
def test_the_cut_fills_the_most_of_the_whole_waves(shape, programs, want):
    assert tb.band(*shape) == want


def test_a_single_line_of_tiles_is_never_the_band():
    """One tile-row of 200 tiles on 132 programs: cutting rows leaves no band; columns
    take 132 of them."""
    assert tb.band(128, 200 * 16, 128, 16, 132) == tb.Cut(False, 132 * 16, 132, 68)


def _run(tile, a, b, out, precision="ieee", is_fp32=True):
    r = tb.recipe(tile, a, b, out, input_precision=precision, is_fp32=is_fp32,
                  has_scale=False)
    out.fill_(float("nan"))
    r.launch(a, b, out, a, a)
    ref = a.double() @ b.double()
    return r, ((out.double() - ref).norm() / ref.norm()).item()


interpreter = pytest.mark.skipif(torch.cuda.is_available(),
                                 reason="the interpreter's run (CPU tensors); the GPU's "
                                        "is test_gpu_*")


@interpreter
@pytest.mark.parametrize(("m", "n", "k", "rows"), [
    (80, 32, 64, True),     # 10 tiles on 4 'SMs': 4 rows in the band, 1 split in 2
    (32, 80, 40, False),    # the same by columns, K's last block zero-filled
    (48, 48, 64, None),     # 9 tiles: rows and columns tie at 6 + 3
    (64, 64, 64, None),     # 16 tiles, whole waves: the plain tma recipe
])
def test_every_tile_is_stored_once(m, n, k, rows):
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    r, err = _run(CPU_TILE, a, b, torch.empty(m, n))
    assert err < 1e-6
    if m * n == 64 * 64:
        assert isinstance(r, matmul_tma.Recipe)
    else:
        assert r.cut.rows is (rows if rows is not None else True)


@interpreter
def test_a_column_major_a_and_a_c_the_descriptor_cannot_take():
    """A column-major (its views' descriptors transposed); C of 35 fp32 columns (140-byte
    rows): the band stores it by pointer (IEEE fp32), the reduction writes the rest."""
    g = torch.Generator().manual_seed(8)
    a = torch.randn(64, 80, generator=g).t()           # 80 x 64, column-major
    b = torch.nn.functional.pad(torch.randn(64, 35, generator=g), (0, 1))[:, :35]
    r, err = _run(CPU_TILE, a, b, torch.empty(80, 35))
    assert err < 1e-6
    assert r.band.a_t and not r.band.c_tma and r.rest.a_t


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize(("shape", "tile"), [
    ((1536, 1536, 3072), TileConfig(128, 128, 64, 8, 4, 8, "tma_band", 11)),   # rows
    ((1152, 1856, 1920), TileConfig(128, 128, 64, 8, 4, 8, "tma_band", 8)),    # columns
    ((365, 5904, 1648), TileConfig(128, 128, 64, 8, 4, 8, "tma_band", 8)),
    ((1000, 1000, 1000), TileConfig(64, 128, 64, 8, 4, 4, "tma_band", 2)),     # plain tma
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_band_matches_the_reference(shape, tile, dtype):
    m, n, k = shape
    g = torch.Generator().manual_seed(2)
    a = torch.randn(m, k, generator=g).cuda().to(dtype)
    b = torch.randn(k, n, generator=g).cuda().to(dtype)
    _, err = _run(tile, a, b, torch.empty(m, n, device="cuda", dtype=dtype), is_fp32=False)
    assert err < 1e-2


@pytest.mark.gpu
@gpu
def test_gpu_band_tf32_in_a_cuda_graph():
    """tf32 with B K-major (as the dispatcher copies it), replayed in a graph."""
    m, n, k = 1600, 1700, 1800
    g = torch.Generator().manual_seed(3)
    a = torch.randn(m, k, generator=g).cuda()
    b = torch.randn(n, k, generator=g).cuda().t()
    out = torch.empty(m, n, device="cuda")
    tile = TileConfig(128, 128, 32, 8, 4, 4, "tma_band", 4)
    run = tb.recipe(tile, a, b, out, input_precision="tf32", is_fp32=True,
                    has_scale=False).bind(a, b, out, a, a)
    run()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    ref = a.double() @ b.double()
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2
