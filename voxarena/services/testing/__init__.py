"""Small services for tests of the orchestrator: a well-behaved generator and detector, a generator
that misbehaves on purpose (wrong echoes, bad audio, transient unavailability), and doubles that each
break one conformance rule (``faulty_generator`` and ``faulty_detector`` through the SDK,
``raw_faulty_services`` without it)."""
