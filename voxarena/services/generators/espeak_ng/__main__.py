"""``python -m voxarena.services.generators.espeak_ng --port N``"""

from voxarena.sdk import serve

from .model import EspeakNgModel

if __name__ == "__main__":
    serve(EspeakNgModel)
