"""``python -m services.generators.festival_hts --port N``"""

from services.sdk import serve

from .model import FestivalHtsModel

if __name__ == "__main__":
    serve(FestivalHtsModel)
