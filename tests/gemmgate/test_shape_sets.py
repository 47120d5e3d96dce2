"""gemmgate/shape_sets.py: the named shape sets."""

import pytest

from gemmgate.case import LAYOUTS, Case
from gemmgate.shape_sets import SETS
from gemmgate.shapes import SETS as REEXPORTED


def test_shapes_reexports_the_sets():
    assert REEXPORTED is SETS


def test_set_names():
    assert set(SETS) == {"smoke", "tail", "pr", "nightly", "llm", "tune", "holdout", "holdout2",
                         "holdout3", "holdout4", "holdout5", "holdout6"}
    assert all(SETS[name] for name in SETS)


@pytest.mark.parametrize("name", sorted(SETS))
def test_ids_unique_within_each_set(name):
    ids = [c.id for c in SETS[name]]
    assert len(ids) == len(set(ids))
    assert all(isinstance(c, Case) for c in SETS[name])


def test_tuning_and_holdout_points_are_off_the_measured_sets():
    def points(name):
        return {(c.m, c.n, c.k) for c in SETS[name]}

    measured = points("pr") | points("nightly") | points("llm")
    held = set().union(*(points(name) for name in SETS if name.startswith("holdout")))
    assert len([name for name in SETS if name.startswith("holdout")]) == 6
    assert not points("tune") & (measured | held)
    assert not held & measured


def test_pr_set_is_small():
    assert 0 < len(SETS["pr"]) <= 30


def test_nightly_includes_the_27_case_grid():
    grid = {(m, n, k) for m in (256, 1024, 4096) for n in (256, 1024, 4096)
            for k in (128, 512, 2048)}
    assert len(grid) == 27
    nightly = {(c.m, c.n, c.k) for c in SETS["nightly"] if c.layout == "rr" and c.pad == 0}
    assert grid <= nightly


def test_tail_covers_the_corners():
    tail = SETS["tail"]
    assert {c.layout for c in tail} == set(LAYOUTS)
    assert any(c.pad > 0 for c in tail)
    assert any(c.k % 32 for c in tail)
    for dim in ("m", "n", "k"):
        assert any(getattr(c, dim) == 0 for c in tail), dim


def test_smoke_is_interpreter_sized():
    assert all(max(c.m, c.n, c.k) <= 128 for c in SETS["smoke"])


