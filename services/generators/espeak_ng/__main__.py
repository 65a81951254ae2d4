"""``python -m services.generators.espeak_ng --port N``"""

from services.sdk import serve

from .model import EspeakNgModel

if __name__ == "__main__":
    serve(EspeakNgModel)
