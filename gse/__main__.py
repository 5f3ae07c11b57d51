import sys

from gse.cli import main

sys.exit(main())
