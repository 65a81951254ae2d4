"""The command line: ``orchestrator run|status|report|merge|race|...`` (typer), thin over the other rooms."""
