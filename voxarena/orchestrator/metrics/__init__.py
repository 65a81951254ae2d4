"""Metrics of a run: the scorer client, detection/generation/attack/I2D/composite tables, fusion, compare."""
