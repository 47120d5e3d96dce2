"""scripts/runner/: register.sh (token handling), job_venv.py, verify_pr_head.py,
check_ended.py.

No GPU, no network: register.sh runs against a fake config.sh, the PR API is a local
HTTP server or an injected function.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "scripts" / "runner"
REGISTER = RUNNER / "register.sh"
TOKEN = "AFAKEREGTOKEN0123456789QZX"  # unique, so any leak is found by substring


# --- register.sh -------------------------------------------------------------------------

FAKE_CONFIG = r"""#!/bin/bash
# Records what the real config.sh would see: argv, environment, and the command line of
# every ancestor process (what `ps` shows to any user while it runs).
printf '%s\n' "$@" >"$RECORD/argv"
env >"$RECORD/env"
: >"$RECORD/cmdlines"
pid=$$
while [ -n "$pid" ] && [ "$pid" -gt 1 ] && [ -r "/proc/$pid/cmdline" ]; do
  tr '\0' ' ' <"/proc/$pid/cmdline" >>"$RECORD/cmdlines"
  echo >>"$RECORD/cmdlines"
  pid=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status")
done
echo "fake config.sh done"
"""

# register.sh asks `python3 -m gemmgate chips --ids` for the chip list; this stand-in
# records its environment (it must not hold the token) and fails, so the script falls
# back to its fixed list.
FAKE_PYTHON = """#!/bin/bash
env >>"$RECORD/python-env"
exit 1
"""


@pytest.fixture
def reg(tmp_path):
    if shutil.which("bash") is None or not Path("/proc/self/status").exists():
        pytest.skip("needs bash and /proc (Linux)")
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    (runner / "config.sh").write_text(FAKE_CONFIG)
    (runner / "config.sh").chmod(0o755)
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    (fakebin / "python3").write_text(FAKE_PYTHON)
    (fakebin / "python3").chmod(0o755)
    record = tmp_path / "record"
    record.mkdir()
    env = {
        "PATH": f"{fakebin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "RECORD": str(record),
        "LANG": "C",
    }

    def run(*args, stdin=None, xtrace=False, extra_env=None):
        cmd = ["bash", *(["-x"] if xtrace else []), str(REGISTER),
               "--url", "https://github.com/owner/repo", "--chip", "nvidia-h200",
               "--runner-dir", str(runner), *args]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True,
                              env={**env, **(extra_env or {})}, timeout=60)
        return proc

    def recorded(name):
        p = record / name
        return p.read_text() if p.exists() else None

    run.runner, run.recorded, run.tmp = runner, recorded, tmp_path
    return run


def _token_file(tmp_path, mode=0o600, text=TOKEN + "\n"):
    f = tmp_path / "token"
    f.write_text(text)
    f.chmod(mode)
    return f


def _assert_no_leak(run, proc):
    assert TOKEN not in proc.stdout + proc.stderr
    argv = run.recorded("argv")
    assert argv is not None, proc.stderr
    assert TOKEN not in argv
    assert "--token" not in argv.split("\n")
    cmdlines = run.recorded("cmdlines")
    assert "config.sh" in cmdlines and "register.sh" in cmdlines  # the walk worked
    assert TOKEN not in cmdlines
    env = run.recorded("env")
    # The one place it goes: config.sh's environment, as the runner's input variable.
    assert f"ACTIONS_RUNNER_INPUT_TOKEN={TOKEN}\n" in env
    assert env.count(TOKEN) == 1
    assert "RUNNER_TOKEN=" not in env.replace("ACTIONS_RUNNER_INPUT_TOKEN=", "")
    # Other children (the chip-list probe) never see it.
    assert TOKEN not in (run.recorded("python-env") or "")
    dotenv = (run.runner / ".env").read_text()
    assert TOKEN not in dotenv
    assert "GEMMGATE_CHIP=nvidia-h200\n" in dotenv
    assert f"TRITON_CACHE_DIR={run.runner}/triton-cache-nvidia-h200\n" in dotenv
    assert f"GEMMGATE_TUNING_DIR={run.runner}/gemmgate-tuning\n" in dotenv


@pytest.mark.parametrize("xtrace", [False, True])
def test_register_token_file_stays_out_of_argv(reg, xtrace):
    proc = reg("--token-file", str(_token_file(reg.tmp)), xtrace=xtrace)
    assert proc.returncode == 0, proc.stderr
    _assert_no_leak(reg, proc)
    assert reg.recorded("argv").split("\n")[:4] == [
        "--unattended", "--replace", "--url", "https://github.com/owner/repo"]
    assert "fake config.sh done" in proc.stdout


def test_register_token_from_stdin(reg):
    proc = reg("--token-file", "-", stdin=f"  {TOKEN}\r\n")
    assert proc.returncode == 0, proc.stderr
    _assert_no_leak(reg, proc)


def test_register_token_from_env(reg):
    proc = reg(extra_env={"RUNNER_TOKEN": TOKEN})
    assert proc.returncode == 0, proc.stderr
    _assert_no_leak(reg, proc)


@pytest.mark.parametrize("args", [["--token", TOKEN], [f"--token={TOKEN}"]])
def test_register_rejects_token_on_the_command_line(reg, args):
    proc = reg(*args)
    assert proc.returncode == 2
    assert "--token-file" in proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    assert reg.recorded("argv") is None  # config.sh never ran


def test_register_needs_a_token(reg):
    proc = reg()
    assert proc.returncode == 2
    assert "registration token is required" in proc.stderr
    proc = reg("--token-file", str(reg.tmp / "missing"))
    assert proc.returncode == 2
    proc = reg("--token-file", str(_token_file(reg.tmp, text="two words\n")))
    assert proc.returncode == 2
    assert "two words" not in proc.stderr
    assert reg.recorded("argv") is None


def test_register_warns_about_a_readable_token_file(reg):
    proc = reg("--token-file", str(_token_file(reg.tmp, mode=0o644)))
    assert proc.returncode == 0, proc.stderr
    assert "chmod 600" in proc.stderr
    _assert_no_leak(reg, proc)


def test_register_dry_run_masks_the_token(reg):
    proc = reg("--token-file", str(_token_file(reg.tmp)), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "ACTIONS_RUNNER_INPUT_TOKEN=*** ./config.sh --unattended" in proc.stdout
    assert TOKEN not in proc.stdout + proc.stderr
    assert reg.recorded("argv") is None


# --- job_venv.py -------------------------------------------------------------------------


def _purelib(python):
    return Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True).stdout.strip())


@pytest.fixture
def runner_python(tmp_path):
    """A stand-in for the runner's Python: itself a venv (the nested case, where plain
    `venv --system-site-packages` would not see its packages), holding one module."""
    outer = tmp_path / "runner-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(outer)], check=True)
    site = _purelib(outer / "bin" / "python")
    (site / "zz_runner_only.py").write_text("VALUE = 42\n")
    dist = site / "zz_runner_only-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: zz_runner_only\nVersion: 1.0\n")
    (dist / "RECORD").write_text("")
    return outer / "bin" / "python", site


def _job_venv(python, *args):
    return subprocess.run([str(python), str(RUNNER / "job_venv.py"), *args],
                          capture_output=True, text=True, timeout=300)


def _wheel(directory):
    """A pure wheel `tinyp` that depends on the runner's module."""
    path = directory / "tinyp-0.1-py3-none-any.whl"
    files = {
        "tinyp/__init__.py": "",
        "tinyp-0.1.dist-info/METADATA":
            "Metadata-Version: 2.1\nName: tinyp\nVersion: 0.1\n"
            "Requires-Dist: zz_runner_only>=1.0\n",
        "tinyp-0.1.dist-info/WHEEL":
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "tinyp-0.1.dist-info/RECORD": "",
    }
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def test_job_venv_sees_runner_packages_and_installs_into_itself(runner_python, tmp_path):
    python, runner_site = runner_python
    job = tmp_path / "job-venv"
    job.mkdir()
    (job / "leftover").write_text("from a killed job")
    proc = _job_venv(python, "create", str(job), "--require", "zz_runner_only")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (job / "leftover").exists()
    assert str(runner_site) in proc.stdout
    jpy = job / "bin" / "python"
    probe = subprocess.run(
        [str(jpy), "-c", "import sys, zz_runner_only as m; print(sys.prefix); print(m.__file__)"],
        check=True, capture_output=True, text=True).stdout.split("\n")
    assert Path(probe[0]) == job
    assert Path(probe[1]) == runner_site / "zz_runner_only.py"
    # pip counts the runner's package as installed and puts the new one in the job venv.
    wheel = _wheel(tmp_path)
    pip = subprocess.run(
        [str(jpy), "-m", "pip", "install", "--no-index", "--disable-pip-version-check",
         str(wheel)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert "Requirement already satisfied: zz_runner_only" in pip.stdout
    assert (_purelib(jpy) / "tinyp" / "__init__.py").exists()
    assert not (runner_site / "tinyp").exists()


def test_job_venv_fails_when_a_required_module_is_missing(runner_python, tmp_path):
    python, _ = runner_python
    proc = _job_venv(python, "create", str(tmp_path / "v"), "--without-pip",
                     "--require", "zz_runner_only,zz_not_installed_anywhere")
    assert proc.returncode == 1
    assert "::error" in proc.stdout and "zz_not_installed_anywhere" in proc.stdout
    proc = _job_venv(python, "create", str(tmp_path / "v"), "--require", "os; rm -rf x")
    assert proc.returncode == 2


def test_job_venv_pth_quotes_paths(load_script):
    jv = load_script(RUNNER / "job_venv.py")
    text = jv.pth_text(["/a/site-packages", "/b/it's"])
    lines = text.splitlines()
    assert lines[0].startswith("#")
    assert lines[1] == "import site; site.addsitedir('/a/site-packages')"
    assert lines[2] == 'import site; site.addsitedir("/b/it\'s")'


# --- verify_pr_head.py -------------------------------------------------------------------

SHA = "a" * 40
OTHER = "b" * 40


def _pr(head=SHA, labels=("gpu-ok",), state="open"):
    return {"head": {"sha": head}, "labels": [{"name": n} for n in labels], "state": state}


@pytest.fixture(scope="module")
def vph(load_script):
    return load_script(RUNNER / "verify_pr_head.py")


def test_problems(vph):
    assert vph.problems(_pr(), SHA, SHA, "gpu-ok") == []
    assert vph.problems(_pr(labels=()), SHA, None, None) == []
    moved = vph.problems(_pr(head=OTHER), SHA, SHA, None)
    assert len(moved) == 1 and f"moved from {SHA} to {OTHER}" in moved[0]
    assert "label 'gpu-ok'" in vph.problems(_pr(labels=("other",)), SHA, SHA, "gpu-ok")[0]
    assert "checkout is at" in vph.problems(_pr(), SHA, OTHER, None)[0]
    assert "closed" in vph.problems(_pr(state="closed"), SHA, SHA, None)[0]


def _main(vph, args, pr=None, exc=None, local=SHA):
    calls = []

    def fetch(api, repo, number, token):
        calls.append((api, repo, number, token))
        if exc is not None:
            raise exc
        return pr

    base = ["--repo", "owner/repo", "--pr", "7", "--sha", SHA]
    rc = vph.main(base + args, fetch=fetch, local_head=lambda: local)
    return rc, calls


def test_main(vph, monkeypatch, capsys):
    monkeypatch.setenv("GH_TOKEN", "ghs_secretvalue")
    monkeypatch.setenv("GITHUB_API_URL", "https://ghe.example/api/v3")
    rc, calls = _main(vph, ["--require-label", "gpu-ok"], pr=_pr())
    assert rc == 0
    assert calls == [("https://ghe.example/api/v3", "owner/repo", 7, "ghs_secretvalue")]
    rc, _ = _main(vph, ["--require-label", "gpu-ok"], pr=_pr(head=OTHER))
    assert rc == 1
    rc, _ = _main(vph, [], pr=_pr(), local=OTHER)
    assert rc == 1
    rc, _ = _main(vph, ["--no-local"], pr=_pr(), local=OTHER)
    assert rc == 0
    rc, _ = _main(vph, [], exc=vph.urllib.error.URLError("unreachable"))
    assert rc == 2  # fails closed
    out = capsys.readouterr().out
    assert out.count("::error title=PR head check::") == 3
    assert "ghs_secretvalue" not in out


@pytest.mark.parametrize("args", [
    ["--repo", "owner/repo", "--pr", "7", "--sha", "HEAD"],
    ["--repo", "owner/repo;x", "--pr", "7", "--sha", SHA],
    ["--repo", "owner/repo", "--pr", "0", "--sha", SHA],
])
def test_main_usage_errors(vph, args):
    with pytest.raises(SystemExit) as e:
        vph.main(args, fetch=None, local_head=None)
    assert e.value.code == 2


def test_fetch_pr_over_http(vph):
    seen = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen["path"] = self.path
            seen["auth"] = self.headers.get("Authorization")
            body = json.dumps(_pr()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        api = f"http://127.0.0.1:{server.server_port}/"
        assert vph.fetch_pr(api, "owner/repo", 7, "tok") == _pr()
    finally:
        server.shutdown()
        server.server_close()
    assert seen == {"path": "/repos/owner/repo/pulls/7", "auth": "Bearer tok"}


def test_runner_scripts_are_executable():
    for name in ("register.sh", "job_venv.py", "verify_pr_head.py", "wait_gpu_idle.py"):
        mode = (RUNNER / name).stat().st_mode
        assert mode & stat.S_IXUSR, name
    assert os.access(REGISTER, os.X_OK)


def test_a_checks_exit_0_passes_only_with_the_whole_record(tmp_path):
    """gpu.yml and nightly.yml run check_ended.py after a check's exit 0: a record marked
    incomplete (a process ended outright: cli_run.mark_running) or none is no pass."""
    from gemmgate.cli_run import RUNNING

    ended, running = tmp_path / "ended.json", tmp_path / "running.json"
    ended.write_text(json.dumps({"environment": {"chip": "cpu"}, "cases": []}))
    running.write_text(json.dumps({"environment": {"incomplete": RUNNING}, "cases": []}))
    script = str(ROOT / "scripts" / "runner" / "check_ended.py")
    for path, rc, said in ((ended, 0, ""), (running, 1, "did not end: running: "),
                           (tmp_path / "none.json", 1, "no readable record")):
        out = subprocess.run([sys.executable, script, str(path)], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == rc and said in out.stderr, (path, out)

