"""kernels.matmul against a float64 reference on every layout and corner the contract
names. On the CPU it runs on the Triton interpreter (fp32, fp16: the modes it computes
correctly); on a GPU every mode the device supports."""

import threading

import pytest
import torch

import kernels
from gemmgate.accuracy import relative_error
from gemmgate.inputs import make_inputs
from gemmgate.precision import MODES
from gemmgate.shapes import SETS, Case
from kernels import dispatch, matmul_tiled, matmul_tma, matmul_tma_split, past_n
from kernels.configs import INTERPRETER_CONFIG
from kernels.modes import mode_named
from kernels.tile import TileConfig

# (mode, tolerance): fp32 IEEE far under tf32's ~3e-4; 16-bit output rounding ~2e-3.
CPU_MODES = [("fp32", 1e-5), ("fp16", 1e-3)]
GPU_MODES = [("fp32", 2e-5), ("tf32", 1.5e-3), ("tf32x3", 1e-5), ("bf16", 5e-3),
             ("fp16", 1e-3), ("fp8", 5e-3)]
CORNERS = SETS["tail"] + SETS["smoke"]


# A fixed tile for GPU corner tests: autotuning every odd shape would cost minutes of
# compiles; the autotuned path is exercised by `gemmgate run` and test_gpu_autotuned.
GPU_TILE = TileConfig(64, 64, 64, 8, 3, 4)
# Every variant on the interpreter: the tiled kernel, split-K, and the persistent TMA
# kernel (which falls back to pointer loads where operands cannot be described).
CPU_VARIANTS = {"tiled": INTERPRETER_CONFIG, "split3": TileConfig(32, 32, 16, 2, 1, 4, split_k=3),
                "split2": TileConfig(32, 32, 32, 2, 1, 4, split_k=2),   # masked over K = 48
                "tma": TileConfig(32, 32, 16, 2, 1, 4, "tma"),
                "tma_split3": TileConfig(32, 32, 16, 2, 1, 4, "tma_split", 3),
                "gemv1": TileConfig(1, 32, 16, 1, 1, 4, "gemv"),
                "gemv_split3": TileConfig(1, 32, 16, 1, 1, 4, "gemv", 3)}
GPU_VARIANTS = {"tiled": GPU_TILE, "split4": TileConfig(64, 64, 64, 8, 3, 4, split_k=4),
                "tma": TileConfig(128, 128, 32, 8, 3, 8, "tma"),   # fits fp32 too
                "tma_split4": TileConfig(128, 128, 32, 8, 3, 8, "tma_split", 4),
                "gemv_split4": TileConfig(1, 128, 64, 1, 1, 4, "gemv", 4)}


def _run(case: Case, mode: str, device: str, config=None, choose=None):
    inp = make_inputs(case, MODES[mode], device, seed=case.m * 31 + case.k)
    out = torch.full((case.m, case.n), float("nan"),
                     dtype=getattr(torch, MODES[mode].output_dtype), device=device)
    got = kernels.matmul(inp.a, inp.b, precision=mode, out=out,
                         scale_a=inp.scale_a, scale_b=inp.scale_b, config=config,
                         choose=choose)
    assert got is out
    return relative_error(got, inp.reference())


def test_the_tiled_kernel_masks_every_step_only_where_that_measured_faster():
    """Both K loops run in the corner tests: the tiled tile (32-deep blocks) masks every
    step over K = 5, 65, 100...; split-K keeps the unmasked loop and the partial block
    after it over K = 65 and 72 (not multiples of 16), and masks over K = 48 (`split2`,
    every variant's test); whole blocks are never masked."""
    tile, split = INTERPRETER_CONFIG, CPU_VARIANTS["split2"]
    assert matmul_tiled.masked_loop(tile, 65) and matmul_tiled.masked_loop(tile, 5)
    assert not matmul_tiled.masked_loop(tile, 64) and not matmul_tiled.masked_loop(tile, 0)
    assert not matmul_tiled.masked_loop(split, 65) and not matmul_tiled.masked_loop(split, 72)
    assert matmul_tiled.masked_loop(split, 48) and not matmul_tiled.masked_loop(split, 64)
    assert any(matmul_tiled.masked_loop(tile, c.k) for c in CORNERS)
    assert any(c.k % tile.block_k for c in CORNERS)   # split3's partial blocks


@pytest.mark.parametrize("case", CORNERS, ids=lambda c: c.id)
@pytest.mark.parametrize("mode,tol", CPU_MODES)
def test_matches_float64_reference(case, mode, tol, device):
    assert _run(case, mode, device) < tol


@pytest.mark.parametrize("case", SETS["smoke"] + (Case(33, 17, 65), Case(40, 24, 56, "cc", 3)),
                         ids=lambda c: c.id)
@pytest.mark.parametrize("variant", CPU_VARIANTS)
def test_every_variant_matches_the_reference(case, variant, device):
    assert _run(case, "fp32", device, CPU_VARIANTS[variant]) < 1e-5  # fp32: ~1e-7


@pytest.mark.parametrize("case", [Case(1, 48, 70), Case(3, 40, 33, "rc"), Case(16, 24, 50, "cr"),
                                  Case(5, 17, 64, "cc", 3)], ids=lambda c: c.id)
@pytest.mark.parametrize("mode,tol", CPU_MODES)
@pytest.mark.parametrize("variant", ["gemv1", "gemv_split3"])
def test_gemv_on_decode_shapes(case, mode, tol, variant, device):
    """The gemv variant on decode-like M in every layout: several rows (a program each),
    K ranges whose last one is partial (33 in ranges of 16), N past its last block (17 and
    40 in blocks of 32), padded rows."""
    assert _run(case, mode, device, CPU_VARIANTS[variant]) < tol


@pytest.mark.parametrize("shape", [(72, 52, 44), (36, 20, 68), (36, 50, 44)])
@pytest.mark.parametrize("a_t,b_t", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_tma_kernel_itself_on_every_layout(shape, a_t, b_t, device):
    """The TMA kernel proper (not its pointer fallback): descriptors of row- and column-
    major operands, zero-filled edges past M, N, K, and a C too narrow for a descriptor
    (N=50 fp32: 200 bytes) stored by masked pointers."""
    m, n, k = shape
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn(m, k, generator=g).to(device)
    b = torch.randn(k, n, generator=g).to(device)
    a = a.t().contiguous().t() if a_t else a
    b = b.t().contiguous().t() if b_t else b
    if matmul_tma.tma_form(a) is None or matmul_tma.tma_form(b) is None:
        pytest.skip("operands not describable (16-byte rule): the dispatcher never sends these")
    out = torch.full((m, n), float("nan"), device=device)
    matmul_tma.launch(CPU_VARIANTS["tma"], a, b, out, a, a, input_precision="ieee",
                      is_fp32=True, has_scale=False)
    ref = a.double() @ b.double()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-6
    out.fill_(float("nan"))   # TMA split-K: K ranges of 16 (the last one partial) summed
    matmul_tma_split.launcher(CPU_VARIANTS["tma_split3"], a, b, out, a, a, input_precision="ieee",
                              is_fp32=True, has_scale=False)()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-6


def test_a_tile_of_two_programs_per_sm_on_operands_no_descriptor_takes(device):
    """A TMA tile the call cannot describe (rows of 36 fp32: 144 bytes, not 16-byte
    aligned from an odd offset) runs on the tiled kernel's pointer loads, one program a
    tile, whatever its occupancy."""
    g = torch.Generator().manual_seed(5)
    a = torch.randn(40 * 36 + 1, generator=g)[1:].view(40, 36).to(device)
    b = torch.randn(36, 24, generator=g).to(device)
    tile = TileConfig(32, 32, 32, 8, 1, 4, "tma", occupancy=2)
    assert matmul_tma.tma_form(a) is None
    out = kernels.matmul(a, b, config=tile)
    ref = a.double() @ b.double()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-6


@pytest.mark.parametrize("dtypes", [(torch.bfloat16, torch.float16),
                                    (torch.float16, torch.float8_e4m3fn)])
def test_tma_launches_are_kept_per_operand_dtype(dtypes):
    """A Launch keeps its compiled kernel by its tensors' signature, and a descriptor adds
    none: each TMA variant must make one Launch per operand dtype (an fp16 call that
    reused the bf16 Launch ran the bf16 kernel: error 12.7, session 11)."""
    def made(dtype, variant):
        a, b = torch.empty(256, 512, dtype=dtype), torch.empty(512, 256, dtype=dtype)
        out = torch.empty(256, 256, dtype=torch.bfloat16)
        flags = dict(input_precision="ieee", is_fp32=False, has_scale=False)
        if variant == "tma":
            return matmul_tma.recipe(TileConfig(64, 64, 64, 8, 3, 4, "tma"), a, b, out,
                                     **flags).run
        return matmul_tma_split.recipe(TileConfig(64, 64, 64, 8, 3, 4, "tma_split", 2), a, b,
                                       out, **flags).main

    for variant in ("tma", "tma_split"):
        one, other = (made(d, variant) for d in dtypes)
        assert one is not other and one is made(dtypes[0], variant)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CORNERS + (Case(300, 257, 1000), Case(128, 256, 4096, "cc")),
                         ids=lambda c: c.id)
@pytest.mark.parametrize("mode,tol", GPU_MODES)
def test_gpu_modes_match_reference(case, mode, tol):
    if mode == "fp8" and torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 needs compute capability 8.9+")
    assert _run(case, mode, "cuda", GPU_TILE) < tol


@pytest.mark.gpu
@pytest.mark.parametrize("case", [Case(33, 17, 65), Case(300, 264, 1000, "cc"),
                                  Case(128, 256, 4096, "cr"), Case(1024, 1000, 2000, "rc", 8)],
                         ids=lambda c: c.id)
@pytest.mark.parametrize("mode,tol", GPU_MODES)
@pytest.mark.parametrize("variant", ["split4", "tma", "tma_split4", "gemv_split4"])
def test_gpu_variants_match_reference(case, mode, tol, variant):
    """Split-K, the TMA kernel and TMA split-K on edges, every layout and padded leading
    dimensions (operands a descriptor cannot take run the same tile with pointer loads)."""
    if mode == "fp8" and torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 needs compute capability 8.9+")
    assert _run(case, mode, "cuda", GPU_VARIANTS[variant]) < tol


@pytest.mark.gpu
@pytest.mark.parametrize("case", SETS["pr"] + (Case(4097, 4095, 1000), Case(128, 128, 65536)),
                         ids=lambda c: c.id)
@pytest.mark.parametrize("mode,tol", GPU_MODES)
def test_gpu_dispatched_pr_shapes(case, mode, tol):
    """What a library call runs (table or heuristic, copies, TMA): every pr shape."""
    if mode == "fp8" and torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 needs compute capability 8.9+")
    assert _run(case, mode, "cuda") < tol


@pytest.mark.gpu
@pytest.mark.parametrize("case", [Case(26, 523, 731), Case(70, 1762, 301), Case(300, 4097, 200),
                                  Case(64, 1100, 512)], ids=lambda c: c.id)
@pytest.mark.parametrize("mode,tol", [("bf16", 5e-3), ("fp8", 5e-3), ("tf32", 1.5e-3)])
@pytest.mark.parametrize("out_layout", ["row", "col"])
def test_gpu_tma_for_thin_and_odd_shapes_stages_c(case, mode, tol, out_layout):
    """Shapes whose pointer loads would be scalar run a TMA variant (thin M included,
    operands copied; tf32's K-major copy makes them vectorise, so it may take either; a
    thin M with long K may split K on TMA loads), and a C whose rows a descriptor cannot
    take (N = 4097, or column-major) is staged in an aligned buffer and copied into
    `out` (the split variant's reduction stores any strides): every element written."""
    from kernels import dispatch

    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the TMA variant is a Hopper (sm_90) path")
    inp = make_inputs(case, MODES[mode], "cuda", seed=case.n)
    dtype = getattr(torch, MODES[mode].output_dtype)
    out = torch.full((case.m, case.n), float("nan"), dtype=dtype, device="cuda") \
        if out_layout == "row" else \
        torch.full((case.n, case.m), float("nan"), dtype=dtype, device="cuda").t()
    if mode != "tf32":   # 16-bit N not a multiple of 16 and fp8 (K-major B, M < 128): TMA
        assert dispatch.plan(mode_named(mode), inp.a, inp.b).pick.variant in ("tma",
                                                                              "tma_split")
    got = kernels.matmul(inp.a, inp.b, precision=mode, out=out, scale_a=inp.scale_a,
                         scale_b=inp.scale_b)
    assert got is out and not torch.isnan(got.float()).any()
    assert relative_error(got, inp.reference()) < tol


@pytest.mark.gpu
@pytest.mark.parametrize("case", [Case(1000, 1000, 1000), Case(512, 768, 253, "cr")],
                         ids=lambda c: c.id)
@pytest.mark.parametrize("mode,tol", [("fp32", 2e-5), ("bf16", 5e-3)])
def test_gpu_autotuned(case, mode, tol):
    assert _run(case, mode, "cuda") < tol


@pytest.mark.gpu
@pytest.mark.parametrize("mode,tol", [("fp8", 5e-3), ("tf32", 1.5e-3)])
def test_gpu_cached_copies_are_reused_and_follow_an_in_place_change(mode, tol):
    """fp8/tf32 row-major B is copied K-major: with cache_copies the copy is made once,
    and an in-place change of B makes a new one (the result follows B)."""
    from kernels import dispatch

    if mode == "fp8" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the K-major copy is a Hopper (sm_90) path")
    inp = make_inputs(Case(512, 384, 256), MODES[mode], "cuda", seed=5)
    dispatch.COPIES.clear()
    misses = dispatch.COPIES.misses

    def run():
        return kernels.matmul(inp.a, inp.b, precision=mode, scale_a=inp.scale_a,
                              scale_b=inp.scale_b, cache_copies=True)

    run()
    assert relative_error(run(), inp.reference()) < tol
    assert dispatch.COPIES.misses == misses + 1 and len(dispatch.COPIES) == 1
    inp.b.copy_(inp.b.float().neg())   # in place: the copy must be made again
    assert relative_error(run(), inp.reference()) < tol
    assert dispatch.COPIES.misses == misses + 2
    hits = dispatch.COPIES.hits
    graph = torch.cuda.CUDAGraph()     # capture reads the kept copy: no copy in the graph
    with torch.cuda.graph(graph):
        got = run()
    graph.replay()
    torch.cuda.synchronize()
    assert relative_error(got, inp.reference()) < tol
    assert (dispatch.COPIES.hits, dispatch.COPIES.misses) == (hits + 1, misses + 2)


@pytest.mark.gpu
@pytest.mark.parametrize("case,mode,tol", [(Case(1111, 777, 555), "bf16", 5e-3),
                                           (Case(16, 4096, 4096), "fp32", 2e-5),
                                           (Case(70, 1762, 3010), "fp16", 1e-3)],
                         ids=["staged-copies", "tiled-split", "tma-split"])
def test_gpu_kept_scratch_buffers_serve_calls_in_turn_threads_and_graphs(case, mode, tol):
    """Buffers a call needs only while its kernels run (copies, a staged C, split-K
    partials) are kept for the next call (kernels/scratch.py): calls in turn on other
    inputs, two threads calling at once on one stream, and a graph captured before and
    replayed after eager calls all get their own products."""
    import threading

    from kernels import dispatch
    from kernels.scratch import SCRATCH

    dispatch.reset()
    inputs = [make_inputs(case, MODES[mode], "cuda", seed=s) for s in range(4)]

    def call(inp):
        return kernels.matmul(inp.a, inp.b, precision=mode, scale_a=inp.scale_a,
                              scale_b=inp.scale_b)

    first = call(inputs[0])
    assert len(SCRATCH) >= 1                      # the case's per-call buffers were kept
    for inp in inputs[1:]:                        # in turn, one stream
        assert relative_error(call(inp), inp.reference()) < tol
    assert torch.equal(call(inputs[0]), first)    # the same inputs: the same bits
    graph, static = torch.cuda.CUDAGraph(), inputs[0]
    call(static)                                  # warm-up outside the capture
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        captured = call(static)
    errors, done = [], []

    def worker(inp):
        for _ in range(20):
            errors.append(relative_error(call(inp), inp.reference()))
        done.append(True)

    threads = [threading.Thread(target=worker, args=(inp,)) for inp in inputs[1:3]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    graph.replay()
    torch.cuda.synchronize()
    assert len(done) == 2 and max(errors) < tol
    assert torch.equal(captured, first)


def test_cache_copies_is_accepted_where_nothing_is_copied(device):
    inp = make_inputs(Case(40, 24, 56), MODES["fp32"], device, seed=2)
    got = kernels.matmul(inp.a, inp.b, precision="fp32", cache_copies=True)
    assert relative_error(got, inp.reference()) < 1e-5


class _OnOne(torch.Tensor):
    """A CPU tensor that says it is on CUDA device 1."""

    def get_device(self):
        return 1


def test_tensors_on_another_gpu_than_the_current_one_are_computed_on_theirs(monkeypatch):
    """Triton launches on the current device: tensors on another were read through their
    pointers on the wrong GPU. The call moves to their device, as torch's ops do, and
    only where it must (the device's C calls stood in for: no second GPU here)."""
    import contextlib
    import sys

    km = sys.modules["kernels.matmul"]
    state = {"current": 0, "entered": []}

    @contextlib.contextmanager
    def to(index):
        state["entered"].append(index)
        was, state["current"] = state["current"], index
        try:
            yield
        finally:
            state["current"] = was

    monkeypatch.setattr(km, "current_index", lambda: state["current"])
    monkeypatch.setattr(torch.cuda, "device", to)
    inp = make_inputs(Case(24, 40, 32), MODES["fp32"], "cpu", seed=4)
    a, b = inp.a.as_subclass(_OnOne), inp.b.as_subclass(_OnOne)
    with torch.no_grad():
        got = kernels.matmul(a, b, precision="fp32")
    assert state == {"current": 0, "entered": [1]}
    assert relative_error(got.as_subclass(torch.Tensor), inp.reference()) < 1e-5
    state["current"] = 1   # already theirs: no move
    with torch.no_grad():
        kernels.matmul(a, b, precision="fp32")
    assert state["entered"] == [1]
    state["current"] = 0   # a switch that does not take: said, not a recursion
    monkeypatch.setattr(torch.cuda, "device", lambda index: contextlib.nullcontext())
    with torch.no_grad(), pytest.raises(RuntimeError, match="could not make CUDA device 1"):
        kernels.matmul(a, b, precision="fp32")


@pytest.mark.gpu
def test_gpu_tensors_on_a_second_gpu_are_computed_there():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    inp = make_inputs(Case(256, 192, 320), MODES["bf16"], "cuda:1", seed=5)
    assert torch.cuda.current_device() == 0
    got = kernels.matmul(inp.a, inp.b, precision="bf16")
    torch.cuda.synchronize(1)
    assert got.device == inp.a.device and relative_error(got, inp.reference()) < 5e-3


@pytest.mark.gpu
def test_gpu_tuning_is_cached_and_pinned(tmp_path):
    """The first call tunes through the chooser hook and writes the local cache; a new
    Tuner (a new process) reuses the tile without benchmarking; a baseline's pin wins."""
    import json
    from dataclasses import asdict

    from gemmgate import tuning

    setup = tuning.TuningSetup("test-chip", cache_dir=str(tmp_path), budget_s=5, search=True)
    case = Case(512, 512, 512)
    choose = tuning.Tuner(setup).chooser(kernels.kernel_hash())
    assert _run(case, "bf16", "cuda", choose=choose) < 5e-3
    chosen = choose.last
    assert chosen.source == tuning.TUNED and len(chosen.timings_ms) >= 1
    entries = json.loads(setup.cache_path.read_text())["entries"]
    assert [k for k in entries if k.startswith(chosen.key + " #")]  # one per candidate list
    again = tuning.Tuner(setup).chooser(kernels.kernel_hash())
    _run(case, "bf16", "cuda", choose=again)
    assert again.last.source == tuning.CACHED and again.last.config == chosen.config
    from kernels import dispatch

    inp = make_inputs(case, MODES["bf16"], "cuda")
    offered = dispatch.candidates(dispatch.plan(mode_named("bf16"), inp.a, inp.b), inp.a.device,
                                  case.m, case.n, case.k)
    other = next(c for c in offered if c != chosen.config)   # a pin names an offered tile
    pins = tmp_path / "baseline.json"
    pins.write_text(json.dumps({"cases": {"x": {"tuning": {
        "key": chosen.key, "config": asdict(other)}}}}))
    pinned = tuning.Tuner(tuning.TuningSetup("test-chip", pins_from=str(pins),
                                             cache_dir=str(tmp_path))).chooser()
    assert _run(case, "bf16", "cuda", choose=pinned) < 5e-3
    assert pinned.last.source == tuning.PINNED and pinned.last.config == other


@pytest.mark.gpu
@pytest.mark.parametrize("case,mode", [(Case(1, 4096, 1024), "tf32"),
                                       (Case(1, 4096, 4096, "rc"), "tf32"),
                                       (Case(1, 2048, 2048), "tf32x3"),
                                       (Case(2, 3000, 3000, "rc"), "tf32x3")],
                         ids=lambda x: getattr(x, "id", x))
def test_gpu_thin_tf32_and_tf32x3_calls_run_gemv_within_their_bands(case, mode):
    """`decide.gemv_rows`: tf32 at one row over a large B and tf32x3 at one or two rows
    plan the gemv variant, and its exact-fp32 products land within the mode's band."""
    inp = make_inputs(case, MODES[mode], "cuda", seed=case.m * 31 + case.k)
    assert dispatch.plan(mode_named(mode), inp.a, inp.b).pick.variant == "gemv"
    assert _run(case, mode, "cuda") < dict(GPU_MODES)[mode]


@pytest.mark.gpu
@pytest.mark.parametrize("case,config", [
    (Case(640, 408, 1024), TileConfig(64, 128, 128, 8, 4, 4, "tma")),
    (Case(640, 408, 1024, "rc"), TileConfig(64, 128, 128, 8, 4, 4, "tma")),
    (Case(512, 200, 2048), TileConfig(128, 128, 64, 8, 4, 4, "tma_split", 2)),
    (Case(1536, 472, 1024), TileConfig(128, 128, 64, 8, 4, 8, "tma_hybrid", 2)),
    (Case(700, 424, 512), TileConfig(64, 64, 128, 8, 3, 4, "tma", occupancy=2)),
    (Case(1024, 904, 768), TileConfig(128, 160, 64, 8, 4, 8, "tma_wide")),
    (Case(1024, 904, 768, "rc"), TileConfig(128, 160, 64, 8, 4, 8, "tma_wide")),
], ids=lambda x: getattr(x, "id", None) or getattr(x, "variant", str(x)))
def test_gpu_b_read_past_n_over_its_kept_copys_zeros_gives_the_same_c(case, config):
    """A kept copy of B holds zeros past N (`past_n.pads_b`) and the tile's descriptor
    reads them to whole tiles (`past_n.b_extent`): C is the one the descriptor over N
    alone gives (a copy per call, no room), bit for bit."""
    inp = make_inputs(case, MODES["fp16"], "cuda", seed=case.n)
    plan = dispatch.plan(mode_named("fp16"), inp.a, inp.b, cached=True)
    assert plan.pad_b and past_n.b_extent(config, case.n, dispatch.b_room(plan, case.n))
    try:
        kept = kernels.matmul(inp.a, inp.b, config=config, cache_copies=True)
    finally:
        dispatch.COPIES.clear()
    plain = kernels.matmul(inp.a, inp.b, config=config)
    assert torch.equal(kept, plain)
    ref = inp.a.double() @ inp.b.double()
    assert ((kept.double() - ref).norm() / ref.norm()).item() < 5e-3


@pytest.mark.gpu
@pytest.mark.parametrize("case,config", [
    (Case(640, 408, 1024), TileConfig(64, 128, 128, 8, 4, 4, "tma")),
    (Case(1024, 904, 768), TileConfig(128, 160, 128, 8, 4, 8, "tma_wide")),
], ids=lambda x: getattr(x, "id", None) or getattr(x, "variant", str(x)))
def test_gpu_fp8_b_copied_per_call_is_read_past_n_over_its_zeros(case, config):
    """Without kept copies fp8 still copies a row-major B K-major on every call, with zeros
    past N (`past_n.pads_b`), which the tile reads to whole tiles: C is the kept copy's,
    bit for bit, and right."""
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("fp8 TMA needs compute capability 9.0")
    inp = make_inputs(case, MODES["fp8"], "cuda", seed=case.n)
    plan = dispatch.plan(mode_named("fp8"), inp.a, inp.b)
    assert plan.copy_b == "kmajor" and plan.pad_b
    assert past_n.b_extent(config, case.n, dispatch.b_room(plan, case.n))
    scales = dict(precision="fp8", scale_a=inp.scale_a, scale_b=inp.scale_b, config=config)
    per_call = kernels.matmul(inp.a, inp.b, **scales)
    try:
        kept = kernels.matmul(inp.a, inp.b, **scales, cache_copies=True)
    finally:
        dispatch.COPIES.clear()
    assert torch.equal(per_call, kept)
    assert relative_error(per_call, inp.reference()) < 5e-3


@pytest.mark.gpu
def test_gpu_without_a_chooser_the_heuristic_tile_runs_and_nothing_is_timed(monkeypatch):
    """No tuning on the call path: a library call on an unseen shape never benchmarks."""
    import importlib

    mm = importlib.import_module("kernels.matmul")  # the module (kernels.matmul is the function)
    monkeypatch.setattr(mm, "_bench_ms", lambda *a, **k: pytest.fail("timed on the call path"))
    assert _run(Case(777, 333, 999), "bf16", "cuda") < 5e-3


@pytest.mark.gpu
def test_gpu_fp32_is_ieee_not_tf32():
    # K=4096 normal inputs: IEEE fp32 ~1e-6, tf32 ~3e-4. Triton's default for an fp32
    # dot is tf32, so this fails if the kernel ever stops passing input_precision.
    err = _run(Case(256, 256, 4096), "fp32", "cuda", GPU_TILE)
    assert err < 2e-5
    assert _run(Case(256, 256, 4096), "tf32", "cuda", GPU_TILE) > 5e-5


def test_dtype_implies_mode(device):
    a = torch.randn(32, 16, device=device)
    b = torch.randn(16, 8, device=device)
    c = kernels.matmul(a, b)
    assert c.dtype == torch.float32
    assert relative_error(c, a.double() @ b.double()) < 1e-5  # fp32, never tf32


@pytest.mark.parametrize("m,n", [(5, 7), (256, 192)])  # 256: past the TMA kernel's M >= 64
def test_zero_k_gives_zeros(m, n, device):
    a = torch.randn(m, 0, device=device)
    b = torch.randn(0, n, device=device)
    assert torch.equal(kernels.matmul(a, b), torch.zeros(m, n, device=device))


@pytest.mark.parametrize("a_shape,b_shape", [((0, 4), (4, 3)), ((4, 3), (3, 0))])
def test_empty_output(a_shape, b_shape, device):
    c = kernels.matmul(torch.randn(a_shape, device=device), torch.randn(b_shape, device=device))
    assert c.shape == (a_shape[0], b_shape[1])


# ------------------------------------------------------------------------- bad input

def _t(*shape, dtype=torch.float32, device="cpu"):
    return torch.ones(shape, dtype=dtype, device=device)


@pytest.mark.parametrize("a,b,exc,match", [
    (_t(2, 3, 4), _t(4, 5), ValueError, "2-D"),
    (_t(3), _t(3, 5), ValueError, "2-D"),
    (_t(2, 3), _t(4, 5), ValueError, "inner dimensions differ"),
    (_t(2, 3), _t(3, 5, dtype=torch.float16), TypeError, "mixed dtypes"),
    (_t(2, 3, dtype=torch.int32), _t(3, 5, dtype=torch.int32), TypeError, "integer"),
    (_t(2, 3, dtype=torch.bool), _t(3, 5, dtype=torch.bool), TypeError, "integer"),
    ([[1.0]], _t(1, 1), TypeError, "torch.Tensor"),
])
def test_bad_input_is_named(a, b, exc, match):
    with pytest.raises(exc, match=match):
        kernels.matmul(a, b)


@pytest.mark.parametrize("kw, exc, match", [
    (dict(out=[[0.0]]), ValueError, r"out must be a \(2, 5\) torch.float32 tensor, got list"),
    (dict(out=torch.empty(1, 5).expand(2, 5)), ValueError, "out's elements share memory"),
    (dict(out=torch._neg_view(torch.empty(2, 5))), ValueError, "out is a lazy negation view"),
    (dict(scale_a=2.0), ValueError, "scale_a must be a one-element float32 tensor on cpu, got fl"),
    (dict(config="tma"), TypeError, "config must be a TileConfig or None, got str"),
    (dict(config={}), TypeError, "config must be a TileConfig or None, got dict"),
    (dict(cache_copies=[]), TypeError, r"cache_copies must be True or False, got \[\]"),
    (dict(cache_copies="no"), TypeError, "cache_copies must be True or False, got 'no'"),
    (dict(choose=5), TypeError, "choose must be a callable or None, got int"),
])
def test_bad_out_scale_or_config_is_named(kw, exc, match):
    with pytest.raises(exc, match=match):
        kernels.matmul(_t(2, 3), _t(3, 5), **kw)


def test_a_scale_inside_out_or_without_its_sign_is_refused():
    """A scale that was one of out's elements was written over by the first tile stored,
    and a negation-view scale lost its sign: wrong values, no error (a review). Both are
    refused; a scale of its own beside an out is fine."""
    a, b = _t(48, 40), _t(40, 36)
    o = torch.full((48, 36), 2.0)
    with pytest.raises(ValueError, match="scale_a lies inside out's memory"):
        kernels.matmul(a, b, out=o, scale_a=o[0:1, 0:1])
    with pytest.raises(ValueError, match="scale_b lies inside out's memory"):
        kernels.matmul(a, b, out=o, scale_b=o[47:48, 35:36].reshape(1))
    neg = torch.tensor([1 + 2j]).conj().imag
    assert neg.is_neg()
    with pytest.raises(ValueError, match="scale_a is a lazy negation view"):
        kernels.matmul(a, b, scale_a=neg)
    two = torch.tensor(2.0)
    got = kernels.matmul(a, b, out=o, scale_a=two)
    assert got is o and torch.allclose(o, 2 * (a @ b), rtol=1e-5, atol=1e-4)


def test_a_scale_that_runs_into_out_is_refused():
    """A 4-byte fp32 scale starting 2 bytes before a 2-byte out ran into out's first
    element (fp8's layout: an fp32 scale beside a bf16 out): only its first byte was
    looked for inside out, and the product read 2**25 (a review)."""
    buf = torch.zeros(2 + 40 * 40, dtype=torch.float16)
    out = buf[1:1601].view(40, 40)
    scale = buf[0:2].view(torch.float32)
    assert scale.data_ptr() < out.data_ptr() < scale.data_ptr() + 4
    with pytest.raises(ValueError, match="scale_a lies inside out's memory"):
        kernels.matmul(_t(40, 16).half(), _t(16, 40).half(), out=out, scale_a=scale)
    apart = torch.zeros(4 + 40 * 40, dtype=torch.float16)   # ends where out starts: fine
    kernels.matmul(_t(40, 16).half(), _t(16, 40).half(), out=apart[2:1602].view(40, 40),
                   scale_a=apart[0:2].view(torch.float32).fill_(1.0))


def test_amds_fp8_format_on_an_nvidia_gpu_is_refused_naming_it(monkeypatch):
    """float8_e4m3fnuz passed the checks on NVIDIA and failed inside Triton's compiler (a
    review): refused, naming the format (on a chip stood in for a planning tool)."""
    from kernels import checks, dispatch
    from kernels.modes import mode_named

    monkeypatch.setattr(dispatch, "_device_info", lambda device: ((9, 0), 232448, "H200"))
    monkeypatch.setattr(torch.version, "hip", None)
    with pytest.raises(ValueError, match="float8_e4m3fnuz is AMD's fp8 format"):
        checks.check_device(torch.device("meta"), mode_named("fp8"), torch.float8_e4m3fnuz)
    checks.check_device(torch.device("meta"), mode_named("fp8"), torch.float8_e4m3fn)


def test_a_lazy_negation_view_is_refused_not_read_without_its_sign():
    """The kernels read storage as it is: `a.conj().imag` of a complex tensor (a negation
    view) gave the product's negative (session 57)."""
    g = torch.Generator().manual_seed(3)
    a = torch.randn(4, 8, dtype=torch.cfloat, generator=g).conj().imag
    assert a.is_neg()
    with pytest.raises(ValueError, match="a is a lazy negation view"):
        kernels.matmul(a, _t(8, 5))
    with pytest.raises(ValueError, match="b is a lazy negation view"):
        kernels.matmul(_t(5, 8), torch._neg_view(_t(8, 3)))
    plain = a.resolve_neg()
    assert torch.allclose(kernels.matmul(plain, _t(8, 5)), plain @ _t(8, 5), rtol=1e-5,
                          atol=1e-5)   # (summed in another order than torch's)


def test_inputs_that_require_grad_are_refused_where_autograd_would_record():
    w = torch.ones(3, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="kernels.matmul has no backward"):
        kernels.matmul(_t(2, 3), w)
    with pytest.raises(RuntimeError, match="no backward"):
        kernels.matmul(_t(2, 3), _t(3, 5), out=torch.zeros(2, 5, requires_grad=True))
    with torch.no_grad():
        assert torch.equal(kernels.matmul(_t(2, 3), w), _t(2, 3) @ w.detach())


def test_a_forward_mode_dual_tensor_is_refused_not_its_tangent_dropped():
    """A forward-mode AD dual tensor (requires_grad False, and no_grad leaves forward AD
    on) ran, and the product carried no tangent: a derivative of zero, silently (a
    review). Refused for each argument; its primal runs."""
    import torch.autograd.forward_ad as fwAD

    a, b, out = _t(4, 3), _t(3, 2), torch.zeros(4, 2)
    with fwAD.dual_level():
        for where in ("a", "b", "out"):
            args = dict(a=a, b=b, out=out)
            args[where] = fwAD.make_dual(args[where], torch.ones_like(args[where]))
            with torch.no_grad(), pytest.raises(RuntimeError,
                                                match="no forward-mode derivative"):
                kernels.matmul(args["a"], args["b"], out=args["out"])
        dual = fwAD.make_dual(a, torch.ones_like(a))
        got = kernels.matmul(fwAD.unpack_dual(dual).primal, b)
        assert fwAD.unpack_dual(got).tangent is None and torch.equal(got, a @ b)
    assert torch.equal(kernels.matmul(a, b), a @ b)   # outside the level: as before


def test_a_tensor_a_torch_func_transform_wraps_is_named_not_an_internal_error():
    """Under torch.func.vmap an operand (or out) is a wrapper with no storage: the plan's
    data_ptr raised torch's "Cannot access data pointer of Tensor that doesn't have
    storage" from inside kernels/dispatch.py (a review). Refused, naming the argument."""
    b = _t(3, 2)
    with pytest.raises(ValueError, match="a has no storage for the kernels to read"):
        torch.func.vmap(lambda x: kernels.matmul(x, b))(torch.ones(2, 4, 3))
    with pytest.raises(ValueError, match="b has no storage for the kernels to read"):
        torch.func.vmap(lambda x: kernels.matmul(_t(4, 3), x))(torch.ones(2, 3, 2))
    with pytest.raises(ValueError, match="out has no storage for the kernels to read"):
        torch.func.vmap(lambda x: kernels.matmul(_t(4, 3), b, out=x))(torch.zeros(2, 4, 2))


def test_a_write_into_out_bumps_its_version_so_a_kept_copy_of_it_is_made_again():
    """`out` is written in place: its version counter moves, as PyTorch's in-place ops
    move it. A copy the dispatcher keeps of a tensor (`cache_copies`) is valid while its
    version stands; a product written into that tensor must not leave the old copy in
    use (session 57: it was reused, stale)."""
    import dataclasses

    from kernels.modes import mode_named

    x, w = torch.randn(24, 40), torch.zeros(40, 16)
    plan = dataclasses.replace(dispatch.plan(mode_named("fp32"), x, w, cached=True),
                               copy_b="aligned")   # a kept copy of B (the CPU never copies)
    _, before = dispatch.prepare(plan, x, w, cache=True)
    v = w._version
    kernels.matmul(torch.randn(40, 40), torch.randn(40, 16), out=w)
    assert w._version > v
    _, after = dispatch.prepare(plan, x, w, cache=True)
    assert after is not before and torch.equal(after, w)


def test_a_wide_or_tall_tile_on_operands_no_descriptor_takes_falls_back_to_pointer_loads():
    """`config=` with a 48-wide tile on B rows of 116 bytes: the tiled form, its sides cut
    to powers of two (it raised: block_n=48 is no tiled tile)."""
    a, b = torch.randn(37, 48), torch.randn(48, 29)
    ref = a.double() @ b.double()
    for cfg in (TileConfig(32, 48, 16, 2, 1, 4, "tma_wide"), TileConfig(48, 32, 16, 2, 1, 4,
                                                                         "tma_tall")):
        got = kernels.matmul(a, b, config=cfg)
        assert ((got.double() - ref).norm() / ref.norm()).item() < 1e-5


def test_mixed_devices():
    with pytest.raises(ValueError, match="mixed devices"):
        kernels.matmul(_t(2, 3), _t(3, 5, device="meta"))


def test_unknown_mode():
    with pytest.raises(ValueError, match="unknown precision 'fp64'"):
        kernels.matmul(_t(2, 3), _t(3, 5), precision="fp64")
    with pytest.raises(ValueError, match="unknown precision 'fp64'"):  # not cached: again
        kernels.matmul(_t(2, 3), _t(3, 5), precision="fp64")
    with pytest.raises(ValueError, match="must be a mode name or None"):
        kernels.matmul(_t(2, 3), _t(3, 5), precision=["bf16"])


def test_mode_dtype_mismatch():
    with pytest.raises(TypeError, match="needs bfloat16 inputs"):
        kernels.matmul(_t(2, 3), _t(3, 5), precision="bf16")


@pytest.mark.parametrize("mode", ["tf32", "fp8", "bf16"])
def test_mode_unsupported_on_cpu(mode):
    """bf16 too: the interpreter's bf16 dot returned a relative error of 8.6e9, silently."""
    if torch.cuda.is_available():
        pytest.skip("checks the CPU path")
    dtype = {"fp8": torch.float8_e4m3fn, "bf16": torch.bfloat16}.get(mode, torch.float32)
    with pytest.raises(ValueError, match=f"{mode} is not supported on cpu"):
        kernels.matmul(_t(2, 3).to(dtype), _t(3, 5).to(dtype), precision=mode)


@pytest.mark.parametrize("variant", ["tiled", "tma", "tma_split", "tma_streamk", "tma_hybrid",
                                     "tma_ws", "tma_wide", "gemv"])
def test_k0_under_any_variants_config_is_zeros(variant):
    """A descriptor's box needs every extent positive: a `config=` naming a TMA variant on
    K = 0 failed inside Triton (AssertionError, ZeroDivisionError); it runs the plain
    kernel, as the dispatcher's own pick does."""
    from kernels import TileConfig

    if torch.cuda.is_available():
        pytest.skip("the CPU path: a TMA variant's recipe on the interpreter")
    a, b = torch.randn(8, 16)[:, :0], torch.randn(4, 16)[:0]
    split = {"tma_split": 2, "tma_hybrid": 2, "gemv": 2}.get(variant, 1)
    cfg = TileConfig(1 if variant == "gemv" else 64, 48 if variant == "tma_wide" else 32,
                     32, 1, 1, 4, variant=variant, split_k=split)
    c = kernels.matmul(a, b, config=cfg)
    assert c.shape == (8, 16) and bool((c == 0).all())


def test_a_tile_that_cannot_split_k_says_so_when_made():
    from kernels import TileConfig

    for variant in ("tma", "tma_streamk", "tma_wide", "tma_ws"):
        with pytest.raises(ValueError, match="does not split K"):
            TileConfig(128, 128 if variant != "tma_wide" else 192, 64, 8, 3, 4, variant,
                       split_k=2)
    with pytest.raises(ValueError, match="split_k=2: the tma_ws variant does not split K"):
        TileConfig(128, 128, 64, 8, 3, 4, "tma_ws", split_k=2)


def test_sparse_meta_a_bad_choose_and_a_scale_with_grad_are_named():
    """Each was an internal error (a data pointer, strides, a missing .variant) or a
    silently dropped gradient. (Meta tensors stay: scripts/call_audit.py compiles the
    calls' kernels on them.)"""
    import warnings

    if torch.cuda.is_available():
        pytest.skip("the CPU path")
    a = _t(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (sparse CSR's beta warning)
        for bad, layout in ((a.to_sparse(), "sparse_coo"), (a.to_sparse_csr(), "sparse_csr")):
            with pytest.raises(ValueError, match=f"a must be a dense .*layout torch.{layout}"):
                kernels.matmul(bad, a)
    with pytest.raises(TypeError, match="choose returned str, not a TileConfig"):
        kernels.matmul(a, a, choose=lambda key, candidates, bench: "x")
    with pytest.raises(TypeError, match="choose returned NoneType"):
        kernels.matmul(a, a, choose=lambda key, candidates, bench: None)
    with pytest.raises(RuntimeError, match="no backward"):
        kernels.matmul(a, a, scale_a=torch.tensor(2.0, requires_grad=True),
                       scale_b=torch.tensor(1.0))


def test_bad_out(device):
    with pytest.raises(ValueError, match="out must be"):
        kernels.matmul(_t(2, 3, device=device), _t(3, 5, device=device),
                       out=torch.empty(5, 2, device=device))


def test_a_sparse_out_a_meta_call_and_an_inference_out_are_named():
    """A review: a sparse COO out was told its elements share memory, a CSR one raised
    torch's "no strides" from inside the checks; meta operands (no data) crashed inside
    Triton; an inference tensor was written outside inference mode, which torch
    refuses. (Meta calls with a chip's facts stood in, scripts/call_audit.py's, stay.)"""
    import warnings

    if torch.cuda.is_available():
        pytest.skip("the CPU path")
    a, b = _t(4, 6), _t(6, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (sparse CSR's beta warning)
        for out, layout in ((torch.zeros(4, 5).to_sparse(), "sparse_coo"),
                            (torch.zeros(4, 5).to_sparse_csr(), "sparse_csr")):
            with pytest.raises(ValueError, match=f"out must be a dense .*torch.{layout}"):
                kernels.matmul(a, b, out=out)
    with pytest.raises(ValueError, match="meta tensors hold no data"):
        kernels.matmul(a.to("meta"), b.to("meta"))
    with torch.inference_mode():
        held = torch.zeros(4, 5)
    with pytest.raises(RuntimeError, match="out is an inference tensor"):
        kernels.matmul(a, b, out=held)
    assert torch.count_nonzero(held) == 0
    with torch.inference_mode():
        kernels.matmul(a, b, out=held)
    torch.testing.assert_close(held, a @ b)


@pytest.mark.parametrize("where", ["a", "b", "a_part", "b_interleaved"])
def test_an_out_over_an_input_is_refused_before_anything_is_written(where, device):
    """The kernels read A and B while they write C's tiles: an out over an input gave
    wrong values (torch.matmul stages the product; this library refuses)."""
    buf = torch.arange(64, dtype=torch.float32, device=device).reshape(8, 8) / 64
    a, b = buf[:4, :4], buf[4:, 4:]
    out = {"a": buf[:4, :4], "b": buf[4:, 4:], "a_part": buf[2:6, 2:6],
           "b_interleaved": buf[4:, 1::2]}[where]
    before = buf.clone()
    with pytest.raises(ValueError, match=f"out overlaps {where[0]} in memory"):
        kernels.matmul(a, b, out=out)
    assert torch.equal(buf, before)


@pytest.mark.parametrize("layout", ["row_blocks", "column_blocks", "column_major_blocks"])
def test_an_out_apart_from_its_inputs_in_one_buffer_is_written(layout, device):
    """Blocks of one buffer's rows, or of its columns (x @ W into the other half of a
    concatenation buffer: the byte spans meet, the elements do not)."""
    buf = torch.arange(96, dtype=torch.float32, device=device).reshape(12, 8) / 96
    if layout == "row_blocks":
        a, b, out = buf[:4, :4], buf[4:8, :4], buf[8:, :4]
    elif layout == "column_blocks":
        a, b, out = buf[:, :4], torch.eye(4, device=device) * 0.5, buf[:, 4:]
    else:
        t = buf.t()                                            # (8, 12), column-major
        a, b, out = t[:4, :4], torch.eye(4, device=device) * 0.5, t[4:, :4]
    want = (a.double() @ b.double()).float()
    assert kernels.matmul(a, b, out=out) is out
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-6)


def test_an_out_whose_rows_run_on_into_the_inputs_next_rows_is_refused(device):
    """out's rows start 6 columns in and run 2 columns into the next row: they meet a's
    first columns there."""
    buf = torch.zeros(9, 8, device=device)
    a = buf[:8, :4]
    out = buf.view(-1)[6:].as_strided((8, 4), (8, 1))
    with pytest.raises(ValueError, match="out overlaps a in memory"):
        kernels.matmul(a, torch.eye(4, device=device), out=out)


def test_a_cached_call_checks_an_out_at_new_addresses_again(load_script):
    """A repeated call (dispatch.CALLS: same shapes, strides, alignment) skips the
    out-overlap check only at the addresses it last found apart: an out moved onto a is
    refused, and the apart one runs again after. On meta tensors (addresses are offsets)
    as an H200 plans them, launching nothing (scripts/call_audit.py's `as_chip`)."""
    from pathlib import Path

    audit = load_script(Path(__file__).resolve().parents[2] / "scripts" / "call_audit.py")
    room = torch.empty(1 << 24, dtype=torch.bfloat16, device="meta")
    a, b = room[:4096].view(64, 64), room[4096:8192].view(64, 64)
    apart, over = room[1 << 20:(1 << 20) + 4096].view(64, 64), room[2048:6144].view(64, 64)
    with audit.as_chip(audit.target(), None, bound=True):
        for out in (apart, apart):
            assert kernels.matmul(a, b, out=out) is out
        with pytest.raises(ValueError, match="out overlaps a in memory"):
            kernels.matmul(a, b, out=over)
        assert kernels.matmul(a, b, out=apart) is apart
        assert len(dispatch.CALLS) == 1   # one resolved call served all four


def test_a_cached_call_checks_an_inference_out_again(load_script):
    """The resolved call's key holds everything the checks read of out: an inference
    tensor of the same shape, strides and alignment as an out already served is still
    refused outside inference mode (the key lacked it, so a device's repeat skipped the
    check). On meta tensors as an H200 plans them (`as_chip`), launching nothing."""
    from pathlib import Path

    audit = load_script(Path(__file__).resolve().parents[2] / "scripts" / "call_audit.py")
    room = torch.empty(1 << 16, dtype=torch.bfloat16, device="meta")   # (addresses are
    a, b = room[16384:20480].view(64, 64), room[20480:24576].view(64, 64)   # offsets)
    out = room[32768:36864].view(64, 64)
    with torch.inference_mode():   # at offset 0: apart from a and b
        held = torch.empty(64, 64, dtype=torch.bfloat16, device="meta")
    with audit.as_chip(audit.target(), None, bound=True):
        assert kernels.matmul(a, b, out=out) is out
        with pytest.raises(RuntimeError, match="out is an inference tensor"):
            kernels.matmul(a, b, out=held)
        with torch.inference_mode():   # served inside inference mode, then outside it
            assert kernels.matmul(a, b, out=held) is held   # (the key lacked the mode:
        with pytest.raises(RuntimeError, match="out is an inference tensor"):   # a review)
            kernels.matmul(a, b, out=held)


def test_fp8_on_a_chip_without_it_is_refused_naming_the_chip(load_script):
    """The refusal named the device through torch.cuda, which a planning tool's stood-in
    chip (meta tensors) cannot answer: an AssertionError in place of the ValueError (a
    review). The name is the one the tuning table is found by."""
    from pathlib import Path

    audit = load_script(Path(__file__).resolve().parents[2] / "scripts" / "call_audit.py")
    a100 = audit.Target("NVIDIA A100-SXM4-80GB", (8, 0), 108, 166912)
    a = torch.empty(64, 64, device="meta").to(torch.float8_e4m3fn)
    one = torch.ones((), device="meta")
    with audit.as_chip(a100, None), pytest.raises(
            ValueError, match="fp8 is not supported on NVIDIA A100-SXM4-80GB"):
        kernels.matmul(a, a.t(), precision="fp8", scale_a=one, scale_b=one)


def test_a_cached_call_given_a_config_runs_that_tile_not_the_kept_pick(load_script):
    """The resolved call keeps its pick's recipe for repeats without a config; a call with
    `config=` another tile makes and runs that tile's recipe. On meta tensors as an H200
    plans them (`as_chip`, each launch recorded in place of compiling it)."""
    from pathlib import Path

    from kernels import launch

    audit = load_script(Path(__file__).resolve().parents[2] / "scripts" / "call_audit.py")
    room = torch.empty(1 << 24, dtype=torch.bfloat16, device="meta")
    a, b = room[:4096].view(64, 64), room[4096:8192].view(64, 64)
    out = room[1 << 20:(1 << 20) + 4096].view(64, 64)
    tile = TileConfig(32, 64, 32, 8, 3, 4, "tiled")
    ran = []
    with audit.as_chip(audit.target(), None):
        launch.Launch.__call__ = lambda self, *t: ran.append(self.kw)
        kernels.matmul(a, b, out=out)
        kernels.matmul(a, b, out=out)
        (resolved,) = dispatch.CALLS.values()
        assert resolved.plan.pick != tile and resolved.pick_recipe is not None
        ran.clear()
        kernels.matmul(a, b, out=out, config=tile)
    assert tile in resolved.recipes and resolved.pick_recipe is resolved.recipes[
        resolved.plan.pick]
    assert [(k["BLOCK_M"], k["BLOCK_N"]) for k in ran] == [(32, 64)]


def test_the_variants_given_bs_room_are_those_whose_descriptor_reads_it():
    """kernels/matmul.py passes B's room to the recipes of past_n.READS_ROOM, which
    scripts/reads_past_n.py counts on, and to no other."""
    import importlib

    mm = importlib.import_module("kernels.matmul")
    assert set(mm._B_ROOM) == set(past_n.READS_ROOM)


_FAR = 1 << 30   # rows this far apart: the third row lies 2**31 elements from the first


@pytest.mark.parametrize("config", [None, INTERPRETER_CONFIG, CPU_VARIANTS["split3"],
                                    CPU_VARIANTS["gemv1"], CPU_VARIANTS["gemv_split3"]],
                         ids=["dispatch", "tiled", "split3", "gemv", "gemv_split3"])
@pytest.mark.parametrize("side", ["a", "out"])
def test_a_view_whose_rows_lie_2_31_elements_apart_is_read_and_written_where_it_is(config,
                                                                                   side):
    """The pointer kernels form offsets in 64 bits where an operand reaches 2**31
    elements (`tile.wide_offsets`): in int32 the third row's offset wrapped, and A's was
    read 4 GiB before it (wrong rows or a crash), C's written there (session 57). The
    buffer is reserved, not touched: only the rows the view names are."""
    if not dispatch.interpreting():
        pytest.skip("the interpreter's case (CPU tensors); a GPU's would hold 8 GiB")
    try:
        big = torch.empty(2 * _FAR + 64, dtype=torch.float32)   # 8 GiB reserved, untouched
    except RuntimeError as e:   # (an allocator that commits it up front)
        pytest.skip(f"cannot reserve 8 GiB: {e}")
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(3, 16, generator=g), torch.randn(16, 32, generator=g)
    ref = a.double() @ b.double()
    if side == "a":
        view = big.as_strided((3, 16), (_FAR, 1)).copy_(a)
        got = kernels.matmul(view, b, precision="fp32", config=config)
    else:
        got = big.as_strided((3, 32), (_FAR, 1)).fill_(float("nan"))
        kernels.matmul(a, b, precision="fp32", out=got, config=config)
    rows = [((got[i].double() - ref[i]).norm() / ref[i].norm()).item() for i in range(3)]
    assert max(rows) < 1e-5, rows


def test_calls_from_several_threads_are_each_correct(device):
    """On the CPU, Triton's interpreter patches triton.language for the whole process
    while a kernel runs: threads interpreting at once raised or returned wrong results
    (a review: 8-21 of 120 calls raised, one 4.4e13 off), so interpreted launches take
    turns (kernels.launch.INTERPRETING)."""
    failures: list[str] = []

    def work(seed: int) -> None:
        for i in range(10):
            inp = make_inputs(Case(33, 21, 70), MODES["fp32"], device, seed=seed * 100 + i)
            try:
                err = relative_error(kernels.matmul(inp.a, inp.b, precision="fp32"),
                                     inp.reference())
            except Exception as e:   # noqa: BLE001 - what a thread met is the finding
                failures.append(f"{type(e).__name__}: {e}"[:200])
                continue
            if not err < 1e-5:
                failures.append(f"seed {seed} call {i}: relative error {err:.3g}")

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


@pytest.mark.skipif(torch.cuda.is_available() or not dispatch.interpreting(),
                    reason="the CPU path: needs the Triton interpreter")
def test_a_choosers_bench_times_the_interpreters_tile():
    """On the CPU `bench` measures the tile that runs (wall clock), not inf ("fails"):
    do_bench asked for a GPU driver and every CPU tile measured inf (a review)."""
    seen = []

    def choose(key, candidates, bench):
        seen.append(bench(candidates[0]))
        return candidates[0]

    a = torch.randn(8, 8)
    kernels.matmul(a, a, choose=choose)
    assert len(seen) == 1 and 0 < seen[0] < float("inf"), seen
