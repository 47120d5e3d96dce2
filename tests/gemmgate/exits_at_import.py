"""A module that exits as it is imported (`--providers exits_at_import:f` tests)."""
import sys

sys.exit(3)
