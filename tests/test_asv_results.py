"""scripts/asv_results.py: asv results named by the Python version, so a runner's venv
path (`$RUNNER_TEMP/gemmgate-venv`) does not start a graph line of its own."""

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from asv_results import main, rename  # noqa: E402

HAS_ASV = shutil.which("git") is not None and subprocess.run(
    [sys.executable, "-c", "import asv"], capture_output=True).returncode == 0


def _result(folder: Path, python: str, commit: str = "04545a7c",
            results: dict | None = None) -> Path:
    env = "existing-py_" + python.replace("/", "_")
    path = folder / f"{commit}-{env}.json"
    results = results or {"b.track_x": [[1.0]]}
    path.write_text(json.dumps({"commit_hash": commit + "0" * 32, "env_name": env,
                                "python": python, "params": {"machine": "m", "python": python},
                                "results": results, "durations": {k: 0.1 for k in results},
                                "benchmark_version": {k: "v" for k in results}, "version": 2}))
    return path


def _read(folder: Path, name: str) -> dict:
    return json.loads((folder / name).read_text())


def test_only_this_interpreters_results_are_renamed(tmp_path):
    mine, other = _result(tmp_path, "/r1/venv/bin/python3"), _result(tmp_path, "/usr/bin/py")
    (tmp_path / "machine.json").write_text('{"machine": "m"}')
    assert rename(tmp_path, "3.12", "/r1/venv/bin/python3") == [
        tmp_path / "04545a7c-existing-py3.12.json"]
    assert not mine.exists() and other.exists()
    data = _read(tmp_path, "04545a7c-existing-py3.12.json")
    assert (data["env_name"], data["python"], data["params"]["python"]) == \
        ("existing-py3.12", "3.12", "3.12")
    assert data["results"] == {"b.track_x": [[1.0]]}
    assert json.loads((tmp_path / "machine.json").read_text()) == {"machine": "m"}
    with pytest.raises(ValueError, match="X.Y"):
        rename(tmp_path, "3", None)


def test_a_commit_run_again_is_merged_benchmark_by_benchmark(tmp_path):
    """asv merges a re-run into a file of its own env name only: after the rename it
    wrote a new file, and the rename replaced the earlier one with it (results of
    benchmarks not run again were lost)."""
    _result(tmp_path, "/v/bin/python3", results={"b.x": [[1.0]], "b.y": [[2.0]]})
    rename(tmp_path, "3.12", "/v/bin/python3")
    _result(tmp_path, "/v/bin/python3", results={"b.y": [[3.0]]})   # `--bench y` again
    rename(tmp_path, "3.12", "/v/bin/python3")
    data = _read(tmp_path, "04545a7c-existing-py3.12.json")
    assert data["results"] == {"b.x": [[1.0]], "b.y": [[3.0]]}
    assert set(data["durations"]) == set(data["benchmark_version"]) == {"b.x", "b.y"}
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_stored_results_migrate_once_and_links_are_followed(tmp_path, capsys):
    """`--all --as`: the results already stored (the asv-results branch) take the new name
    too, or the first nightly after the change starts a line of its own; this interpreter
    found through a link to it (python3 against python)."""
    _result(tmp_path, "/old/runner/bin/python3", commit="11111111")
    link = tmp_path / "py"
    link.symlink_to(sys.executable)
    _result(tmp_path, str(link), commit="22222222")
    assert main([str(tmp_path)]) == 0   # this interpreter's (through the link) only
    err = capsys.readouterr().err
    assert (tmp_path / f"22222222-existing-py{sys.version_info[0]}.{sys.version_info[1]}.json"
            ).exists()
    assert "1 result file(s) still named by a path" in err and "11111111-" in err
    assert main(["--all", str(tmp_path)]) == 2
    assert main(["--all", "--as", "3.10", str(tmp_path)]) == 0
    assert (tmp_path / "11111111-existing-py3.10.json").exists()
    assert not list(tmp_path.glob("*existing-py_*"))


@pytest.mark.skipif(not HAS_ASV, reason="needs asv and git")
def test_two_venv_paths_publish_as_one_line(tmp_path):
    """Real asv: one commit run from two virtual environments at different paths (two
    runners of a chip) is one graph folder, python-X.Y, once renamed."""
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "b.py").write_text("def track_x():\n    return 1.0\n")
    (repo / "asv.conf.json").write_text(json.dumps({
        "version": 1, "project": "x", "repo": ".", "branches": ["main"],
        "environment_type": "virtualenv", "benchmark_dir": "benchmarks",
        "results_dir": "results", "html_dir": "html", "env_dir": "env"}))
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "a"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for name in ("runner1", "runner2"):
        venv.create(tmp_path / name, system_site_packages=True, with_pip=False)
        py = str(tmp_path / name / "bin" / "python3")
        subprocess.run([py, "-m", "asv", "machine", "--yes", "--machine", "m"], cwd=repo,
                       env=env, check=True, capture_output=True, timeout=120)
        subprocess.run([py, "-m", "asv", "run", "--python=same", "--machine", "m",
                        "--set-commit-hash", head], cwd=repo, env=env, check=True,
                       capture_output=True, timeout=300)
        subprocess.run([py, str(ROOT / "scripts" / "asv_results.py"), "results/m"], cwd=repo,
                       env=env, check=True, capture_output=True, timeout=60)
    subprocess.run([sys.executable, "-m", "asv", "publish"], cwd=repo, env=env, check=True,
                   capture_output=True, timeout=300)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    lines = sorted(p.name for p in (repo / "html" / "graphs" / "branch-main" / "machine-m")
                   .iterdir())
    assert lines == [f"python-{version}"]


def test_a_missing_folder_is_exit_2(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "asv_results.py"),
                          str(tmp_path / "nope")], capture_output=True, text=True)
    assert out.returncode == 2 and "is not a folder" in out.stderr


def test_a_renamed_result_keeps_a_normal_file_mode_and_no_temp_file(tmp_path, monkeypatch):
    """The rename wrote through mkstemp and kept its 0600 (asv's own files are 0644), and
    a write that failed left its temp file in the results folder (a review)."""
    import os
    import stat

    import asv_results

    _result(tmp_path, "/v/bin/python3")
    rename(tmp_path, "3.12", "/v/bin/python3")
    mask = os.umask(0)
    os.umask(mask)
    mode = stat.S_IMODE((tmp_path / "04545a7c-existing-py3.12.json").stat().st_mode)
    assert mode == 0o666 & ~mask, oct(mode)
    _result(tmp_path, "/v/bin/python3", commit="0badc0de")

    def broken(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(asv_results.json, "dump", broken)
    with pytest.raises(OSError):
        rename(tmp_path, "3.12", "/v/bin/python3")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "04545a7c-existing-py3.12.json", "0badc0de-existing-py__v_bin_python3.json"]


def test_a_broken_results_file_is_named(tmp_path, capsys):
    """A truncated results file (an asv run killed while writing it) stopped the script
    with "Expecting value: line 2 column 1 (char 41)", exit 2, naming no file (a review)."""
    _result(tmp_path, sys.executable)
    broken = tmp_path / "aaaa1111-existing-py_x.json"
    broken.write_text('{"env_name": "existing-py_x", "python": ')
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "not an asv results JSON" in err
