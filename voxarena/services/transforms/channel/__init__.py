"""The channel steps as a TransformService (model.py)."""
