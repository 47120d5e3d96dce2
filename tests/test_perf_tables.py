"""scripts/perf_tables.py: docs/PERF.md is up to date with docs/results, docs/results holds
only small text summaries, and the registry's blocks are rewritten between their markers only
(the table-making functions: tests/test_perf_formats.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "perf_tables.py"


@pytest.fixture
def pt(load_script):
    return load_script(SCRIPT)


def test_perf_md_is_up_to_date():
    out = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_results_are_small_text():
    """Summaries, not dumps: each file under 100 KB, all of them under 2 MB (sixteen
    sessions of cases, tiles and overhead tables came to ~1 MB, twenty-six to ~1.9 MB; then
    sessions 1-16 were frozen, and later sessions in batches: docs/results/README.md)."""
    files = [p for p in (ROOT / "docs" / "results").rglob("*") if p.is_file()]
    assert max(p.stat().st_size for p in files) < 100_000
    assert sum(p.stat().st_size for p in files) < 2_000_000
    archives = [p for p in files if p.name.endswith((".tgz", ".gz", ".tar", ".zip", ".xz"))]
    assert archives == []


def test_render_rewrites_only_between_markers(pt):
    pt.TABLES = {"t": lambda: "| a |\n|---|\n| 1 |"}
    text = "intro\n<!-- perf_tables:t -->\nstale\n<!-- /perf_tables:t -->\noutro\n"
    new, changed = pt.render(text)
    assert changed == ["t"]
    assert new == ("intro\n<!-- perf_tables:t -->\n\n| a |\n|---|\n| 1 |\n\n"
                   "<!-- /perf_tables:t -->\noutro\n")
    assert pt.render(new) == (new, [])
    # a frozen table is left as it is; a block no table makes is an error, not skipped
    frozen = "<!-- frozen:old -->\n| x |\n<!-- /frozen:old -->\n"
    assert pt.render(new + frozen) == (new + frozen, [])
    with pytest.raises(SystemExit, match="no table in TABLES: gone"):
        pt.render(new + "<!-- perf_tables:gone -->\n<!-- /perf_tables:gone -->\n")


def test_power_of_a_missing_or_foreign_csv_is_an_error_not_a_traceback(pt, tmp_path, capsys):
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("m,n,k\n1,2,3\n")
    assert pt.main(["--power", str(tmp_path / "missing.csv")]) == 2
    assert pt.main(["--power", str(shapes)]) == 2
    err = capsys.readouterr().err
    assert "missing.csv" in err and "not a `gemmgate trials` checks.csv" in err


def test_a_second_block_of_one_table_is_refused_not_left_stale(pt):
    """Only the first block of a name was rewritten and compared: a stale second copy
    passed --check (exit 0)."""
    pt.TABLES = {"t": lambda: "| a |"}
    block = "<!-- perf_tables:t -->\n\n| a |\n\n<!-- /perf_tables:t -->\n"
    stale = "<!-- perf_tables:t -->\n| old |\n<!-- /perf_tables:t -->\n"
    assert pt.render(block) == (block, [])
    with pytest.raises(SystemExit, match="2 <!-- perf_tables:t --> blocks"):
        pt.render(block + stale)


def test_rewriting_perf_md_replaces_it_whole(pt, tmp_path, monkeypatch, capsys):
    """PERF.md was rewritten in place (Path.write_text: truncated, then written), so a
    reader or a kill mid-write met a cut file; it is now renamed over whole: a reader that
    opened it before still reads the old text."""
    md = tmp_path / "PERF.md"
    old = "prose\n<!-- perf_tables:t -->\nstale\n<!-- /perf_tables:t -->\n"
    md.write_text(old)
    monkeypatch.setattr(pt, "PERF_MD", md)
    monkeypatch.setattr(pt, "ROOT", tmp_path)
    monkeypatch.setattr(pt, "TABLES", {"t": lambda: "| a |"})
    with md.open() as reader:
        assert pt.main([]) == 0
        assert reader.read() == old
    assert md.read_text() == "prose\n<!-- perf_tables:t -->\n\n| a |\n\n<!-- /perf_tables:t -->\n"
    assert "updated: t" in capsys.readouterr().out
