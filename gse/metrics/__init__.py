"""What a run measured: per-message records, ideal completion times and the JSON summary
(``records``), tables and record files (``report``), plots (``plots``)."""
