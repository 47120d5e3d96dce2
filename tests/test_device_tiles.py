"""scripts/device/tiles.py: its tile syntax and its refusals (exit 2 with a message); the
timing itself runs on the device only."""

from __future__ import annotations

import dataclasses
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from gemmgate.tuning import config_spec
from kernels.tile import TileConfig

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "device" / "tiles.py"


def _module() -> SimpleNamespace:
    return SimpleNamespace(**runpy.run_path(str(SCRIPT)))   # not as __main__: nothing runs


def test_a_tile_names_its_variant_blocks_stages_warps_split_group_and_occupancy():
    parse = _module().parse_tile
    assert parse("tma:64x128x128:s4:w4") == TileConfig(64, 128, 128, 8, 4, 4, "tma")
    assert parse("tma_split:128x128x64:s4:w8:k2") == \
        TileConfig(128, 128, 64, 8, 4, 8, "tma_split", 2)
    assert parse(" tiled:64x64x64:s3:w4:g4 ").group_m == 4
    assert parse("tma:128x64x64:s4:w4:o2").occupancy == 2
    # gemmgate.tuning.config_spec writes what parse_tile reads (tiles.py labels, tuned.csv)
    for c in (TileConfig(64, 128, 128, 8, 4, 4, "tma"),
              TileConfig(128, 128, 64, 8, 4, 8, "tma_split", 2),
              TileConfig(128, 64, 64, 8, 4, 4, "tma", occupancy=2),
              TileConfig(64, 128, 128, 1, 4, 4, "tma"),
              TileConfig(128, 128, 64, 16, 5, 8, "tma_split", 3, 1)):
        assert parse(config_spec(c)) == c == parse(config_spec(dataclasses.asdict(c)))


@pytest.mark.parametrize("text", ["tma:64x128:s4:w4", "tma:64x128x128", "64x128x128:s4:w4",
                                  "tma:64x128x128:s4:w4:x2"])
def test_a_malformed_tile_is_named(text):
    with pytest.raises(ValueError, match="variant:BMxBNxBK"):
        _module().parse_tile(text)


@pytest.mark.parametrize("argv,message", [
    (["1024x1024", "--configs", "tma:64x64x64:s4:w4"], "--shape"),
    (["1024x1024x1024", "--configs", "tma:64x64:s4:w4"], "variant:BMxBNxBK"),
    (["1024x1024x1024", "--configs", "warp:64x64x64:s4:w4"], "unknown variant"),
    (["1024x1024x1024", "--mode", "int4"], "int4"),
    (["1024x1024x1024", "--pad", "-8"], "--pad -8"),
    (["1024x1024x1024", "--profile-calls", "-1"], "--profile-calls -1"),
])
def test_bad_input_exits_2_before_any_gpu_work(argv, message, capsys):
    assert _module().main(argv) == 2
    assert message in capsys.readouterr().err


def test_an_unknown_layout_is_refused_with_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        _module().main(["64x64x64", "--layout", "xy"])
    assert e.value.code == 2
    assert "--layout" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present: the script would time")
def test_without_a_gpu_it_exits_2():
    assert _module().main(["64x64x64"]) == 2


def test_kernel_events_reads_the_profilers_launch_record_in_launch_order():
    trace = {"traceEvents": [
        {"cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 9},
        {"cat": "kernel", "name": "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", "ts": 20,
         "dur": 17.954, "args": {"grid": [72, 1, 1], "block": [384, 1, 1],
                                 "registers per thread": 168, "shared memory": 0,
                                 "est. achieved occupancy %": 13}},
        {"cat": "kernel", "name": "copy", "ts": 5, "dur": 1.0, "args": {}},
    ]}
    got = _module().kernel_events(trace)
    assert [g["kernel"] for g in got] == ["copy", "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT"]
    assert got[1] == {"kernel": "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", "grid": "72x1x1",
                      "block": "384x1x1", "registers": 168, "smem": 0, "occupancy": 13,
                      "us": 17.95}
    assert got[0]["grid"] == "" and got[0]["us"] == 1.0


def test_profiled_calls_each_provider_in_turn_inside_one_range_and_says_the_order(monkeypatch):
    mod = _module()
    seen, ranges = [], []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: seen.append("sync"))

    class Range:
        def __init__(self, name):
            ranges.append(name)

        def __enter__(self):
            seen.append("push")

        def __exit__(self, *exc):
            seen.append("pop")

    monkeypatch.setattr(torch.cuda.nvtx, "range", Range)
    fns = {"pick": lambda: seen.append("pick"), "tma:64x64x64:s4:w4": lambda: seen.append("t"),
           "vendor": lambda: seen.append("v")}
    shown = {"pick": "pick tma:128x128x64:s4:w8", "tma:64x64x64:s4:w4": "tma:64x64x64:s4:w4",
             "vendor": "vendor"}
    rows = mod.profiled(fns, shown, 2, {"shape": "64x64x64", "mode": "bf16"})
    assert ranges == ["profile"]
    assert seen == ["sync", "push", "pick", "pick", "t", "t", "v", "v", "sync", "pop"]
    assert rows == [{"shape": "64x64x64", "mode": "bf16", "provider": p, "calls": 2}
                    for p in shown.values()]


def test_a_label_is_every_rows_first_column():
    rows = [{"shape": "s", "us": 1.0}]
    assert _module().labelled(rows, None) is rows
    assert list(_module().labelled(rows, "run2-new-tf32")[0]) == ["label", "shape", "us"]
