import sys

from gemmgate.cli import main

sys.exit(main())
