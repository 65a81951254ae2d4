"""The dummy generator's cloning sibling: CLONE and CONVERT (for I2D and reference-conditioned tests).

``python -m voxarena.services.testing.dummy_cloner --port N``
"""

from __future__ import annotations

from voxarena.sdk import serve

from .dummy_generator import DummyGenerator


class DummyCloner(DummyGenerator):
    name = "dummy-cloner"
    tasks = ("CLONE", "CONVERT")
    min_source_seconds = 0.5  # a speaker reference needs some speech (GeneratorInfo.min_source_seconds)


if __name__ == "__main__":
    serve(DummyCloner)
