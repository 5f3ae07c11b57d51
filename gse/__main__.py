import sys

from gse.cli.main import entry

sys.exit(entry())
