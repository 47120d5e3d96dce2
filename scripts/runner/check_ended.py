#!/usr/bin/env python3
"""Whether a `gemmgate check --json` file records a check that ended: the workflows run it
after a check's exit 0, which is a pass only with the whole record. A process ended
outright (a provider's os._exit(0) on one device) leaves the record marked
`environment.incomplete` (gemmgate/cli_run.py's `mark_running`), or none.

    python3 scripts/runner/check_ended.py FILE

Exit 0 ended; 1 not ended, or no readable record (said on stderr).
"""

from __future__ import annotations

import json
import sys


def unended(path: str) -> str | None:
    """Why the record at `path` is not a check that ended; None where it is one."""
    try:
        env = json.loads(open(path, encoding="utf-8").read())["environment"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"no readable record at {path} ({type(e).__name__}: {e})"
    why = env.get("incomplete") if isinstance(env, dict) else "no environment"
    return f"{path}: gemmgate check did not end: {why}" if why else None


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_ended.py FILE")
    sys.exit(unended(sys.argv[1]))
