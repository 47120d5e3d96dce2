#!/usr/bin/env python3
"""Register this runner with asv under its chip id, with the GPU and software recorded.

asv keys result histories by machine: the machine name is the gemmgate chip id
(gemmgate.chips.select_chip: --chip / $GEMMGATE_CHIP / detected), and asv's free-text
machine fields carry what identifies the hardware and the software stack:

  cpu      GPU name, driver, CUDA/HIP (on the CPU chip: the host CPU)
  arch     host architecture (on the CPU chip: and the host CPU)
  os       OS name, torch, triton (on the CPU chip: and the kernel release)
  num_cpu, ram   the host's on the CPU chip; "any host" on a GPU chip

asv 0.6 keys each graph by every machine field (they all go into the results' params),
so a driver, CUDA, torch or triton upgrade starts a new line on the site and ends the old
one there: one line per software stack, each saying what it ran on. Compare across an
upgrade with an A/B run (`gemmgate run --ab-ref`), not along the graph. A GPU chip's
runners differ in their hosts (the kernel release, the host CPU, its cores and memory:
each lease of the device fleet can be another host), which time nothing of a graph-timed
GEMM: those stay out of its fields, or each host would start a line of its own.

The entry is written through asv's own MachineCollection (the file `asv machine` writes,
~/.asv-machine.json): `asv machine --yes --cpu ...` silently drops every field equal to
asv's detected default, which would leave the CPU chip's entry without cpu/num_cpu/ram.

  python3 scripts/asv_machine.py              # then: asv run --python=same --machine <chip>
  python3 scripts/asv_machine.py --print      # show the fields, change nothing
"""

from __future__ import annotations

import argparse
import os
import platform
import sys


def fields(chip: str | None = None) -> dict[str, str]:
    from asv import util

    from gemmgate.chips import select_chip
    from gemmgate.env import environment

    sel = select_chip(chip)
    env = environment(sel.chip.id, "wall" if sel.chip.device_type == "cpu" else "graph")
    host_cpu = util.get_cpu_info() or platform.processor() or "unknown CPU"
    stack = f"torch {env['torch']} | triton {env['triton']}"
    if sel.chip.device_type == "cpu":
        return {"machine": sel.chip.id, "cpu": host_cpu,
                "arch": f"{platform.machine()} | {host_cpu}",
                "os": f"{platform.system()} {platform.release()} | {stack}",
                "num_cpu": str(os.cpu_count() or 1), "ram": str(util.get_memsize())}
    runtime = f"CUDA {env['cuda']}" if env.get("cuda") else f"HIP {env.get('hip')}"
    return {"machine": sel.chip.id,
            "cpu": f"{env['device_name']} | driver {env.get('driver') or 'unknown'} | {runtime}",
            "arch": platform.machine(), "os": f"{platform.system()} | {stack}",
            "num_cpu": "any host", "ram": "any host"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chip", help="gemmgate chip id (default: $GEMMGATE_CHIP or detected)")
    p.add_argument("--machine", help="asv machine name (default: the chip id)")
    p.add_argument("--print", action="store_true", help="print the fields, write nothing")
    args = p.parse_args(argv)
    try:
        f = fields(args.chip)
    except ValueError as e:
        print(f"asv_machine: {e}", file=sys.stderr)
        return 2
    if args.machine:
        f["machine"] = args.machine
    for k, v in f.items():
        print(f"{k:8} {v}")
    if args.print:
        return 0
    from asv.machine import MachineCollection

    MachineCollection.save(f["machine"], f)
    print(f"asv machine {f['machine']!r} written to {MachineCollection.get_machine_file_path()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
