"""What a baseline records of how and where its cases were measured: the runs behind it
(`run_id`), the commits and trees its cases were measured at (`commits`,
`recorded_commit(s)`: `check --ab-ref baseline`, bisect's GOOD `baseline`), and how they
were timed (`measured`, `unlike_kept`: method and --block). Read by the writes in
gemmgate/baselines.py and by the commands that time against a baseline."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from gemmgate.baseline_schema import Baseline
from gemmgate.chips import GENERIC_GPU, other_model
from gemmgate.results import RunRecord


def run_id(rec: RunRecord) -> str:
    """A run's identity: the random id its environment record was given when it ran
    (`run.environment_of`), which a copy of it (a calibration's --keep-runs file) keeps;
    for a run from before those ids, a hash of its cases' timing samples. Stored in a
    baseline's provenance (`run_ids`), so `gemmgate baseline merge` pools a run once."""
    if isinstance(rec.environment.get("run_id"), str):
        return rec.environment["run_id"]
    held = [[c.key, {n: list(p.samples_ms) for n, p in sorted(c.providers.items())}]
            for c in rec.cases]
    return hashlib.sha256(json.dumps(held).encode()).hexdigest()[:16]


def calibration_mark(base: Baseline) -> str:
    """What tells one calibration from another: its whole provenance, as text (a copy of a
    baseline file has the same; `baseline merge` and `report` refuse an input given twice
    so, which would pool its runs twice or draw a history step that never was)."""
    return json.dumps(base.provenance, sort_keys=True, default=str)


def run_ids(base: Baseline) -> list[str]:
    """The identities of the runs a baseline was built from (none before they were kept)."""
    ids = base.provenance.get("run_ids")
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def any_dirty(flags: Sequence) -> bool | None:
    """A pool's `dirty`: True where any part's tree differed from its commit, None where
    one part did not record it, else False."""
    return True if True in flags else None if None in flags else False


MEASURED_BY = (("timing", "timing method"), ("block", "--block"))   # what a baseline
# records of how its cases were timed, one value for all of them (`check` times them so)
_UNRECORDED = {"block": 1}   # files from before --block were timed a call a round; no
# default for the method (older files record none, and which one they used is unknown)


def measured(rec: dict, key: str):
    """How a baseline's provenance or a run's environment says it was timed, for `key`
    (one of MEASURED_BY's): None where unknown. A file without `block` was timed at 1,
    as a run without it reads (results.RunRecord), so it is unlike a file at 10."""
    got = rec.get(key)
    return _UNRECORDED.get(key) if got is None else got


def unlike_kept(old: dict, new: dict, kept: int) -> str | None:
    """Why the `kept` cases of a file whose provenance is `old` cannot stay beside cases
    measured as `new` says (another timing method or --block, where both record one), or
    None: the file records one way of timing, which `check` then uses for every case."""
    for key, what in MEASURED_BY:
        was, now = measured(old, key), measured(new, key)
        if kept and was is not None and now is not None and was != now:
            return (f"its {kept} other case(s) were measured with {what} {was}, these "
                    f"with {now}: a baseline holds one way of timing; measure all "
                    "of its cases (its --shapes and --modes) or write another file")
    return None


KEPT_SOFTWARE = ("triton", "torch")   # what compiles and runs the kernels: one per file


def unlike_software(old: dict, new: dict, kept: int) -> str | None:
    """Why the `kept` cases of a file whose provenance is `old` cannot stay beside cases
    measured on the software `new` records (another Triton or torch, where both record
    one), or None. The written provenance names one Triton and torch for every case, and
    `check` says where a run's differ from it (gate_text.software_note): kept, a 3.6
    calibration's cases were relabelled 3.9 by an update of others, and a check of them
    on 3.9 no longer said that their stored ratios were another compiler's (a review).
    `baseline merge` refuses inputs of two software stacks for the same reason."""
    for key in KEPT_SOFTWARE:
        was, now = old.get(key), new.get(key)
        if kept and was and now and str(was) != str(now):
            return (f"its {kept} other case(s) were measured on {key} {was}, these on "
                    f"{now}: a baseline records one {key}, which `check` compares with; "
                    "measure all of its cases (its --shapes and --modes) or write another "
                    "file")
    return None


def unlike_model(chip: str, old: dict, new: dict, kept: int) -> str | None:
    """Why the `kept` cases of a file whose provenance is `old` cannot stay beside cases
    measured on the GPU `new` names (another model, `chips.other_model`: for generic-gpu
    every GPU no profile names; for a named chip, a device that is not its own part, as
    an H200 run with GEMMGATE_CHIP=nvidia-h100), or None. `baseline merge` refuses such
    inputs (cli_merge's `_one_model`); an update kept a V100's cases beside an Ada
    card's, the file naming the Ada card alone (a review)."""
    was, now = old.get("device_name"), new.get("device_name")
    if kept and other_model(chip, was, now):
        what = "of the generic profile" if chip == GENERIC_GPU.id else f"of {chip}"
        return (f"its {kept} other case(s) were measured on {was}, these on {now}: a "
                f"baseline {what} is one GPU model's; measure all of its "
                "cases (its --shapes and --modes) or write another file")
    return None


_SHA = re.compile(r"[0-9a-f]{7,40}")


def commits(base: Baseline) -> list[str | None]:
    """The commits a baseline's cases were measured at: its merged calibrations' (or its
    one commit), and the commit of the cases an update kept (`kept_from`, which files
    from before merges carried commits record as a commit or a date: a date is None, a
    commit not known). Each once, in order."""
    prov = base.provenance
    shas = list(prov.get("merged_from") or [prov.get("commit")])
    kept = prov.get("kept_from")
    if kept is not None:
        shas.append(kept if _SHA.fullmatch(kept) else None)
    return list(dict.fromkeys(shas))


def recorded_commit(base: Baseline, what: str) -> str:
    """The commit a baseline was recorded at, for timing against it (`check --ab-ref
    baseline`): refused where it records none, holds cases of several commits (merged
    calibrations, or cases an update kept: `commits`), or records that its tree's
    gemmgate/ or kernels/ differed from its commit (`dirty`): that code then is not what
    the baseline measured."""
    shas = recorded_commits(base, what)
    if len(shas) > 1:
        raise ValueError(f"{what}: the baseline holds cases measured at {len(shas)} commits "
                         "(provenance merged_from, kept_from): no one commit is what it "
                         "measured; name a ref")
    return shas[0]


def recorded_commits(base: Baseline, what: str) -> list[str | None]:
    """Every commit a baseline's cases were measured at (`commits`; None: one not known),
    refused where it records no commit or a dirty tree (`recorded_commit`). Bisect's
    GOOD is their common ancestor: each was good for its cases."""
    commit = base.provenance.get("commit") or ""
    if not commit:
        raise ValueError(f"{what}: the baseline records no commit")
    if base.provenance.get("dirty") is True:
        raise ValueError(f"{what}: the baseline was recorded from a tree whose gemmgate/ or "
                         f"kernels/ differed from its commit {commit[:12]} (provenance "
                         "dirty): that commit is not what it measured; name a ref")
    return commits(base)
