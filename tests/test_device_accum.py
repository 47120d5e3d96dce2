"""scripts/device/accum.py's `--max-range` tile (planned as an H200 plans, on meta operands)
and its refusal; the measuring itself runs on the device only."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gemmgate.inputs import layout
from gemmgate.precision import MODES
from gemmgate.shapes import Case

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "device" / "accum.py"
sys.path.insert(0, str(ROOT / "scripts"))


def _split_tile(case: Case, max_range: int, monkeypatch):
    from call_audit import as_chip, target

    from kernels import dispatch
    from kernels.modes import mode_named

    split_tile = runpy.run_path(str(SCRIPT))["split_tile"]   # not as __main__: nothing runs
    a, b = layout(case, MODES["fp8"])
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)   # plans as an H200 does
    # the dispatcher's own fp8 ranges off: the picks as the table has them, unsplit
    monkeypatch.setattr(dispatch, "FP8_MAX_RANGE", 1 << 30)
    dispatch.reset()
    with as_chip(target(), None):
        pick = dispatch.plan(mode_named("fp8"), a, b, cached=True).pick
        return pick, split_tile(SimpleNamespace(a=a, b=b), "fp8", max_range)


@pytest.mark.parametrize("k,max_range,split", [(32768, 16384, 2), (65536, 16384, 4),
                                               (32768, 10000, 4)])
def test_the_split_tile_is_the_pick_with_k_ranges_no_longer_than_asked(k, max_range, split,
                                                                       monkeypatch):
    pick, tile = _split_tile(Case(4096, 4096, k), max_range, monkeypatch)
    assert pick.variant in ("tma", "tma_ws") and pick.split_k == 1
    assert tile.variant == "tma_split" and tile.split_k == split
    assert -(-k // tile.split_k) <= max_range
    assert (tile.block_m, tile.block_n, tile.block_k, tile.num_stages, tile.num_warps) == \
        (pick.block_m, pick.block_n, pick.block_k, pick.num_stages, pick.num_warps)


def test_no_split_tile_where_the_picks_ranges_are_short_enough_already(monkeypatch):
    assert _split_tile(Case(4096, 4096, 11008), 16384, monkeypatch)[1] is None


def test_a_max_range_below_one_element_is_refused():
    got = subprocess.run([sys.executable, str(SCRIPT), "64x64x64", "--csv", "/dev/null",
                          "--max-range", "0"], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert got.returncode == 2 and "--max-range must be >= 1" in got.stderr


def test_the_dispatcher_splits_a_long_k_fp8_pick_itself_so_none_is_left_to_split(
        monkeypatch):
    """kernels.dispatch.fast_ranges in the H200's plan: 4096 x 4096 x 32768's table tile
    runs split in two (ranges of 16,384), so `--max-range 16384` has nothing to add."""
    from call_audit import as_chip, target

    from kernels import dispatch
    from kernels.modes import mode_named

    split_tile = runpy.run_path(str(SCRIPT))["split_tile"]
    a, b = layout(Case(4096, 4096, 32768), MODES["fp8"])
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    dispatch.reset()
    with as_chip(target(), None):
        pick = dispatch.plan(mode_named("fp8"), a, b, cached=True).pick
        assert (pick.variant, pick.split_k) == ("tma_split", 2)
        assert split_tile(SimpleNamespace(a=a, b=b), "fp8", 16384) is None
