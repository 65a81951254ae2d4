"""Model services: the SDK every service is built on, generators, detectors and test doubles."""
