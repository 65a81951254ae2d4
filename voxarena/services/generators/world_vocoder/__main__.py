"""``python -m voxarena.services.generators.world_vocoder --port N``"""

from voxarena.sdk import serve

from .model import WorldVocoderModel

if __name__ == "__main__":
    serve(WorldVocoderModel)
