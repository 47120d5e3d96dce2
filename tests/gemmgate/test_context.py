"""gemmgate/context.py: --devices parsing and checking, make_context's validation and the
RunContext itself (it pickles; worker and fresh processes get the same object).

Each bad choice is driven through `gemmgate.cli.main`: exit 2, a message naming the bad
value, nothing measured (the `no_measuring` fixture records any attempt) and no file
created in the working directory.
"""

import pickle
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import gemmgate.cli_run
import gemmgate.env
import gemmgate.run
from gemmgate import chips, context, env
from gemmgate.chips import CHIPS, Selection
from gemmgate.cli import main
from gemmgate.context import check_devices, make_context, parse_devices, parse_providers
from gemmgate.precision import MODES
from gemmgate.shapes import Case

ROOT = Path(__file__).resolve().parents[2]


def test_parse_devices():
    assert parse_devices(None) == (0,)
    assert parse_devices("0,1, 3") == (0, 1, 3)
    assert parse_devices("0,") == (0,)   # a trailing comma, as --modes takes one
    for bad in ("a", "0,0", "-1", ",", "0,,"):
        with pytest.raises(ValueError, match="--devices"):
            parse_devices(bad)


def test_gpu_devices_must_exist(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    check_devices((0, 1), "cuda")
    with pytest.raises(ValueError, match=r"--devices 2,5: only 2 GPU\(s\) present \(valid: 0,1\)"):
        check_devices((0, 2, 5), "cuda")


def test_cpu_devices_are_worker_processes():
    assert make_context(chip="cpu", modes="fp32", devices="5").devices == (5,)  # one worker
    assert make_context(chip="cpu", modes="fp32", devices="0,1").devices == (0, 1)
    with pytest.raises(ValueError, match="--devices 10000: on the CPU a device is a worker"):
        make_context(chip="cpu", modes="fp32", devices="0,10000")


@pytest.fixture
def fake_gpus(monkeypatch):
    """Two GPUs, as far as select_chip and check_devices can tell."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


@pytest.fixture
def no_measuring(monkeypatch):
    """Every way into measuring, recorded: the list must stay empty."""
    calls = []

    def record(what):
        return lambda *a, **k: calls.append(what)

    monkeypatch.setattr(gemmgate.run.Runner, "run_case", record("Runner.run_case"))
    monkeypatch.setattr(gemmgate.run, "measure", record("measure"))
    monkeypatch.setattr(gemmgate.cli_run, "run_cases", record("run_cases"))
    return calls


def _files(d):
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


@pytest.fixture
def cwd(tmp_path, monkeypatch, synthetic_record):
    """A working directory holding a valid cpu baseline (synthetic), a file to put paths
    under, a binary file, a non-UTF-8 baseline and shape files."""
    from gemmgate import baselines

    monkeypatch.chdir(tmp_path)
    run = synthetic_record([("fp32", Case(64, 64, 64))], shapes="smoke",
                           environment={"chip": "cpu", "block": 1})
    baselines.save(tmp_path / "base.json", baselines.build([run], "cpu", "smoke"))
    (tmp_path / "afile").write_text("not a directory")
    (tmp_path / "blob.csv").write_bytes(b"m,n,k\n\x00\x01\x02\n")
    (tmp_path / "latin1.json").write_bytes(b'{"chip": "caf\xe9"}')
    (tmp_path / "extra-col.csv").write_text("m,n,k,dtype\n32,32,32,fp32\n")
    (tmp_path / "extra-val.csv").write_text("m,n,k\n32,32,32,7\n")
    (tmp_path / "huge.csv").write_text(f"m,n,k\n{10**12},32,32\n")
    return tmp_path


def run(*extra: str) -> list[str]:
    return ["run", "--chip", "cpu", "--json", "out.json", *extra]


def check(*extra: str) -> list[str]:
    return ["check", "--chip", "cpu", "--baseline", "base.json", "--json", "out.json",
            "--summary", "summary.md", *extra]


@pytest.mark.parametrize("argv, message", [
    (run("--devices", "0,zero"), "--devices takes comma-separated device numbers, got '0,zero'"),
    (run("--devices", "0,10000"), "--devices 10000: on the CPU a device is a worker process"),
    (run("--modes", ""), "--modes '' names no mode"),
    (run("--shapes", ""), "--shapes is empty: give a set name, a shape file or shapes"),
    (run("--ab-ref", ""), "--ab-ref: is empty: give a commit"),
    (check("--ab-ref", " "), "--ab-ref: is empty: give a commit"),
    (run("--modes", ","), "--modes ',' names no mode"),
    (check("--floor", "-5"), "--floor must be a fraction between 0 and 1 (e.g. 0.015), got -5.0"),
    (check("--floor", "0"), "--floor must be a fraction between 0 and 1 (e.g. 0.015), got 0.0"),
    (run("--budget", "0"), "--budget must be > 0 seconds, got 0.0"),
    (check("--budget", "0"), "--budget must be > 0 seconds, got 0.0"),
    (run("--block", "0"), "--block must be 1 to 1000, got 0"),
    (check("--block", "0"), "--block must be 1 to 1000, got 0"),
    (run("--block", "1001"), "--block must be 1 to 1000, got 1001"),
    (run("--shapes", "extra-col.csv"), "extra-col.csv:1: unknown column 'dtype' (column 4)"),
    (run("--shapes", "extra-val.csv"), "extra-val.csv:2: case 1 has a value '7' in column 4"),
    (run("--shapes", "huge.csv"), f"case m{10**12}-n32-k32 needs about"),
    (run("--shapes", "blob.csv"), "shape file blob.csv is not UTF-8 text (NUL byte at offset 6"),
    (check("--baseline", "latin1.json"), "latin1.json is not UTF-8 text (byte 0xe9 at offset 13)"),
    (run("--json", "afile/out.json"), "cannot write --json afile/out.json: afile is a file"),
    (check("--json", "afile/out.json"), "cannot write --json afile/out.json: afile is a file"),
    (check("--summary", "afile/s.md"), "cannot write --summary afile/s.md: afile is a file"),
])
def test_bad_choice_exits_2_before_any_work(cwd, no_measuring, capsys, argv, message):
    before = _files(cwd)
    assert main(argv) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "gemmgate: error:" in err and message in err
    assert no_measuring == [] and "cases x" not in err
    assert _files(cwd) == before                              # no file created


def test_a_gpu_that_is_not_there_exits_2(cwd, fake_gpus, no_measuring, capsys):
    assert main(["run", "--chip", "nvidia-h200", "--devices", "1,5"]) == 2
    assert "--devices 5: only 2 GPU(s) present (valid: 0,1)" in capsys.readouterr().err
    assert no_measuring == []


def test_a_case_listed_twice_is_run_once():
    ctx = make_context(chip="cpu", shapes="16x16x16,32x32x32,16x16x16", modes="fp32")
    assert ctx.cases == (Case(16, 16, 16), Case(32, 32, 32))


def test_the_context_pickles_equal(tmp_path):
    ctx = make_context(chip="cpu", shapes="smoke", modes="fp32,fp16", devices="0,1",
                       budget_s=0.5, block=2, reference="0" * 40, slowdown=0.03)
    gpu = replace(ctx, selection=Selection(CHIPS["nvidia-h200"], "--chip", "NVIDIA H200"),
                  device="cuda:1")
    for c in (ctx, gpu):
        again = pickle.loads(pickle.dumps(c))
        assert again == c and again.items == c.items
    assert (ctx.policy.budget_s, ctx.policy.block, ctx.devices) == (0.5, 2, (0, 1))


def test_on_device_and_with_cases():
    ctx = make_context(chip="cpu", shapes="smoke", modes="fp32,fp16")
    assert ctx.on_device(1) is ctx                            # the CPU has no device index
    gpu = replace(ctx, selection=Selection(CHIPS["nvidia-h200"], "--chip", "NVIDIA H200"))
    assert gpu.on_device(1).device == "cuda:1" and gpu.on_device(1).device_index == 1
    some = ctx.with_cases([(MODES["fp16"], ctx.cases[2])])
    assert some.items == [(MODES["fp16"], ctx.cases[2])]


# --- --providers ---------------------------------------------------------------------------

HERE = Path(__file__).parent  # custom_providers.py: GEMMs to name as module:function


def test_providers_default_and_order():
    assert make_context(chip="cpu", modes="fp32").providers == ("triton", "vendor")
    ctx = make_context(chip="cpu", modes="fp32", providers="inductor, vendor,triton,inductor")
    assert ctx.providers == ("triton", "vendor", "inductor")  # gated pair first, no repeats
    assert pickle.loads(pickle.dumps(ctx)) == ctx


@pytest.mark.parametrize("text, message", [
    ("triton,vendor,cublas", "unknown provider 'cublas'; known providers: triton, vendor, "
                             "inductor, vendor_fast, or a module:function path"),
    ("triton,vendor,reference", "unknown provider 'reference'"),
    ("triton,inductor", "--providers needs vendor (the gate compares triton with vendor)"),
    ("", "--providers needs triton and vendor"),
])
def test_bad_providers(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make_context(chip="cpu", modes="fp32", providers=text)


def test_a_module_function_provider_is_imported_when_the_context_is_built(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    ctx = make_context(chip="cpu", modes="fp32", providers="triton,vendor,custom_providers:correct")
    assert ctx.providers == ("triton", "vendor", "custom_providers:correct")
    for path, why in (("nosuch.mod:fn", "ModuleNotFoundError: No module named 'nosuch'"),
                      ("custom_providers:nosuch", "AttributeError"),
                      ("custom_providers:NOT_CALLABLE", "int is not callable"),
                      ("custom_providers:", "a custom provider is module:function")):
        with pytest.raises(ValueError, match=re.escape(path)) as e:
            make_context(chip="cpu", modes="fp32", providers=f"triton,vendor,{path}")
        assert why in str(e.value)


def test_a_provider_that_cannot_be_called_as_the_contract_says_is_refused(monkeypatch):
    """Found when the context is built (exit 2), not as every case failing (exit 1)."""
    monkeypatch.syspath_prepend(str(HERE))
    ok = make_context(chip="cpu", modes="fp32", providers="triton,vendor,custom_providers:unscaled")
    assert ok.providers[-1] == "custom_providers:unscaled"
    with pytest.raises(ValueError, match=re.escape("--providers custom_providers:one_operand: "
                                                   "one_operand(a) cannot be called as f(a, b, "
                                                   "precision=..., out=...)")):
        make_context(chip="cpu", modes="fp32",
                     providers="triton,vendor,custom_providers:one_operand")
    # a run with fp8 (not on the CPU: make_context's check for it, called directly)
    with pytest.raises(ValueError, match=re.escape(
            "f(a, b, precision=..., out=..., scale_a=..., scale_b=...)")):
        parse_providers("triton,vendor,custom_providers:unscaled", scaled=True)


def test_a_bad_provider_path_exits_2_before_any_work(cwd, no_measuring, capsys):
    argv = ["run", "--chip", "cpu", "--shapes", "smoke", "--modes", "fp32",
            "--providers", "triton,vendor,nosuch.mod:fn"]
    assert main(argv) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "--providers nosuch.mod:fn: cannot import it" in err
    assert no_measuring == []
    assert main(["check", "--chip", "cpu", "--baseline", "base.json",
                 "--providers", "triton,vendor,nosuch"]) == 2
    assert "unknown provider 'nosuch'" in capsys.readouterr().err


# --- --copies ------------------------------------------------------------------------------

def test_copies_kept_by_default_per_call_on_request_and_recorded():
    from gemmgate.run import environment_of

    kept = make_context(chip="cpu", modes="fp32")
    per_call = make_context(chip="cpu", modes="fp32", copies="per-call")
    assert kept.keep_copies and not per_call.keep_copies
    assert "copies" not in environment_of(kept)           # a baseline's runs: as before
    assert environment_of(per_call)["copies"] == "per-call"
    with pytest.raises(ValueError, match="--copies 'each': give one of kept, per-call"):
        make_context(chip="cpu", modes="fp32", copies="each")


@pytest.mark.parametrize("seconds", [-1.0, float("nan"), 1e10, 5e9, 2.2e9])
def test_a_case_time_limit_out_of_range_is_refused_as_the_cli_refuses_it(seconds):
    """RunContext takes what `--case-timeout` takes (gemmgate/cli_args.py `_seconds`): seconds
    >= 0 up to MAX_LIMIT_S (past threading.TIMEOUT_MAX a wait overflows; past a C int the
    case alarm raised OverflowError, exit 1: 5e9 and 2.2e9, a review); 0 is no limit."""
    with pytest.raises(ValueError, match="give seconds >= 0 and up to 1e"):
        make_context(chip="cpu", modes="fp32", case_timeout=seconds)
    assert make_context(chip="cpu", modes="fp32", case_timeout=0).case_timeout_s == 0


def test_free_memory_is_asked_of_every_device_a_case_may_run_on(monkeypatch):
    """`--devices 0,1` asked cuda:0 only: a case too large for a busy cuda:1 ran out of
    memory in a worker, exit 3 after minutes (a review). Two H100s faked: 1 GiB free on
    cuda:1."""
    free = {"cuda:0": 80 << 30, "cuda:1": 1 << 30}
    asked = []

    def mem_get_info(dev):
        asked.append(str(dev))
        return free[str(dev)], 80 << 30

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "mem_get_info", mem_get_info)
    monkeypatch.setattr(gemmgate.env, "free_memory", lambda i: None)   # no NVML: CUDA's
    assert make_context("nvidia-h100", "1024x1024x1024", "fp32", devices="0,1").devices \
        == (0, 1)
    assert sorted(set(asked)) == ["cuda:0", "cuda:1"]
    with pytest.raises(ValueError, match="free on cuda:1"):
        make_context("nvidia-h100", "16384x16384x16384", "fp32", devices="0,1")


def test_free_memory_is_asked_of_nvml_first_which_opens_no_cuda_context(monkeypatch):
    """torch.cuda.mem_get_info makes a CUDA context on the device it asks (a few hundred
    MiB, held by the parent of `--devices` workers for the run): where NVML answers,
    CUDA is not asked. Two H100s faked: 1 GiB free on cuda:1 as NVML counts it."""
    free = {0: 80 << 30, 1: 1 << 30}
    nvml_asked = []

    def by_nvml(index):
        nvml_asked.append(index)
        return free[index]

    def no_cuda(dev):
        raise AssertionError(f"CUDA asked for {dev}'s free memory")

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "mem_get_info", no_cuda)
    monkeypatch.setattr(gemmgate.env, "free_memory", by_nvml)
    make_context("nvidia-h100", "1024x1024x1024", "fp32", devices="0,1")
    assert sorted(set(nvml_asked)) == [0, 1]
    with pytest.raises(ValueError, match="free on cuda:1"):
        make_context("nvidia-h100", "16384x16384x16384", "fp32", devices="0,1")


@pytest.mark.gpu
def test_gpu_a_context_made_opens_no_cuda_context_where_nvml_answers():
    """On a real GPU, in a fresh process: making the run context (chip detection, the
    memory check) leaves device 0 without a primary CUDA context where NVML answers."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    code = ("import torch, gemmgate.env as e, gemmgate.context as c\n"
            "if e.free_memory(0) is None: print('no-nvml'); raise SystemExit\n"
            "c.make_context(shapes='64x64x64', modes='bf16')\n"
            "print('context' if torch._C._cuda_hasPrimaryContext(0) else 'none')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    if out.stdout.strip() == "no-nvml":
        pytest.skip("NVML does not answer on this machine")
    assert out.stdout.strip() == "none"



@pytest.mark.parametrize("text", ["\u0661", "1_0", "+1", "\u0660,\uff11"])
def test_devices_are_ascii_numbers(text):
    """int() took '١' as 1 and '1_0' as 10 (a review): as shapes and --values, ASCII."""
    from gemmgate.context import parse_devices

    with pytest.raises(ValueError, match="--devices takes comma-separated device numbers"):
        parse_devices(text)
    assert parse_devices("0,1,") == (0, 1)


def _two_gpus(monkeypatch, names, sms=(132, 132)):
    props = {i: SimpleNamespace(name=n, major=9, minor=0, multi_processor_count=u,
                                shared_memory_per_block_optin=232448, L2_cache_size=50 << 20)
             for i, (n, u) in enumerate(zip(names, sms))}
    monkeypatch.delenv("GEMMGATE_CHIP", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: names[i])
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i=0: props[i])
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(env, "free_memory", lambda i: 80 << 30)


def test_the_chip_is_the_first_run_devices_not_device_0(monkeypatch):
    """`--devices 1` on a host of an H100 (0) and an H200 (1) measured the H200 as
    nvidia-h100: its record, baseline and `tune`'s table another chip's (a review)."""
    _two_gpus(monkeypatch, ("NVIDIA H100 80GB HBM3", "NVIDIA H200"))
    ctx = make_context(devices="1", shapes="64x48x32", modes="fp16")
    assert ctx.device == "cuda:1" and ctx.chip.id == "nvidia-h200"
    assert ctx.selection.device_name == "NVIDIA H200"
    assert make_context(devices="0", shapes="64x48x32", modes="fp16").chip.id == "nvidia-h100"
    assert chips.select_chip(None, context.first_device(SimpleNamespace(devices="1"))
                             ).chip.id == "nvidia-h200"


@pytest.mark.parametrize("names, sms", [(("NVIDIA H100 80GB HBM3", "NVIDIA H200"), (132, 132)),
                                        (("NVIDIA H100 80GB HBM3",) * 2, (132, 16))])
def test_devices_of_two_kinds_are_refused(monkeypatch, names, sms):
    """`--devices 0,1` over two kinds of GPU measured half the cases on the other one,
    all recorded as the first's chip (a MIG slice beside a whole card too)."""
    _two_gpus(monkeypatch, names, sms)
    with pytest.raises(ValueError, match="the devices differ"):
        make_context(devices="0,1", shapes="64x48x32", modes="fp16")
