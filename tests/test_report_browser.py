"""The report page in a real headless browser: a `smoke` run on the CPU path, its report
beside the committed CPU baseline, served on localhost and loaded by Chromium.

Checks: the DOM Chromium built holds an <img> for every PNG in the folder, the server
delivered every one of them (HTTP 200) and nothing else was missing, the browser logged
no console message (the page has no script: any message is an error), and the
screenshot is a non-empty PNG. Skips when no Chromium binary is on PATH (CI images need
not have one; scripts/bootstrap.sh does not install it). GEMMGATE_UPDATE_SCREENSHOT=1
also saves the screenshots as docs/img/report-cpu.png and report-h200.png (the committed
ones). The H200 page is made from the committed H200 baseline, plus the H200 run that
GEMMGATE_H200_RUN names (not in the repository: device runs keep every sample).
"""

import functools
import os
import re
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gemmgate.cli import main

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
SCREENSHOT = ROOT / "docs" / "img" / "report-cpu.png"
SCREENSHOT_H200 = ROOT / "docs" / "img" / "report-h200.png"


def _browser() -> str:
    for name in BROWSERS:
        exe = shutil.which(name)
        if exe:
            return exe
    pytest.skip(f"no Chromium binary on PATH (looked for {', '.join(BROWSERS)}); "
                "e.g. `apt-get install chromium`")


class _Logged(SimpleHTTPRequestHandler):
    served: list = []

    def log_request(self, code="-", size="-"):
        self.served.append((self.path, int(code)))

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def serve():
    """serve(folder) -> (base URL, list of (path, status) the server answered)."""
    servers = []

    def start(folder: Path):
        log: list = []
        handler = type("H", (_Logged,), {"served": log})
        srv = ThreadingHTTPServer(("127.0.0.1", 0),
                                  functools.partial(handler, directory=str(folder)))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}", log

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _chromium(exe: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [exe, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120)


def test_the_cpu_report_renders_in_chromium(tmp_path, serve, monkeypatch):
    exe = _browser()
    run = tmp_path / "run.json"
    assert main(["run", "--chip", "cpu", "--modes", "fp32", "--budget", "0.1", "--json",
                 str(run)]) == 0
    (tmp_path / "baselines").mkdir()
    shutil.copyfile(ROOT / "baselines" / "cpu.json", tmp_path / "baselines" / "cpu.json")
    monkeypatch.chdir(tmp_path)  # the page names its inputs as given: short paths
    _render_and_check(exe, tmp_path, serve, ["run.json", "--baseline", "baselines/cpu.json"],
                      SCREENSHOT)


def test_the_h200_report_renders_in_chromium(tmp_path, serve, monkeypatch):
    """The committed H200 baseline, plus an H200 run when GEMMGATE_H200_RUN names one
    (a `gemmgate run --json` file from the device; session 5 used call 4's pr run)."""
    exe = _browser()
    (tmp_path / "baselines").mkdir()
    shutil.copyfile(ROOT / "baselines" / "nvidia-h200.json",
                    tmp_path / "baselines" / "nvidia-h200.json")
    args = ["--baseline", "baselines/nvidia-h200.json"]
    run = os.environ.get("GEMMGATE_H200_RUN")
    if run:
        shutil.copyfile(run, tmp_path / "h200-run.json")
        args = ["h200-run.json", *args]
    monkeypatch.chdir(tmp_path)
    _render_and_check(exe, tmp_path, serve, args, SCREENSHOT_H200)


def _render_and_check(exe: str, tmp_path: Path, serve, inputs: list[str], keep: Path) -> None:
    out = tmp_path / "report"
    assert main(["report", *inputs, "-o", "report"]) == 0
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) >= 5
    url, served = serve(out)

    dom = _chromium(exe, tmp_path / "profile", "--dump-dom", f"{url}/index.html")
    assert dom.returncode == 0, dom.stderr[-2000:]
    imgs = re.findall(r'<img src="([^"]+)"', dom.stdout)
    assert sorted(imgs) == pngs
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    ok = {path.lstrip("/") for path, code in served if code == 200}
    assert set(pngs) <= ok and "index.html" in ok
    assert [p for p, code in served if code != 200 and p != "/favicon.ico"] == []

    shot = tmp_path / "report.png"
    got = _chromium(exe, tmp_path / "profile", f"--screenshot={shot}",
                    "--window-size=1400,2000", f"{url}/index.html")
    assert got.returncode == 0, got.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (
        1400, 2000)
    if os.environ.get("GEMMGATE_UPDATE_SCREENSHOT") == "1":
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, keep)
