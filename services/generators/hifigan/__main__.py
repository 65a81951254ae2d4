"""``python -m services.generators.hifigan --port N`` (needs the converted model: ``make models MODELS=hifigan``)"""

from services.sdk import serve

from .model import HifiganModel

if __name__ == "__main__":
    serve(HifiganModel)
