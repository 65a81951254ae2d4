"""Audio transforms (TransformService): channels, laundering chains, attacks."""
