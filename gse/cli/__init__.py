"""The ``gse`` command line, one module per command (``gse.cli.main`` builds the parser)."""
