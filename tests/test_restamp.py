"""scripts/restamp.py: which stale entries it judges, how it re-stamps them, its refusals,
and a real judgement: entries stamped with the commit before session 54's B-first edit of
the TMA kernels, compiled for sm_90a at that commit and at the edit's (no GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import triton

from kernels import fma, table_file

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "restamp.py"
BEFORE_B_FIRST = "22e3444"   # the commit before kernels/matmul_tma*.py read B first (3.7+)
B_FIRST = "9f54c72"          # the edit


@pytest.fixture(scope="module")
def rs(load_script):
    return load_script(SCRIPT, "restamp")


def _entry(mode="bf16", variant="tma", kernel="old", triton_version="3.6.0", **config):
    tile = {"block_m": 64, "block_n": 64, "block_k": 32, "group_m": 8, "num_stages": 3,
            "num_warps": 4, "variant": variant, "split_k": 1, **config}
    return {"bucket": f"16bit {mode} rr tma ld8", "mode": mode, "m": 256, "n": 256, "k": 512,
            "layout": "rr", "pad": 0, "config": tile, "kernel": kernel, "triton": triton_version}


def test_plain_ptx_leaves_out_debug_info_only(rs):
    text = ("//\n// Generated\n.version 8.7\n.file 1 \"a.py\"\n\tld.shared.b32 %r1, [%r2];"
            "\n\t.loc 1 75 21\n\tfma.rn.f32 %f1, %f2, %f3, %f1; // x\n"
            ".section .debug_abbrev\n{ .b8 1 }\n")
    plain = rs.plain_ptx(text)
    assert ".version 8.7" in plain and "ld.shared.b32" in plain and "fma.rn.f32" in plain
    assert ".loc" not in plain and ".file" not in plain and "debug" not in plain
    assert "Generated" not in plain and "// x" not in plain
    assert rs.plain_ptx(text.replace("75 21", "80 3")) == plain   # a moved line is no change


def test_only_entries_stale_here_stamped_with_ref_and_this_triton_are_judged(rs):
    here, ref = {"tma": "new", "tiled": "same"}, {"tma": "old", "tiled": "same"}
    entries = [_entry(),                                          # judged
               _entry(variant="tiled", kernel="same"),            # fresh here
               _entry(kernel="older"),                            # stale before REV
               _entry(triton_version="3.9.0"),                    # another Triton's code
               _entry(triton_version="3.6.2")]                    # the same minor: judged
    todo, skipped = rs.judged(entries, here, ref, "3.6.0")
    assert todo == [0, 4]
    assert skipped[2].startswith("stale before REV")
    assert skipped[3] == "tuned on triton 3.9.0, this process runs 3.6.0"
    assert set(skipped) == {2, 3}


def test_restamped_entries_record_what_they_were_stamped_with(rs):
    entries = [_entry(), _entry(mode="fp32")]
    got = rs.restamped(entries, [1], {"tma": "new"}, "0123456789abcdef", "3.6.0",
                       "2026-12-05")
    assert got[0] == entries[0] and entries[1]["kernel"] == "old"   # inputs untouched
    assert got[1]["kernel"] == "new"
    assert got[1]["restamped"] == {"from": "old", "ref": "0123456789ab", "triton": "3.6.0",
                                   "date": "2026-12-05"}


@pytest.mark.parametrize("argv, says", [
    ([], "--ref REV is required"),
    (["--ref", "no-such-commit-xyz"], "no such commit"),
    (["--ref", "HEAD", "--table", "/nonexistent/t.json"], "unreadable"),
])
def test_bad_input_exits_2_with_a_message(rs, argv, says, capsys):
    assert rs.main(argv) == 2
    assert says in capsys.readouterr().err


def test_entries_stamped_before_the_b_first_edit_are_judged_by_their_compiled_ptx(
        rs, tmp_path, compiling_run):
    """A bf16 tile's PTX did not change; IEEE fp32's did where this Triton reads B first
    (3.7 and later), and only there. --write re-stamps the same one alone, with the
    edit's source hash."""
    from gemmgate import reference

    before = reference.resolve(BEFORE_B_FIRST, ROOT, "--ref")
    ref = rs._hashes(rs._extract(before))
    edit = rs._hashes(rs._extract(reference.resolve(B_FIRST, ROOT, "--against")))
    running = triton.__version__
    entries = [_entry(kernel=ref["tma"], triton_version=running, block_n=128, block_k=64),
               _entry(mode="fp32", kernel=ref["tma"], triton_version=running),
               _entry(mode="fp32", kernel=edit["tma"], triton_version=running)]  # fresh
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"schema": table_file.SCHEMA, "version": table_file.VERSION,
                                 "chip": "nvidia-h200", "match": ["h200"],
                                 "entries": entries}))
    moved = fma.b_first("ieee", True)
    got = compiling_run(SCRIPT, "--ref", BEFORE_B_FIRST, "--against", B_FIRST, "--table",
                        str(table), "--write")
    lines = got.stdout.splitlines()
    assert got.returncode == (1 if moved else 0), got.stderr[-2000:]
    assert lines[0] == "bf16 256x256x512-rr tma 64x128x64 s3 w4 k1: same"
    assert lines[1] == "fp32 256x256x512-rr tma 64x64x32 s3 w4 k1: " + (
        f"differs (1 launches at {before[:12]}, 1 here)" if moved else "same")
    assert lines[2].startswith(f"restamp: {2 - moved} of 2 stale entries")
    written = json.loads(table.read_text())["entries"]
    assert written[0]["kernel"] == edit["tma"] and written[0]["restamped"]["from"] == ref["tma"]
    assert written[0]["restamped"]["ref"] == before[:12]
    assert written[1]["kernel"] == (ref["tma"] if moved else edit["tma"])
    assert ("restamped" in written[1]) is not moved
    assert written[2] == entries[2]
