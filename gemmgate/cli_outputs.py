"""Output paths, checked before any work (exit 2 otherwise): writable, not empty, not an
input nor another output of the command, not a baseline or tuning table (those are
written only by `gemmgate baseline` and `gemmgate tune`), not in the kernel's table
folder; and the inputs they are checked against (--shapes, the baseline's shape file)."""

from __future__ import annotations

import os
from pathlib import Path

from gemmgate import baseline_schema
from gemmgate.files import InputError, check_writable, head_holds, is_file, json_schema


def check_outputs(*paths: tuple[str | None, str], append: str | None = None,
                  inputs: tuple[tuple[str | None, str], ...] = ()) -> None:
    """Every output path writable, before any measuring (exit 2 otherwise); `append` is
    a file only ever appended to (a CI step summary). An empty path (an unset CI
    variable), or one that names an input (`inputs`: its path and option) or another
    output, is exit 2 too: the write would destroy it."""
    outputs = [(x, what, False) for x, what in paths] + [(append, "--summary", True)]
    for x, what in inputs:   # ("" read as "."; "cannot read baseline .: it is a directory")
        if x is not None and not str(x).strip():
            raise InputError(f"{what} is an empty path: give a file path")
    taken = {_same_file(x): what for x, what in inputs if x and is_file(x)}
    for path, what, appended in outputs:
        if path is None:
            continue
        if not str(path).strip():
            raise InputError(f"{what} is an empty path: give a file path")
        if str(path) == "-":   # not stdout: it would be a file named "-"
            raise InputError(f"{what} is '-': gemmgate writes a file, not standard "
                             "output; give a file path")
        if str(path).endswith(("/", os.sep)):   # "newdir/" became a file named newdir
            raise InputError(f"{what} {path} names a folder: give a file path")   # (a review)
        key = _same_file(path)
        if key in taken:
            raise InputError(f"{what} {path} is also {taken[key]}: writing it would "
                             "destroy that file; give another path")
        taken[key] = what
        if what != BASELINE_OUTPUT and _is_baseline(path):
            raise InputError(f"{what} {path} is a baseline file: baselines are written "
                             "only by `gemmgate baseline`; give another path")
        if what != TABLE_OUTPUT and _is_table(path):   # (a run's --json replaced
            # kernels/tuned/<chip>.json, and that device's lookups lost their table)
            raise InputError(f"{what} {path} is a tuning table: tables are written only "
                             "by `gemmgate tune`; give another path")
        in_tuned = _in_tables_folder(path)
        if in_tuned and what != TABLE_OUTPUT and str(path).endswith(".json"):
            # (a sweep's --json there made every later table read warn "not a tuning table")
            raise InputError(f"{what} {path} is in {in_tuned}, where the kernel reads every "
                             "*.json as a tuning table; give another path")
        if in_tuned and what == TABLE_OUTPUT and not str(path).endswith(".json"):
            raise InputError(f"--table {path}: the kernel reads only *.json files of "
                             f"{in_tuned}; name it <chip>.json")
        check_writable(path, what, append=appended)


def _in_tables_folder(path: str) -> str:
    """The kernel's tuning-table folder (kernels/tuned, which its lookup globs) where
    `path` lies in it, else "" (found without importing kernels: see TABLE_SCHEMA)."""
    import importlib.util

    spec = importlib.util.find_spec("kernels")
    for root in (spec.submodule_search_locations or []) if spec else []:
        tuned = Path(root, "tuned").resolve()
        if Path(path).resolve().parent == tuned:
            return str(tuned)
    return ""


BASELINE_OUTPUT = "--output (the baseline file)"   # the one output a baseline may be at
TABLE_OUTPUT = "--table"   # the one output a tuning table may be at (`gemmgate tune`)
TABLE_SCHEMA = "kernels.tuning-table"   # kernels.table_file.SCHEMA (kernels is imported
# only once make_context has set the interpreter up on the CPU)


def _is_baseline(path: str) -> bool:
    """Whether `path` is a file of schema gemmgate.baseline (a run's --json at
    baselines/cpu.json replaced the baseline, and the next check failed; a review).
    Only a regular file is read (`files.head_holds`); where its head does not say so, the
    whole file is parsed: a baseline saved with sorted keys (jq -S) has its schema past
    the head, and a run's --json replaced it (a review)."""
    return head_holds(path, f'"{baseline_schema.SCHEMA}"') or \
        json_schema(path) == baseline_schema.SCHEMA


def _is_table(path: str) -> bool:
    """Whether `path` is a kernel tuning table file (schema kernels.tuning-table)."""
    return head_holds(path, f'"{TABLE_SCHEMA}"') or json_schema(path) == TABLE_SCHEMA


def _same_file(path: str) -> str:
    """A key two spellings of one file share (links followed)."""
    return str(Path(path).resolve())


def shapes_file(shapes: str | None) -> tuple[str | None, str]:
    """`--shapes` as an input of `check_outputs`, where it names a file."""
    return (shapes if shapes and is_file(shapes) else None), "--shapes"


def baseline_shapes_file(args, provenance: dict) -> tuple[str | None, str]:
    """The shape file a command without --shapes reads as its set, named by its baseline
    (`provenance.shapes`), as an input of `check_outputs`: only a --shapes given was one,
    and `check --json` or trials' summaries over the baseline's file lost the shapes (a
    review). (None, ...) where --shapes is given or the set is no file."""
    label = provenance.get("shapes")
    return (None if args.shapes else shapes_file(label)[0],
            "the baseline's shape file (provenance.shapes)")
