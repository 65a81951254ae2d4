"""One training pipeline for every trained detector: ``python -m services.detectors.training``."""
