import sys

from gemmgate.cli import main

if __name__ == "__main__":  # spawned worker processes re-import this module
    sys.exit(main())
