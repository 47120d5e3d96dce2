"""Markdown table pieces shared by the step summaries, the PR comment (gemmgate/gate.py)
and the run tables (gemmgate/report.py)."""

from __future__ import annotations

from collections.abc import Iterable

_MD_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "*": "\\*", "_": "\\_", "`": "\\`",
                             "<": "&lt;", ">": "&gt;", "&": "&amp;"})


def md_cell(text: object) -> str:
    """A Markdown table cell: one line, its pipes escaped (a compile error's message spans
    lines and may hold `|`; a provider may be named `module:function`), and what GitHub
    would read as emphasis, code or HTML (a provider `mod:_mm_` came out in italics, and a
    message holding `<class 'X'>` was dropped as a tag: a review), and a backslash (one
    before `_` or a backtick escaped the escape: "\\_x\\_" came out in italics, a review)."""
    return " ".join(str(text).split()).translate(_MD_ESCAPES)


def md_row(cells: Iterable[object]) -> str:
    """A Markdown table row of escaped cells."""
    return "| " + " | ".join(map(md_cell, cells)) + " |"
