#!/usr/bin/env python3
"""Refuse to time a pull request whose head moved since the triggering event.

    python3 scripts/runner/verify_pr_head.py --repo OWNER/NAME --pr N --sha SHA \
        [--require-label gpu-ok]

`gpu.yml` checks out `github.event.pull_request.head.sha`, the head the event saw: for
a fork PR, the commit a maintainer reviewed and labelled `gpu-ok`. Before anything is
installed or run, this script asks the GitHub API for the PR as it is now and refuses
(exit 1, `::error`) when
  - the working tree's HEAD is not SHA (the checkout is not the pinned commit),
  - the PR's current head is not SHA: commits were pushed after the event. They are
    unreviewed; gpu-ok-revoke.yml has removed the label, and a maintainer re-applies it
    after reviewing the new head, which starts a fresh run for that commit,
  - `--require-label L` is given and the PR no longer carries L (approval withdrawn
    while the job waited for the runner),
  - the PR is no longer open.
Exit 2: usage or API error (fails closed). The token comes from $GH_TOKEN or
$GITHUB_TOKEN and is only ever sent as a header; the API root from $GITHUB_API_URL.
Standard library only: it runs on the runner's Python before any install.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

SHA_RE = re.compile(r"^[0-9a-f]{40}$")
REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def problems(pr: dict, sha: str, local_head: str | None, require_label: str | None) -> list[str]:
    """Why the run must not go ahead; empty when it may."""
    out = []
    if local_head is not None and local_head != sha:
        out.append(f"the checkout is at {local_head}, not the event's head {sha}")
    head = (pr.get("head") or {}).get("sha")
    if head != sha:
        out.append(f"the PR head moved from {sha} to {head} after the event: the new commits "
                   "are unreviewed; review them and re-apply the label to run them")
    if pr.get("state") != "open":
        out.append(f"the PR is {pr.get('state')}")
    if require_label:
        names = {lab.get("name") for lab in pr.get("labels") or []}
        if require_label not in names:
            out.append(f"the PR no longer carries the label {require_label!r}")
    return out


def fetch_pr(api: str, repo: str, number: int, token: str | None) -> dict:
    req = urllib.request.Request(
        f"{api.rstrip('/')}/repos/{repo}/pulls/{number}",
        headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                 "User-Agent": "gemmgate-verify-pr-head"},
    )
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def git_head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def main(argv: list[str] | None = None, fetch=fetch_pr, local_head=git_head) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True, help="OWNER/NAME")
    ap.add_argument("--pr", required=True, type=int, help="pull request number")
    ap.add_argument("--sha", required=True, help="the event's head commit (40 hex digits)")
    ap.add_argument("--require-label", default=None, help="label the PR must still carry")
    ap.add_argument("--no-local", action="store_true",
                    help="skip comparing the working tree's HEAD")
    args = ap.parse_args(argv)
    sha = args.sha.lower()
    if not SHA_RE.match(sha):
        ap.error("--sha must be 40 hex digits")
    if not REPO_RE.match(args.repo):
        ap.error("--repo must be OWNER/NAME")
    if args.pr <= 0:
        ap.error("--pr must be positive")

    token = os.environ.get("GH_TOKEN") or os.environ.get("GITHUB_TOKEN")
    api = os.environ.get("GITHUB_API_URL") or "https://api.github.com"
    try:
        pr = fetch(api, args.repo, args.pr, token)
        head = None if args.no_local else local_head()
    except (urllib.error.URLError, OSError, ValueError, subprocess.CalledProcessError) as exc:
        print(f"::error title=PR head check::cannot verify PR #{args.pr}: "
              f"{type(exc).__name__}: {exc}", flush=True)
        return 2
    found = problems(pr, sha, head, args.require_label)
    if found:
        for p in found:
            print(f"::error title=PR head check::PR #{args.pr}: {p}", flush=True)
        return 1
    print(f"PR #{args.pr}: head is still {sha}; running it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
