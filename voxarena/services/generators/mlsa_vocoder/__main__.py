"""``python -m voxarena.services.generators.mlsa_vocoder --port N``"""

from voxarena.sdk import serve

from .model import MlsaVocoderModel

if __name__ == "__main__":
    serve(MlsaVocoderModel)
