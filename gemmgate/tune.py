"""`gemmgate tune`: search tiles offline and write the kernel's tuning table.

The table (kernels/tuned/<chip>.json, read by kernels/table.py at call time) is the
tuning knowledge base: per bucket (family, mode, operand layouts, tma or pointer path)
and shape, the fastest tile found, with what it was found on (chip, driver, triton,
torch, the variant's source hash). Nothing tunes on the measured path: `run`, `check`
and `baseline` measure the kernel as a library call runs it, table and all.

Tuning is a run: every case goes through the one run path (Runner.run_case) with a
searching tuner (at most the kernel's 30 candidates per key, within `budget_s` per key),
so each entry comes with the tuned kernel's accuracy and its time against the vendor.
Only keys whose Triton result passed accuracy are written. Entries merge into the file
as it is now, under a lock, atomically (replacing the same bucket and shape).
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from filelock import FileLock

from gemmgate.context import RunContext
from gemmgate.execute import run_cases
from gemmgate.files import write_json_atomic
from gemmgate.precision import PrecisionMode
from gemmgate.results import CaseResult
from gemmgate.shapes import SETS, Case
from gemmgate.tuning import config_name


def table_path(chip_id: str, directory: str | Path | None = None) -> Path:
    from kernels import table_file

    return Path(directory or table_file.DEFAULT_DIR) / f"{chip_id}.json"


def tune_context(ctx: RunContext, budget_s: float) -> RunContext:
    """The run's context with a tuner that searches every key afresh."""
    return replace(ctx, tuning=replace(ctx.tuning, search=True, retune=True, pins_from=None,
                                       budget_s=budget_s))


def tune(ctx: RunContext, budget_s: float,
         items: Sequence[tuple[PrecisionMode, Case]] | None = None,
         on_case=None) -> list[CaseResult]:
    """Run `items` (default: every case of `ctx`) with a searching tuner, through
    execute.run_cases like any run; the CaseResults carry the choice."""
    return run_cases(tune_context(ctx, budget_s), items, on_case)


def entry_of(r: CaseResult, env: dict) -> dict | None:
    """A table entry for a tuned case, or None (not tuned, or Triton failed accuracy)."""
    from kernels import table_file

    t = r.telemetry.get("tuning")
    tri = r.providers.get("triton")
    if not t or " | " not in t.get("key", "") or tri is None or tri.accuracy != "pass":
        return None
    by_tile = t.get("timings_ms", {})
    timings = [ms for ms in by_tile.values() if ms is not None]
    own = by_tile.get(config_name(t["config"]))   # a kept incumbent's
    vendor = r.providers.get("vendor")
    return {
        "bucket": t["key"].split(" | ")[0], "mode": r.mode, "m": r.case.m, "n": r.case.n,
        "k": r.case.k, "layout": r.case.layout, "pad": r.case.pad, "config": t["config"],
        "kernel": table_file.variant_hash(t["config"].get("variant", "tiled")),
        "tuned_ms": own if own is not None else min(timings, default=None),
        "tried": len(by_tile),   # attempted, a tile that failed to compile too: fewer than
        # offered is a search the budget cut (`cli_tune.budget_cut_line`)
        "offered": t.get("offered", 0),
        "triton_ms": tri.median_ms, "vendor_ms": vendor.median_ms if vendor else None,
        "driver": env.get("driver"), "triton": env.get("triton"), "torch": env.get("torch"),
        "date": env.get("date") or _today(),
    }


def _today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def _where(e: dict) -> tuple:
    from kernels.table_file import where

    return where(e)


def merged(old: Sequence[dict], new: Sequence[dict]) -> list[dict]:
    """Old entries not re-tuned, then the new ones; sorted for reviewable diffs."""
    fresh = {_where(e): e for e in new}
    keep = [e for e in old if _where(e) not in fresh]
    return sorted(keep + list(fresh.values()), key=_where)


def write_table(path: Path, chip_id: str, match: Sequence[str], new: Sequence[dict],
                drop: Sequence[dict] = ()) -> dict:
    """Merge `new` into the table file as it is now, less the entries `drop` names (their
    bucket and shape), under a lock; returns what was written. An unreadable old file is
    an error (nothing is overwritten blindly)."""
    from kernels import dispatch, table_file

    path.parent.mkdir(parents=True, exist_ok=True)
    gone = {_where(d) for d in drop}
    # each entry names its chip, as the issue asks (on a device reading a lent table, its
    # own and the lent entries are one list in memory; a review): the table's
    new = [{"chip": chip_id, **{k: v for k, v in e.items() if k != "chip"}} for e in new]
    with FileLock(str(path) + ".lock", timeout=600):
        old = table_for(path, chip_id)
        # the file's own `match` names kept (a device added by hand lost its table at the
        # next tune, unsaid: a review), the chip's after them
        data = {"schema": table_file.SCHEMA, "version": table_file.VERSION, "chip": chip_id,
                "match": list(dict.fromkeys([*old.get("match", ()), *match])),
                **({"borrowed_by": old["borrowed_by"]}
                                         if "borrowed_by" in old else {}),
                "entries": [e for e in merged(old["entries"], new) if _where(e) not in gone]}
        # what is written must load, checked before it replaces the table (as JSON gives
        # it back: tuples as lists)
        table_file.check_table(json.loads(json.dumps(data)), f"{path}, as written,")
        write_json_atomic(path, data)
    dispatch.reset()   # this process's cached plans and tables
    return data


@dataclass
class KeyWriter:
    """Called with each tuned case as its search ends: its entry goes into the table file
    then (merged under the lock, atomically), so a tune stopped part way (a CI timeout,
    Ctrl-C) keeps every key it finished. `entries` are those written, in order."""

    path: Path
    chip_id: str
    match: tuple[str, ...]
    env: dict
    entries: list[dict] = field(default_factory=list)

    def __call__(self, r: CaseResult) -> None:
        e = entry_of(r, self.env)
        if e is not None:
            write_table(self.path, self.chip_id, self.match, [e])
            self.entries.append(e)


def table_for(path: Path, chip_id: str) -> dict:
    """`table_data`, refused (TableError) where the file is another chip's: writing this
    chip's entries would rewrite its `match` to ours. `gemmgate tune` asks before it
    measures anything, and each write again under the lock."""
    from kernels import table_file

    old = table_data(path)
    if old.get("chip", chip_id) != chip_id:
        raise table_file.TableError(f"tuning table {path} is {old['chip']}'s, not "
                                    f"{chip_id}'s: give this chip's --table")
    return old


def in_kernel_folder(path: Path) -> bool:
    """Whether a table file sits where the kernel reads tables (kernels/tuned): a `--table`
    elsewhere is not what a call runs. A symbolic link is its target's: a write goes
    through it (files.write_text_atomic), and a link to a table there tuned holdout shapes
    into it (a review)."""
    from kernels import table_file

    return path.resolve().parent == table_file.DEFAULT_DIR.resolve()


def holdout_shapes(cases) -> list[str]:
    """The cases whose shape (M, N, K) a holdout set holds: a table in the kernel's folder
    may not tune them (they measure how it carries to shapes it was not tuned on; CI's
    `test_no_committed_entry_is_a_holdout_shape` caught it only after a GPU tune)."""
    held = {(c.m, c.n, c.k) for name, cs in SETS.items() if name.startswith("holdout")
            for c in cs}
    return list(dict.fromkeys(c.id for c in cases if (c.m, c.n, c.k) in held))


def claimed_elsewhere(path: Path, device_name: str) -> str:
    """The table of the kernel's folder whose `match` already names this device, where
    `path` is another file there; '' otherwise. A tune into a second one (`--table
    kernels/tuned/<chip>-candidate.json`) left the device two tables of its own, and every
    kernel call on it raised TableError, the tune's own later keys too (a review)."""
    if not in_kernel_folder(path):
        return ""
    from kernels import table_file

    got = table_file.table_for_device(device_name, table_file.DEFAULT_DIR)   # (TableError:
    # two claim it already)
    own = got.path if got.path and got.path != got.lent else ""
    return own if own and Path(own).resolve() != path.resolve() else ""


def lent_table(device_name: str, path: Path) -> tuple[str, list[dict]]:
    """(file name, entries) of the table lent to this device (`borrowed_by`), where `path`,
    the device's own table or the file that will be, sits in the kernel's table folder and
    is what the device reads there: the fresh lent entries the device reads, those
    `table_file.table_for_device` layers after its own (the buckets and shapes `path`
    holds no fresh entry for). ('', []) otherwise: a `--table` elsewhere is not what the
    kernel reads, and its folder may hold other JSON."""
    from kernels import table_file

    if not in_kernel_folder(path):
        return "", []
    table = table_file.table_for_device(device_name, path.parent)
    if not table.lent:
        return "", []
    if table.path != table.lent and Path(table.path).resolve() != path.resolve():
        return "", []
    # its own entries lead (none where it has no table yet): counted in the same read (a
    # second read of `path`, written between by another tune, cut the lent list wrongly)
    return Path(table.lent).name, [e for e in table.entries[table.own:]
                                   if not table_file.is_stale(e)]


def table_data(path: Path) -> dict:
    """The table file's contents; an empty table where there is no file yet."""
    from kernels import table_file

    return table_file.read_table(path) if path.exists() else {"entries": []}


def stale_items(path: Path) -> list[tuple[str, Case]]:
    """(mode, case) of the table's entries tuned on another version of their kernel, each
    once (a case stale in two buckets is measured once: its key is where it tunes now)."""
    return list(dict.fromkeys(_item(e) for e in stale_entries(path)))


def _item(e: dict) -> tuple[str, Case]:
    from kernels.table_file import entry_mode

    return entry_mode(e), Case(int(e["m"]), int(e["n"]), int(e["k"]), e.get("layout", "rr"),
                           int(e.get("pad", 0)))


def incumbents(path: Path) -> tuple[tuple[str, tuple], ...]:
    """For TuningSetup.first: each stale entry's tuning-key prefix (its bucket and shape,
    as kernels.dispatch writes keys) and its tile, so a retune times the old tile on the
    new source before any other candidate and keeps it unless one measures faster."""
    return incumbents_of(stale_entries(path))


def own_incumbents(path: Path) -> tuple[tuple[str, tuple], ...]:
    """`incumbents_of` every entry of the table at `path`, stale or current (none where
    there is no table yet)."""
    from kernels import table_file

    if not path.exists():
        return ()
    return incumbents_of(table_file.read_table(path)["entries"])


def incumbents_of(entries: Sequence[dict]) -> tuple[tuple[str, tuple], ...]:
    """`incumbents` of any entries (a lent table's: `lent_table`)."""
    return tuple((f"{e['bucket']} | m{e['m']} n{e['n']} k{e['k']} ",
                  tuple(sorted(e["config"].items()))) for e in entries)


def orphans(path: Path, tuned: Sequence[dict]) -> list[dict]:
    """Stale entries whose case was just retuned (`tuned`) under another key: the
    dispatcher now files that case in another bucket, so no retune can refresh them
    (`gemmgate tune --stale` drops them)."""
    done = {_item(e) for e in tuned}
    return [e for e in stale_entries(path) if _item(e) in done]


def stale_entries(path: Path) -> list[dict]:
    from kernels import table_file

    if not path.exists():
        return []
    return [e for e in table_file.read_table(path)["entries"] if table_file.is_stale(e)]
