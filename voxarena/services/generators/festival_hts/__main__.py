"""``python -m voxarena.services.generators.festival_hts --port N``"""

from voxarena.sdk import serve

from .model import FestivalHtsModel

if __name__ == "__main__":
    serve(FestivalHtsModel)
