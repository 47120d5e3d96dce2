"""scripts/device/pack_triton.py: which members a pack keeps, a pack made from a small
stand-in wheel (stripped, executables marked), and its refusals (exit 2 with a message).
Packing a real release (2 min, 250+ MB downloaded) is left to its user."""

from __future__ import annotations

import runpy
import shutil
import tarfile
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "device" / "pack_triton.py"


def _module() -> SimpleNamespace:
    return SimpleNamespace(**runpy.run_path(str(SCRIPT)))   # not as __main__: nothing runs


def test_a_pack_keeps_what_a_hopper_compile_reads_and_drops_the_rest():
    kept = _module().kept
    assert kept("triton/backends/nvidia/bin/ptxas-blackwell", "ptxas_blackwell")
    assert not kept("triton/backends/nvidia/bin/ptxas", "ptxas_blackwell")
    for name in ("triton/__init__.py", "triton/_C/libtriton.so",
                 "triton/backends/nvidia/bin/ptxas", "triton/backends/nvidia/bin/nvdisasm",
                 "triton/backends/nvidia/lib/libdevice.10.bc",
                 "triton/backends/nvidia/include/cuda.h", "triton/backends/amd/compiler.py",
                 "triton/profiler/__init__.py", "triton-3.9.0.dist-info/entry_points.txt"):
        assert kept(name), name
    for name in ("triton/backends/amd/lib/libtriton_amd_codegen.so",
                 "triton/backends/amd/include/hip/hip_runtime_api.h",
                 "triton/backends/nvidia/lib/cupti/libcupti.so",
                 "triton/backends/nvidia/lib/cupti-blackwell/libcupti.so",
                 "triton/backends/nvidia/bin/ptxas-blackwell", "triton/_C/libproton.so",
                 "triton/instrumentation/libGPUInstrumentationTestLib.so",
                 "triton/FileCheck", "triton/plugins/libMLIRDialectPlugin.so"):
        assert not kept(name), name


_GET_PTXAS = {   # each release's get_ptxas, as its NVIDIA backend writes it
    "3.6": "def get_ptxas(arch: int) -> knobs.NvidiaTool:\n"
           "    return knobs.nvidia.ptxas_blackwell if arch >= 100 else knobs.nvidia.ptxas\n",
    "3.9": "@functools.cache\ndef get_ptxas(arch: int) -> knobs.NvidiaTool:\n"
           "    if arch < 90:\n        return knobs.nvidia.ptxas\n"
           "    return knobs.nvidia.ptxas_blackwell\n",
}


def test_the_ptxas_kept_is_the_one_the_release_assembles_sm90_with():
    hopper = _module().hopper_ptxas
    assert hopper("import os\n" + _GET_PTXAS["3.6"]) == "ptxas"
    assert hopper("import os\n" + _GET_PTXAS["3.9"]) == "ptxas_blackwell"
    assert hopper("def other():\n    pass\n") == "ptxas"   # none: the one ptxas
    with pytest.raises(ValueError, match="get_ptxas"):
        hopper("def get_ptxas(arch):\n    return knobs.nvidia.ptxas_hopper\n")


@pytest.mark.skipif(shutil.which("strip") is None, reason="needs strip (binutils)")
def test_a_stand_in_wheel_packs_its_kept_members_stripped_and_executable(tmp_path, capsys):
    import _bisect  # a small ELF shared object to stand in for libtriton.so

    if getattr(_bisect, "__file__", None) is None:
        pytest.skip("this Python's _bisect is built in: no shared object to stand in")
    wheel = tmp_path / "triton-9.9.9-cp312-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.write(_bisect.__file__, "triton/_C/libtriton.so")
        z.writestr("triton/__init__.py", "__version__ = '9.9.9'\n")
        z.writestr("triton/backends/nvidia/bin/ptxas", "#!/bin/sh\n")
        z.writestr("triton/backends/nvidia/bin/ptxas-blackwell", "#!/bin/sh\n")
        z.writestr("triton/backends/amd/lib/libtriton_amd_codegen.so", "x")
        z.writestr("triton/backends/nvidia/compiler.py", _GET_PTXAS["3.9"])
    out = tmp_path / "out"
    assert _module().main(["9.9.9", "--wheel", str(wheel), "--out", str(out)]) == 0
    got = out / "triton-9.9.9.tar.xz"
    assert str(got) in capsys.readouterr().out
    with tarfile.open(got) as t:
        members = {m.name: m for m in t.getmembers() if m.isfile()}
        assert set(members) == {"triton/_C/libtriton.so", "triton/__init__.py",
                                "triton/backends/nvidia/compiler.py",
                                "triton/backends/nvidia/bin/ptxas-blackwell"}
        assert members["triton/backends/nvidia/bin/ptxas-blackwell"].mode & 0o111
        assert members["triton/_C/libtriton.so"].size < Path(_bisect.__file__).stat().st_size


@pytest.mark.parametrize("argv, says", [
    (["3.9"], "VERSION like 3.9.0"),
    (["3.9.0", "--python", "312"], "--python like 3.12"),
    (["3.9.0", "--wheel", "/nonexistent/triton.whl"], "no wheel at"),
])
def test_bad_input_exits_2_with_a_message(argv, says, capsys):
    assert _module().main(argv) == 2
    assert says in capsys.readouterr().err


def test_a_wheel_that_is_not_a_zip_exits_2(tmp_path, capsys):
    bad = tmp_path / "triton-9.9.9.whl"
    bad.write_text("not a zip")
    assert _module().main(["9.9.9", "--wheel", str(bad), "--out", str(tmp_path)]) == 2
    assert "pack_triton: error" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [bad]   # no pack, whole or partial
