"""gemmgate/gate_levels.py: the level a stored figure is judged at and its tolerance,
asked by the gate's verdicts and a baseline write's wide-noise warning alike."""

import io
import itertools

import pytest
from rich.console import Console

from gemmgate.baseline_noise import level_noise
from gemmgate.baseline_schema import from_json
from gemmgate.cli_merge import WIDE, warn_wide
from gemmgate.compare import DEFAULT_FLOOR, NOISE_FACTOR, ONE_RUN_FACTOR, scaled
from gemmgate.gate_levels import MACHINE, PROCESS, stored_tolerance
from tests.gemmgate.gate_cases import HOST, A, base_case, baseline, one_verdict, result


def _case(**kw):
    data = baseline(**{A.id: base_case(A, **kw)})
    return data, next(iter(from_json(data).cases.values()))


def test_the_process_level_takes_its_own_spread_and_the_runs_behind_it():
    _, c = _case(noise_ratio=0.02)
    t = stored_tolerance(c, PROCESS, HOST, DEFAULT_FLOOR)
    assert (t.noise, t.level, t.runs, t.factor) == (0.02, PROCESS, 5, NOISE_FACTOR)
    assert t.tolerance == pytest.approx(scaled(0.02, NOISE_FACTOR))


def test_without_its_own_spread_the_process_level_falls_to_the_machines():
    _, c = _case(noise_ratio=None, machines=("h1", "h2", "h3"), machine=0.03)
    t = stored_tolerance(c, PROCESS, "h1", DEFAULT_FLOOR)
    # a spread its runs do not give: kept from a calibration of 5 (`figure_runs`)
    assert (t.noise, t.level, t.runs) == (0.03, MACHINE, 5)
    assert t.factor == ONE_RUN_FACTOR[5]   # h1's figure is its one run


def test_a_tflops_figure_has_twice_the_floor():
    _, c = _case()   # no spread stored: the floor alone
    assert stored_tolerance(c, PROCESS, HOST, 0.02, "tflops").tolerance == 0.04
    assert stored_tolerance(c, PROCESS, HOST, 0.02).tolerance == 0.02


def _named(data: dict) -> set[str]:
    buf = io.StringIO()
    warn_wide(Console(file=buf, width=400), from_json(data))
    return {level for level, words in (("process", "passes a slowdown of over 50%: "),
                                       ("machine", "at machine level"))
            if words in buf.getvalue()}


@pytest.mark.parametrize("spread,hosts,one_run,own", itertools.product(
    (0.01, 0.06, 0.13, 0.3), (("h1",) * 5, ("h1",) * 5 + ("h2",) * 5,
                              ("h1", "h2", "h3")), (False, True), (True, False)))
def test_the_wide_warning_names_what_the_gate_passes_past_half(spread, hosts, one_run, own):
    """The warning and the verdict read one function: over a grid of spreads, machines,
    one-run figures and process figures stored or not (a merge of one run per machine),
    a level is named exactly where `check` (on a calibration machine; on another GPU)
    gives the case's ratio a tolerance past WIDE."""
    runs = [0.9 * (1 + spread * (i % 3 - 1) * (h != "h1")) for i, h in enumerate(hosts)]
    bc = base_case(A, noise_ratio=spread if own else None, machines=hosts)
    bc["noise"].update(ratio_runs=runs)
    if len(set(hosts)) > 1:
        bc["noise"].update(machine=level_noise(runs, list(hosts))[1])
    if one_run:   # after `baseline update`: one run listed, the spread kept from 5
        many = len(set(hosts)) > 1
        behind = ({"ratio": 5} if own else {}) | ({"machine": len(set(hosts))} if many else {})
        bc["noise"].update(ratio_runs=[0.9], run_machines=["h1"], runs=1, behind=behind)
    data = baseline(**{A.id: bc})
    want = set()
    for host, level in [(h, "process") for h in sorted(set(bc["noise"]["run_machines"]))] \
            + [("h9", "machine")]:
        v = one_verdict([result(A)], data, env={"chip": "cpu", "host": host})[1]
        if v.level == level and (v.ratio or v.tflops).tolerance > WIDE:
            want.add(level)
    assert _named(data) == want
