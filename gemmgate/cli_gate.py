"""`gemmgate check` and `gemmgate baseline ...` (the regression gate)."""

from __future__ import annotations


def add_gate_commands(sub, common) -> None:
    pass


def gate_command(args, console, err) -> int:
    raise ValueError(f"unknown command {args.command!r}")
