"""``python -m services.generators.mbrola --port N`` (optional, non-free voices)"""

from services.sdk import serve

from .model import MbrolaModel

if __name__ == "__main__":
    serve(MbrolaModel)
