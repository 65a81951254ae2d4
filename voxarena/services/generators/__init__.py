"""Voice generator services, one package per engine."""
