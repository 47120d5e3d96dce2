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

from asv_results import rename  # noqa: E402

HAS_ASV = shutil.which("git") is not None and subprocess.run(
    [sys.executable, "-c", "import asv"], capture_output=True).returncode == 0


def _result(folder: Path, python: str, commit: str = "04545a7c") -> Path:
    env = "existing-py_" + python.replace("/", "_")
    path = folder / f"{commit}-{env}.json"
    path.write_text(json.dumps({"commit_hash": commit, "env_name": env, "python": python,
                                "params": {"machine": "m", "python": python},
                                "results": {"b.track_x": [[1.0]]}, "version": 2}))
    return path


def test_only_this_interpreters_results_are_renamed(tmp_path):
    mine, other = _result(tmp_path, "/r1/venv/bin/python3"), _result(tmp_path, "/usr/bin/py")
    (tmp_path / "machine.json").write_text('{"machine": "m"}')
    assert rename(tmp_path, "/r1/venv/bin/python3", "3.12") == [
        tmp_path / "04545a7c-existing-py3.12.json"]
    assert not mine.exists() and other.exists()
    data = json.loads((tmp_path / "04545a7c-existing-py3.12.json").read_text())
    assert (data["env_name"], data["python"], data["params"]["python"]) == \
        ("existing-py3.12", "3.12", "3.12")
    assert data["results"] == {"b.track_x": [[1.0]]}
    assert json.loads((tmp_path / "machine.json").read_text()) == {"machine": "m"}


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
    assert out.returncode == 2 and "usage" in out.stderr
