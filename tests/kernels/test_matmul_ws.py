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


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize(("m", "n", "k", "tile"), [
    (1000, 152, 2000, (128, 128, 64, 4, 8, 1)),   # B past N over its copy's zeros (b_room)
    (777, 333, 520, (128, 144, 64, 4, 8, 1)),     # C staged (rows off 16 bytes), wide
    (2048, 1016, 3000, (128, 192, 64, 4, 8, 1)),
    (2264, 616, 136, (64, 64, 128, 3, 4, 2)),     # a warpgroup, two programs an SM, short K
    (1016, 1384, 296, (64, 128, 128, 4, 4, 1)),
    (1592, 7464, 328, (128, 128, 128, 2, 8, 1)),
])
@pytest.mark.parametrize("kept", [True, False])
def test_gpu_kernels_matmul_runs_the_tile_right(m, n, k, tile, kept):
    import kernels
    from kernels.tile import TileConfig

    g = torch.Generator().manual_seed(m + n)
    a = torch.randn(m, k, generator=g).cuda().to(torch.bfloat16)
    b = torch.randn(k, n, generator=g).cuda().to(torch.bfloat16)
    bm, bn, bk, stages, warps, occupancy = tile
    cfg = TileConfig(bm, bn, bk, 8, stages, warps, "tma_ws", occupancy=occupancy)
    out = kernels.matmul(a, b, config=cfg, cache_copies=kept)
    assert _error(out, a, b) < 1e-2
    assert torch.equal(kernels.matmul(a, b, config=cfg, cache_copies=kept), out)
    # an A the kernel does not take (column-major): the tile's tma form runs instead
    at = a.t().contiguous().t()
    assert _error(kernels.matmul(at, b, config=cfg), a, b) < 1e-2
    # the same shape and tile in fp16 after bf16: its own compiled kernel (session 49 run
    # 7 launched bf16's on fp16 operands, error 0.99)
    a16, b16 = a.to(torch.float16), b.to(torch.float16)
    assert _error(kernels.matmul(a16, b16, config=cfg, cache_copies=kept), a16, b16) < 1e-2


@pytest.mark.gpu
@hopper
def test_gpu_the_dispatcher_runs_a_16_bit_128x128_pick_warp_specialized():
    import kernels
    from kernels import dispatch

    a = torch.randn(2888, 264, device="cuda", dtype=torch.float16)   # holdout6's: a
    b = torch.randn(264, 3880, device="cuda", dtype=torch.float16)   # 128x128x64 pick
    plan = dispatch.plan(kernels.modes.mode_named("fp16"), a, b, cached=True)
    if plan.pick.variant != "tma_ws":
        pytest.skip(f"this table's pick here is {plan.pick} (no ws form)")
    out = kernels.matmul(a, b, cache_copies=True)
    assert _error(out, a, b) < 1e-2


@pytest.mark.gpu
@hopper
def test_gpu_the_dispatcher_runs_an_fp8_wide_pick_warp_specialized():
    """An fp8 pick of 128x192x128 runs in its form (ws_forms.FP8), with its scales."""
    import kernels
    from kernels import dispatch

    g = torch.Generator().manual_seed(2032)
    a = torch.randn(2032, 4920, generator=g).cuda().to(torch.float8_e4m3fn)   # a drawn
    b = torch.randn(4920, 1368, generator=g).cuda().to(torch.float8_e4m3fn)   # shape's
    plan = dispatch.plan(kernels.modes.mode_named("fp8"), a, b, cached=True)
    if plan.pick.variant != "tma_ws":
        pytest.skip(f"this table's pick here is {plan.pick} (no ws form)")
    assert plan.pick.block_k == 128 and plan.pick.num_warps == 8 and plan.pick.block_n > 128
    sa, sb = torch.tensor(0.25, device="cuda"), torch.tensor(3.0, device="cuda")
    out = kernels.matmul(a, b, scale_a=sa, scale_b=sb, cache_copies=True)
    ref = (a.double() @ b.double()) * 0.75
    assert out.dtype == torch.bfloat16
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize(("m", "n", "k", "tile"), [
    (1000, 1000, 1000, (128, 128, 128, 5)),   # tails in M, N and K
    (3432, 528, 7088, (128, 128, 128, 5)),    # deep K, one tile a program
    (2048, 4096, 512, (128, 144, 128, 5)),    # wide, several tiles a program
    (777, 333, 520, (128, 192, 128, 4)),      # C staged (rows off 16 bytes)
    (1536, 2304, 1024, (128, 256, 128, 3)),   # one 256-wide box: 3 stages of 1-byte operands
])
def test_gpu_fp8_runs_warp_specialized_with_its_scales(m, n, k, tile):
    """fp8 on a named `tma_ws` tile: e4m3 operands (B K-major, as the dispatcher copies
    it), wgmma's 8-bit K of 32, C in bf16 times both scales; the same bits again, and
    close to the tile's `tma` form."""
    import kernels
    from kernels import dispatch
    from kernels.modes import mode_named
    from kernels.tile import TileConfig

    g = torch.Generator().manual_seed(m + k)
    a = torch.randn(m, k, generator=g).cuda().to(torch.float8_e4m3fn)
    b = torch.randn(k, n, generator=g).cuda().to(torch.float8_e4m3fn)
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2 / 3, device="cuda")
    bm, bn, bk, stages = tile
    cfg = TileConfig(bm, bn, bk, 8, stages, 8, "tma_ws")
    # the operands as the call prepares them (B K-major; A's rows on 16 bytes where K is
    # not: session 50's run 10 checked a raw 1000-byte-row A here, which no descriptor takes)
    plan = dispatch.plan(mode_named("fp8"), a, b, cached=True)
    pa, pb = dispatch.prepare(plan, a, b, cache=True)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    flags = dict(input_precision="ieee", is_fp32=False, has_scale=True)
    assert ws.recipe(cfg, pa, pb, out, **flags) is not None    # warp-specialized, not tma
    assert ws.recipe(cfg, pa, b, out, **flags) is None         # B N-major: the tma form
    got = kernels.matmul(a, b, scale_a=sa, scale_b=sb, config=cfg, cache_copies=True)
    ref = (a.double() @ b.double()) * (0.5 * 2 / 3)
    assert got.dtype == torch.bfloat16
    assert ((got.double() - ref).norm() / ref.norm()).item() < 1e-2
    again = kernels.matmul(a, b, scale_a=sa, scale_b=sb, config=cfg, cache_copies=True)
    assert torch.equal(again, got)
    plain = kernels.matmul(a, b, scale_a=sa, scale_b=sb, config=ws.fallback(cfg))
    assert ((got.double() - plain.double()).norm() / ref.norm()).item() < 1e-2


@pytest.mark.skipif(torch.cuda.is_available(),
                    reason="the interpreter's run (CPU tensors); the GPU's is test_gpu_*")
@pytest.mark.parametrize("tile", [(128, 128, 64, 5, 8, 1), (64, 64, 128, 3, 4, 2)])
def test_on_the_interpreter_a_ws_tile_runs_its_tma_form(tile):
    """Triton's interpreter runs no Gluon: a `tma_ws` tile named on CPU tensors runs its
    `tma` form, bit for bit (not an error from the GPU driver's absence)."""
    import kernels
    from kernels.matmul_ws import fallback
    from kernels.tile import TileConfig

    g = torch.Generator().manual_seed(5)
    a = torch.randn(200, 96, generator=g).to(torch.float16)
    b = torch.randn(96, 136, generator=g).to(torch.float16)
    bm, bn, bk, stages, warps, occupancy = tile
    cfg = TileConfig(bm, bn, bk, 8, stages, warps, "tma_ws", occupancy=occupancy)
    got = kernels.matmul(a, b, config=cfg)
    assert torch.equal(got, kernels.matmul(a, b, config=fallback(cfg)))
    assert _error(got, a, b) < 1e-2


def test_a_launch_is_made_per_dtype_and_shape():
    """A Launch keeps one compiled kernel per descriptor signature, which holds no dtype
    (kernels/launch.py): bf16 and fp16 calls of one shape and tile need a Launch each
    (session 49 run 7: fp16 ran bf16's kernel, error 0.99)."""
    args = (128, 0, 8, 5, False, 1024, 1024, 1024, 64)
    bf = ws._launch(*args, torch.bfloat16)
    assert ws._launch(*args, torch.bfloat16) is bf
    assert ws._launch(*args, torch.float16) is not bf
    assert ws._launch(128, 0, 8, 5, False, 1024, 1024, 2048, 64, torch.bfloat16) is not bf
    assert bf.grid == (64,) and bf.ints == (1024, 1024, 1024)
    assert bf.kw["num_warps"] == 8 and bf.kw["maxnreg"] == 168
    one_group = ws._launch(64, 0, 8, 3, False, 2264, 616, 136, 264, torch.bfloat16, 64, 2)
    assert one_group.kw["num_warps"] == 4 and one_group.kw["maxnreg"] == 128
    assert (bf.kw["HAS_SCALE"], bf.kw["INSTR_K"]) == (False, 16)
    fp8 = ws._launch(128, 0, 8, 5, True, 1024, 1024, 1024, 64, torch.float8_e4m3fn)
    assert (fp8.kw["HAS_SCALE"], fp8.kw["INSTR_K"], fp8.kw["B_KMAJOR"]) == (True, 32, True)


def test_a_bound_launch_passes_the_scales_where_the_kernel_takes_them():
    """The kernel's leading arguments are five descriptors then the two scale pointers
    (kernels.matmul passes A for both where a call has no scales; fp8 its scales), then
    M, N, K, which a Launch appends: a bound call on CPU tensors (descriptors are host
    metadata) hands them over in that order."""
    got = []
    r = ws.Recipe(run=lambda *args: got.append(args), b_kmajor=False, parts=(128, 16),
                  block_mk=(128, 64), b_cols=0, staged=False)
    a = torch.zeros(256, 128, dtype=torch.bfloat16)
    b = torch.zeros(128, 288, dtype=torch.bfloat16)
    out = torch.zeros(256, 288, dtype=torch.bfloat16)
    sa, sb = torch.ones(()), torch.full((), 2.0)
    r.bind(a, b, out, sa, sb)()
    names = ws._ws_kernel.arg_names
    assert names[5:10] == ["scale_a", "scale_b", "M", "N", "K"] and len(got[0]) == 7
    assert got[0][5] is sa and got[0][6] is sb
    assert [d.block_shape for d in got[0][:5]] == [[128, 64], [64, 128], [64, 16],
                                                   [128, 128], [128, 16]]


def test_meta_tensors_plan_as_cuda_ones_and_cpu_ones_take_the_tma_form(monkeypatch):
    """`recipe` makes the warp-specialized launch for meta tensors (scripts/call_audit.py
    compiles what a call would launch; nothing runs on them), and none for CPU tensors
    (the interpreter runs no Gluon: kernels.matmul then runs the tile's `tma` form). The
    meta device stands in a Hopper chip, as the planning tools do (`as_chip`)."""
    from kernels import dispatch
    from kernels.tile import TileConfig

    monkeypatch.setattr(ws, "num_sms", lambda device: 132)
    monkeypatch.setattr(dispatch, "_device_info", lambda device: ((9, 0), 232448, "H200"))
    cfg = TileConfig(128, 128, 64, 8, 5, 8, "tma_ws")
    flags = dict(input_precision="ieee", is_fp32=False, has_scale=False)

    def operands(device: str):
        return [torch.empty(s, dtype=torch.float16, device=device)
                for s in ((1024, 512), (512, 768), (1024, 768))]

    r = ws.recipe(cfg, *operands("meta"), **flags)
    assert r is not None and r.run.grid == (min(132, 8 * 6),) and r.run.ints == (1024, 768, 512)
    assert ws.recipe(cfg, *operands("cpu"), **flags) is None


def test_a_zero_extent_takes_no_warp_specialized_launch(monkeypatch):
    """A descriptor's box needs every extent positive: a `config=` naming a tma_ws tile on K
    = 0 (a view `big[:, :0]`) failed inside Triton, where the other TMA recipes say no
    (`tma_operands`; a review). The recipe says no: kernels.matmul runs the `tma` form."""
    from kernels.tile import TileConfig

    monkeypatch.setattr(ws, "num_sms", lambda device: 132)
    cfg = TileConfig(128, 128, 64, 8, 5, 8, "tma_ws")
    flags = dict(input_precision="ieee", is_fp32=False, has_scale=False)
    for (m, k, n) in ((1024, 0, 768), (0, 512, 768), (1024, 512, 0)):
        a, b, out = (torch.empty(s, dtype=torch.float16, device="meta")
                     for s in ((m, k), (k, n), (m, n)))
        assert ws.recipe(cfg, a, b, out, **flags) is None, (m, k, n)
