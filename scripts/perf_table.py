"""Render a baseline file (baselines/<chip>.json) as Markdown tables for docs/PERF.md."""

import sys

from gemmgate import baselines, stats
from gemmgate.tuning import config_from_json, config_name


def main(path: str) -> None:
    data = baselines.load(path)
    by: dict[str, list] = {}
    for key, c in data["cases"].items():
        by.setdefault(c["mode"], []).append((key, c))
    for mode in ("fp32", "tf32", "bf16", "fp16", "fp8"):
        rows = by.get(mode, [])
        if not rows:
            continue
        geo = stats.geomean([c["ratio"] for _, c in rows if c["ratio"]])
        print(f"\n**{mode}** — geomean Triton/vendor speed ratio **{geo:.3f}**\n")
        print("| case | Triton TFLOP/s | vendor TFLOP/s | ratio | A/A noise (ratio) | "
              "A/B noise | Triton err | vendor err | Triton tile |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for key, c in rows:
            t, v = c["providers"]["triton"], c["providers"].get("vendor")
            vt = f"{v['tflops']:.1f}" if v and v["tflops"] else "n/a"
            ve = f"{v['error']:.1e}" if v and v["error"] is not None else "n/a"
            r = f"{c['ratio']:.3f}" if c["ratio"] else "—"
            nz, ab = c["noise"]["ratio"], c["noise"].get("ab")
            tile = c.get("tuning")
            tile = config_name(config_from_json(tile["config"])) if tile else "—"
            print(f"| {key.split('-', 1)[1]} | {t['tflops']:.1f} | {vt} | {r} | "
                  f"{'—' if nz is None else f'{nz:.2%}'} | {'—' if ab is None else f'{ab:.2%}'} | "
                  f"{t['error']:.1e} | {ve} | {tile} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "baselines/nvidia-h200.json")
