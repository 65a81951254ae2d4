"""``python -m voxarena.services.generators.hifigan --port N``

Needs the converted model: ``make models MODELS=hifigan``."""

from voxarena.sdk import serve

from .model import HifiganModel

if __name__ == "__main__":
    serve(HifiganModel)
