"""gemmgate/files.py: atomic JSON writes."""

import json
import math

import pytest

from gemmgate.files import write_json_atomic, write_text_atomic


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
