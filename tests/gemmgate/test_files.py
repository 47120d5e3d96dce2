"""gemmgate/files.py: atomic JSON writes, user-file reading, output-path checks."""

import json
import math
import os
import re
import stat

import pytest

from gemmgate.files import (
    InputError,
    check_writable,
    read_text,
    write_json_atomic,
    write_text_atomic,
)


def test_writes_valid_json(tmp_path):
    p = tmp_path / "b.json"
    data = {"chip": "cpu", "cases": [{"id": "m64-n64-k64", "ms": 1.25}], "ok": True}
    write_json_atomic(p, data)
    text = p.read_text()
    assert text.endswith("\n")
    assert json.loads(text) == data


def test_creates_parent_dirs_and_accepts_str(tmp_path):
    p = tmp_path / "a" / "b" / "c.json"
    write_json_atomic(str(p), [1, 2])
    assert json.loads(p.read_text()) == [1, 2]


def test_replaces_existing_and_leaves_no_temp_files(tmp_path):
    p = tmp_path / "b.json"
    p.write_text("old content that is longer than the new one " * 10)
    write_json_atomic(p, {"v": 2})
    assert json.loads(p.read_text()) == {"v": 2}
    write_json_atomic(p, {"v": 3})
    assert json.loads(p.read_text()) == {"v": 3}
    assert [f.name for f in tmp_path.iterdir()] == ["b.json"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_refuses_non_finite_and_keeps_original(tmp_path, bad):
    p = tmp_path / "b.json"
    write_json_atomic(p, {"v": 1})
    original = p.read_text()
    with pytest.raises(ValueError):
        write_json_atomic(p, {"v": [1.0, bad]})
    assert p.read_text() == original
    assert [f.name for f in tmp_path.iterdir()] == ["b.json"]


def test_unserialisable_leaves_no_file(tmp_path):
    p = tmp_path / "new.json"
    with pytest.raises(TypeError):
        write_json_atomic(p, {"x": object()})
    assert list(tmp_path.iterdir()) == []


def test_failed_text_write_removes_temp_and_keeps_original(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("keep")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(p, "\ud800")  # a lone surrogate cannot be encoded
    assert p.read_text() == "keep"
    assert [f.name for f in tmp_path.iterdir()] == ["t.txt"]


# --- read_text ----------------------------------------------------------------------------

def test_read_text_utf8_drops_bom_and_normalises_newlines(tmp_path):
    p = tmp_path / "s.csv"
    p.write_bytes("\ufeffm,n,k\r\n1,2,3\r4,5,6\n".encode())
    assert read_text(p, "shape file") == "m,n,k\n1,2,3\n4,5,6\n"


@pytest.mark.parametrize(("data", "match"), [
    (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", r"is not UTF-8 text \(NUL byte at offset 8"),
    (b"m,n,k\n1,2,\xff\n", r"is not UTF-8 text \(byte 0xff at offset 10\)"),
    ("m,n,k\n".encode("utf-16"), r"is not UTF-8 text \(UTF-16 byte-order mark"),
])
def test_read_text_refuses_binary_and_non_utf8(tmp_path, data, match):
    p = tmp_path / "s.csv"
    p.write_bytes(data)
    with pytest.raises(InputError, match=match) as e:
        read_text(p, "shape file")
    assert f"shape file {p} " in str(e.value)
    assert "give a CSV/YAML/JSON file" in str(e.value)
    assert isinstance(e.value, ValueError)  # the CLI maps ValueError to exit 2


def test_read_text_missing_and_directory(tmp_path):
    with pytest.raises(InputError, match="cannot read baseline .*no such file; check the path"):
        read_text(tmp_path / "nope.json", "baseline")
    msg = f"cannot read shape file {tmp_path}: it is a directory"
    with pytest.raises(InputError, match=re.escape(msg)):
        read_text(tmp_path, "shape file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_read_text_unreadable(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("m,n,k\n")
    p.chmod(0)
    msg = f"cannot read shape file {p}: permission denied"
    with pytest.raises(InputError, match=re.escape(msg)):
        read_text(p, "shape file")


# --- check_writable -----------------------------------------------------------------------

def test_check_writable_new_path_ok_and_leaves_nothing(tmp_path):
    check_writable(tmp_path / "out.json", "--json")
    assert list(tmp_path.iterdir()) == []


def test_check_writable_takes_a_missing_parent_and_creates_nothing(tmp_path):
    """The writers create the folders; a usage error found after the check leaves none."""
    p = tmp_path / "a" / "b" / "out.json"
    check_writable(str(p), "--json")
    assert list(tmp_path.iterdir()) == []
    write_json_atomic(p, {"x": 1})
    assert json.loads(p.read_text()) == {"x": 1}


@pytest.mark.parametrize("append", [False, True])
def test_check_writable_existing_file_ok_and_untouched(tmp_path, append):
    p = tmp_path / "summary.md"
    p.write_text("## earlier step\n")
    check_writable(p, "$GITHUB_STEP_SUMMARY", append=append)
    assert p.read_text() == "## earlier step\n"
    assert [f.name for f in tmp_path.iterdir()] == ["summary.md"]


def test_check_writable_directory(tmp_path):
    msg = f"cannot write --json {tmp_path}: it is a directory; give a file path"
    with pytest.raises(InputError, match=re.escape(msg)):
        check_writable(tmp_path, "--json")


@pytest.mark.parametrize("under", ["", "deeper/"])
def test_check_writable_parent_is_a_file(tmp_path, under):
    f = tmp_path / "results.json"
    f.write_text("{}")
    p = tmp_path / "results.json" / f"{under}out.json"
    with pytest.raises(InputError, match="is a file, not a directory") as e:
        check_writable(p, "--json")
    assert f"--json {p}" in str(e.value) and f"{f} is a file" in str(e.value)


def test_check_writable_special_file_would_be_replaced():
    with pytest.raises(InputError, match="cannot write --json /dev/null: it is not a regular"):
        check_writable("/dev/null", "--json")
    check_writable("/dev/null", "--summary", append=True)  # appending to it is fine


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
@pytest.mark.parametrize("path", ["/proc/gemmgate-out.json", "/proc/gemmgate-dir/out.json"])
def test_check_writable_where_even_root_cannot_create(path):
    # root passes os.access() there; only really creating a file shows it fails
    with pytest.raises(InputError, match=re.escape(f"cannot write --json {path}: cannot create")):
        check_writable(path, "--json")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes whatever the mode bits")
def test_check_writable_read_only_directory_and_file(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    (d / "old.json").write_text("{}")
    (d / "old.json").chmod(0o444)
    d.chmod(0o555)
    try:
        with pytest.raises(InputError, match=re.escape(f"directory {d} is not writable")):
            check_writable(d / "new.json", "--json")
        with pytest.raises(InputError, match="cannot open it for writing: Permission denied"):
            check_writable(d / "old.json", "--summary", append=True)
    finally:
        d.chmod(0o755)


def test_a_symbolic_link_is_written_through_to_its_target(tmp_path):
    target, link = tmp_path / "real.json", tmp_path / "link.json"
    target.write_text("old")
    link.symlink_to(target)
    write_json_atomic(link, {"a": 1})
    assert link.is_symlink() and json.loads(target.read_text()) == {"a": 1}


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_a_rewrite_keeps_the_files_mode(tmp_path, mode):
    """The temp file renamed over took 0666 less the umask: a private (0600) --json or
    baseline became every user's to read at its next write (a review)."""
    path = tmp_path / "private.json"
    path.write_text("{}")
    path.chmod(mode)
    write_json_atomic(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert stat.S_IMODE(path.stat().st_mode) == mode
    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "new.json", {})   # a new file: the umask's
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_file_in_a_folder_one_may_not_enter_is_said_so(tmp_path, monkeypatch):
    """`is_dir` raises PermissionError there (root reads anything, so it is stood in
    for): an InputError that says so, not a traceback (a review)."""
    import pathlib

    def refuse(self):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(pathlib.Path, "is_dir", refuse)
    with pytest.raises(InputError, match="permission denied"):
        read_text(tmp_path / "locked" / "shapes.csv", "shape file")


@pytest.mark.parametrize("code, named", [("ENAMETOOLONG", False), ("EACCES", True)])
def test_only_a_name_too_long_is_no_file(monkeypatch, code, named):
    """A folder the user may not enter is still asked for as a file (reading it says
    permission denied), not taken for an unknown shape set name (a review)."""
    import errno
    import pathlib

    from gemmgate import files

    def refuse(self):
        raise OSError(getattr(errno, code), "refused")
    monkeypatch.setattr(pathlib.Path, "exists", refuse)
    assert files.may_exist("locked/shapes") is named


def test_a_csv_is_written_whole_with_its_columns(tmp_path):
    """`write_csv_atomic`: a header of the columns, each row under it; a key outside them
    raises (by default) before any file is there."""
    import csv as csv_module

    from gemmgate.files import write_csv_atomic

    path = tmp_path / "t.csv"
    write_csv_atomic(path, [{"a": 1, "b": "x"}, {"a": 2}], ("a", "b"))
    with open(path, newline="") as f:
        assert list(csv_module.DictReader(f)) == [{"a": "1", "b": "x"}, {"a": "2", "b": ""}]
    with pytest.raises(ValueError):
        write_csv_atomic(tmp_path / "u.csv", [{"a": 1, "c": 3}], ("a", "b"))
    assert not (tmp_path / "u.csv").exists()
    write_csv_atomic(tmp_path / "u.csv", [{"a": 1, "c": 3}], ("a", "b"), extra="ignore")
    assert (tmp_path / "u.csv").read_text().splitlines() == ["a,b", "1,"]
