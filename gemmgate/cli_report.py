"""`gemmgate report [RUN.json ...] [--baseline FILE ...] -o DIR`: an offline HTML page
with PNG figures (gemmgate/report_page.py, gemmgate/plots.py).

Checked before any drawing, exit 2 otherwise: at least one input, DIR writable, every run
and baseline file readable and valid (the message names the file). matplotlib is
imported only when this command runs.
"""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from gemmgate.files import check_writable


def report_command(args, console, err) -> int:
    runs, bases = list(args.runs or []), list(args.baseline or [])
    if not runs and not bases:
        raise ValueError("nothing to report: give run files (gemmgate run --json) and/or "
                         "--baseline FILE")
    out = Path(args.output)
    given: dict[Path, str] = {}
    for f in runs + bases:
        p = Path(f).resolve()
        if p in given:   # twice, it would be drawn twice (its history's own step)
            raise ValueError(f"{f} is given twice (as {given[p]}): give each file once")
        given[p] = f
        if p.parent == out.resolve() and (p.name == "index.html" or p.suffix == ".png"):
            raise ValueError(f"{f} is in the report folder {out}, where the report writes "
                             "index.html and its figures: it would be written over; move "
                             "it or give another -o")
    if (out / "index.html").is_dir():   # (check_writable's advice, "give a file path,
        # e.g. DIR/index.html/out.json", is for an output file, not a folder: a review)
        raise ValueError(f"cannot write -o (the report folder) {out}: its index.html is a "
                         "directory, where the report writes its page; move it or give "
                         "another -o")
    check_writable(out / "index.html", "-o (the report folder)")
    from gemmgate import report_page, report_sources  # matplotlib: only here

    sources = report_sources.load_sources(runs, bases)
    if not any(s.points for s in sources):
        raise ValueError("nothing to report: the files given hold no cases")
    images = report_page.write_report(sources, out)
    console.print(f"wrote {escape(str(out / 'index.html'))} ({len(images)} figures from "
                  f"{len(runs)} run(s) and {len(bases)} baseline(s))", highlight=False)
    return 0
