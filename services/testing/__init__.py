"""Small services for tests of the orchestrator: a well-behaved generator and detector, and a
generator that misbehaves on purpose (wrong echoes, bad audio, transient unavailability)."""
