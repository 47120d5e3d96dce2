"""kernels/matmul_tma_hybrid.py: whole waves by `tma`, the tiles left over by `tma_split`;
the cut leaves the fewest tiles over, and every part of C is stored once."""

import pytest
import torch

from kernels import matmul_tma_hybrid as th
from kernels.tile import TileConfig
from tests.kernels.tma_helpers import gpu, gpu_operands, interpreter, run_recipe


def _tile(bm=16, bn=16, split=3, occupancy=1):
    return TileConfig(bm, bn, 16, 8, 2, 4, "tma_hybrid", split, occupancy)


@pytest.mark.parametrize(("m", "n", "programs", "want"), [
    (920, 4504, 132, ("n", 33 * 128)),   # 8 x 36 tiles: 33 columns fill two waves
    (4504, 920, 132, ("m", 33 * 128)),   # the same transposed: rows
    (2880, 2880, 132, ("m", 22 * 128)),  # 23 x 23: 22 rows (506 tiles), a tie on columns
    (1024, 1024, 132, ("m", 0)),         # 64 tiles, under one wave: all tail
    (1408, 1536, 132, None),             # 11 x 12 = 132 tiles: whole waves, no tail
    (4096, 4096, 132, ("m", 4096 - 4 * 128)),  # 1024 tiles: 7 waves = 924, 28 rows
])
def test_the_cut_leaves_the_fewest_tiles_over(m, n, programs, want):
    assert th.cut(m, n, TileConfig(128, 128, 64, 8, 4, 8, "tma_hybrid", 2), programs) == want


def test_the_parts_are_the_tile_as_tma_and_as_tma_split():
    head, tail = th.parts(_tile(64, 128, 4, occupancy=2))
    assert (head.variant, head.split_k, head.occupancy) == ("tma", 1, 2)
    assert (tail.variant, tail.split_k, tail.occupancy) == ("tma_split", 4, 1)
    assert (head.block_m, head.block_n, tail.block_m, tail.block_n) == (64, 128, 64, 128)


def test_a_hybrid_tile_splits_k_and_counts_its_epilogue():
    t = _tile(128, 128, 4)
    assert t.smem_bytes(2) == 2 * (128 + 128) * 16 * 2 + 128 * 128 * 2
    with pytest.raises(ValueError, match="split_k=0"):
        _tile(split=0)


@interpreter
@pytest.mark.parametrize(("m", "n", "k", "layout", "occupancy", "parts"), [
    (80, 48, 40, "rr", 1, ("m", 64)),     # 5 x 3 tiles on 4 'SMs': 4 rows, one left over
    (48, 80, 40, "rr", 1, ("n", 64)),     # 3 x 5: 4 columns
    (80, 48, 40, "cc", 2, ("m", 32)),     # column-major operands; 8 programs: 2 rows
    (40, 72, 24, "rc", 1, ("n", 64)),     # ragged edges, B column-major
    (16, 16, 64, "rr", 1, ("m", 0)),      # one tile: split-K alone
    (64, 64, 32, "rr", 1, None),          # 16 tiles: whole waves, tma alone
])
def test_every_part_of_c_is_stored_once(m, n, k, layout, occupancy, parts):
    g = torch.Generator().manual_seed(9)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    if layout[0] == "c":
        a = a.t().contiguous().t()
    if layout[1] == "c":
        b = b.t().contiguous().t()
    r, err = run_recipe(th, _tile(occupancy=occupancy), a, b, torch.empty(m, n))
    assert err < 1e-6
    assert r.where == parts
    assert (r.head is not None, r.tail is not None) == (parts != ("m", 0), parts is not None)


@interpreter
def test_a_bound_hybrid_runs_both_parts():
    g = torch.Generator().manual_seed(10)
    a, b = torch.randn(80, 24, generator=g), torch.randn(24, 48, generator=g)
    out = torch.full((80, 48), float("nan"))
    th.launcher(_tile(), a, b, out, a, a, input_precision="ieee", is_fp32=True,
                has_scale=False)()
    assert torch.allclose(out.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize(("shape", "tile"), [
    ((920, 4504, 4216), TileConfig(128, 128, 64, 8, 5, 8, "tma_hybrid", 4)),   # columns
    ((2880, 2880, 2048), TileConfig(128, 128, 64, 8, 5, 8, "tma_hybrid", 3)),   # rows
    ((1000, 1000, 1000), TileConfig(128, 128, 64, 8, 4, 8, "tma_hybrid", 2)),   # all tail
    ((1152, 1856, 1920), TileConfig(128, 64, 64, 8, 4, 4, "tma_hybrid", 2, 2)),  # 2 a SM
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_hybrid_matches_the_reference(shape, tile, dtype):
    a, b, out = gpu_operands(shape, dtype)
    assert run_recipe(th, tile, a, b, out, is_fp32=False)[1] < 1e-2


@pytest.mark.gpu
@gpu
def test_gpu_hybrid_in_a_cuda_graph():
    """Both parts replayed in a graph, the tail's workspace captured with them."""
    a, b, out = gpu_operands((920, 4504, 1024), torch.half, seed=3)
    run = th.launcher(TileConfig(128, 128, 64, 8, 4, 8, "tma_hybrid", 4), a, b, out, a, a,
                      input_precision="ieee", is_fp32=False, has_scale=False)
    run()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    ref = a.double() @ b.double()
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2
