"""The laundering chain: a reference TransformService (README.md)."""
