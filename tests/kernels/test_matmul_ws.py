"""kernels/matmul_ws.py: the warp-specialized Gluon GEMM (a load warp, two wgmma
warpgroups) against a float64 reference, over tails in M, N and K, both B layouts and
the persistent loop's many tiles a program; its checks on the CPU."""

import pytest
import torch

from kernels import matmul_ws as ws

hopper = pytest.mark.skipif(not torch.cuda.is_available()
                            or torch.cuda.get_device_capability() < (9, 0),
                            reason="needs a Hopper GPU (wgmma, TMA, warp specialization)")


def _error(out, a, b) -> float:
    ref = a.double() @ b.double()
    return ((out.double() - ref).norm() / ref.norm()).item()


def test_the_stages_fit_beside_c_in_shared_memory():
    for bn, bn1 in ((64, 0), (128, 0), (256, 0), (128, 16), (128, 64)):
        s = ws.stages_for(bn, block_n1=bn1)
        cols = bn + bn1
        used = s * (ws.BLOCK_M * ws.BLOCK_K + ws.BLOCK_K * cols) * 2 + ws.BLOCK_M * cols * 2
        assert 2 <= s <= 6 and used <= 232448 - 4096
    assert ws.stages_for(256) == 3 and ws.stages_for(128) == 5
    assert ws.stages_for(128, block_n1=64) == 4


@pytest.mark.parametrize(("a", "b", "kw", "error", "match"), [
    (torch.ones(4, 4), torch.ones(4, 4), {}, TypeError, "bf16 or fp16"),
    (torch.ones(4, 4, dtype=torch.bfloat16), torch.ones(4, 4, dtype=torch.float16), {},
     TypeError, "bf16 or fp16"),
    (torch.ones(4, 4, dtype=torch.bfloat16), torch.ones(4, 4, dtype=torch.bfloat16),
     {"precision": "tf32"}, ValueError, "not precision 'tf32'"),
    (torch.ones(4, 4, dtype=torch.float16), torch.ones(4, 4, dtype=torch.float16),
     {"precision": "bf16"}, ValueError, "not precision 'bf16'"),
    (torch.ones(4, 4, dtype=torch.bfloat16), torch.ones(4, 4, dtype=torch.bfloat16),
     {"scale_a": torch.ones(())}, ValueError, "no scales"),
    (torch.ones(4, 5, dtype=torch.bfloat16), torch.ones(4, 4, dtype=torch.bfloat16), {},
     ValueError, r"\(M, K\) @ \(K, N\)"),
])
def test_what_it_cannot_run_is_an_error(a, b, kw, error, match):
    with pytest.raises(error, match=match):
        ws.matmul_ws(a, b, **kw)


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize(("m", "n", "k"), [
    (128, 128, 64),      # one tile, one K block
    (1000, 1000, 1000),  # tails in M, N and K
    (4097, 257, 136),    # a K block 8 deep past the last whole one
    (3432, 528, 7088),   # one tile a program, a deep K (the aligned long tail)
    (2048, 4096, 512),   # several tiles a program: the load warp runs ahead across them
])
@pytest.mark.parametrize(("block_n", "block_n1", "dtype"), [
    (128, 0, torch.bfloat16), (128, 0, torch.float16), (256, 0, torch.bfloat16),
    (128, 16, torch.bfloat16), (128, 64, torch.float16),   # wide: two B boxes, two Cs
])
@pytest.mark.parametrize("layout", ["rr", "rc"])
def test_gpu_matches_the_reference(m, n, k, block_n, block_n1, dtype, layout):
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn(m, k, generator=g).cuda().to(dtype)
    b = torch.randn(k, n, generator=g).cuda().to(dtype)
    if layout == "rc":
        b = b.t().contiguous().t()   # column-major: its stages K-major, permuted
    out = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    ws.matmul_ws(a, b, out=out, block_n=block_n, block_n1=block_n1,
                 precision="bf16" if dtype == torch.bfloat16 else "fp16")   # the contract
    assert _error(out, a, b) < 1e-2
    again = ws.matmul_ws(a, b, block_n=block_n, block_n1=block_n1)   # the same bits again
    assert torch.equal(again, out)
    kept = ws.matmul_ws(a, b, block_n=block_n, block_n1=block_n1,
                        cache_copies=True)   # rows on whole lines
    assert torch.equal(kept, out)


@pytest.mark.gpu
@hopper
def test_gpu_a_padded_out_and_a_cuda_graph():
    """An out whose rows a descriptor cannot take is written through a staged copy; a
    captured graph replays right."""
    m, n, k = 640, 333, 520
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(m, n + 1, device="cuda", dtype=torch.bfloat16)[:, :n]
    ws.mm_ws_128x128(a, b, out=out)
    assert _error(out, a, b) < 1e-2
    out2 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ws.mm_ws_128x256(a, b, out=out2)   # warm: compiled outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ws.mm_ws_128x256(a, b, out=out2)
    out2.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert _error(out2, a, b) < 1e-2
