"""Signal processing shared by the services and the orchestrator (layer "shared": above the contract, below both)."""
