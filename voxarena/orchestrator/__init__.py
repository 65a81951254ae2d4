"""The orchestrator: plans work from a frozen manifest, fans requests out, validates, stores, reports."""
