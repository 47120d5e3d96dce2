"""A throwaway git history with one planted slow commit, for validating `gemmgate bisect`
on a GPU (issue 10): N commits of this checkout's kernels/, each changing only a marker
constant, except that from commit SLOW on the launcher also runs a GPU spin of CYCLES
clock cycles before every GEMM (a real, device-timed slowdown, caught in CUDA graphs).

    python3 scripts/device/planted_history.py --out /tmp/hist --commits 9 --slow-at 6
    cd /tmp/hist && PYTHONPATH=<this checkout> python3 -m gemmgate bisect \
        $(git rev-list --max-parents=0 HEAD) HEAD --case bf16-m4096-n4096-k4096

Prints the planted commit's sha (the answer bisect must find).
"""

import argparse
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPIN = ("    if a.is_cuda:  # PLANTED: extra device work before every GEMM\n"
        "        torch.cuda._sleep({cycles})\n")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--commits", type=int, default=9)
    ap.add_argument("--slow-at", type=int, default=6, help="1-based index of the slow commit")
    ap.add_argument("--cycles", type=int, default=100_000)
    args = ap.parse_args()
    if not 1 < args.slow_at <= args.commits:
        ap.error("--slow-at must be after the first commit and within --commits")
    repo = args.out
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    shutil.copytree(ROOT / "kernels", repo / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "bisect@example.com")
    git(repo, "config", "user.name", "planted history")
    configs, matmul = repo / "kernels" / "configs.py", repo / "kernels" / "matmul.py"
    base_cfg, base_mm = configs.read_text(), matmul.read_text()
    anchor = "    mode = _check(a, b, precision, out, scale_a, scale_b)\n"
    assert anchor in base_mm, "kernels/matmul.py changed: update the planting anchor"
    planted = ""
    for i in range(1, args.commits + 1):
        configs.write_text(base_cfg + f"\nMARKER = {i}\n")
        slow = i >= args.slow_at
        matmul.write_text(base_mm.replace(anchor, anchor + SPIN.format(cycles=args.cycles))
                          if slow else base_mm)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"commit {i}" + (" (planted slowdown)"
                                                        if i == args.slow_at else ""))
        if i == args.slow_at:
            planted = git(repo, "rev-parse", "HEAD")
    print(planted)


if __name__ == "__main__":
    main()
