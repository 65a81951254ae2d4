"""``python -m services.generators.world_vocoder --port N``"""

from services.sdk import serve

from .model import WorldVocoderModel

if __name__ == "__main__":
    serve(WorldVocoderModel)
