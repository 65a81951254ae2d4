"""The zoo covers every generator family of the SoK taxonomy (the contract's GeneratorFamily, section 2 of the
paper): each catalogued generator's declared family, read from its model class without loading a model."""

from __future__ import annotations

import importlib
import inspect

from voxarena.catalogue import SERVICES
from voxarena.sdk import GeneratorModel
from voxarena.v1 import generator_pb2


def declared_families() -> dict[str, str]:
    """Catalogued generator -> the family its model class declares (hf-tts: its backend's, so left out)."""
    out = {}
    for s in SERVICES:
        if s.role != "generator":
            continue
        module = importlib.import_module(f"{s.module}.model")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, GeneratorModel) and cls.__module__ == module.__name__ and cls.family:
                out[s.name] = cls.family
    return out


def test_the_zoo_covers_nine_of_nine_families():
    families = set(generator_pb2.GeneratorFamily.keys()) - {"GENERATOR_FAMILY_UNSPECIFIED"}
    declared = declared_families()
    assert len(families) == 9 and set(declared.values()) == families, sorted(families - set(declared.values()))
    assert declared["diffwave-small"] == "VOCODER_DIFFUSION" and declared["codec-rvq"] == "NEURAL_CODEC_LANGUAGE_MODEL"
