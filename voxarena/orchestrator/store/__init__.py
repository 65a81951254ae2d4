"""The run store: the run directory, its append-only JSONL tables, content-addressed audio, failed rows."""
