import sys

from runtime.cli.cli import main

sys.exit(main())
