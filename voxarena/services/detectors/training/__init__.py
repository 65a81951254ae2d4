"""One training pipeline for every trained detector: ``python -m voxarena.services.detectors.training``."""
