import sys

from gse.cli.main import main

sys.exit(main())
