"""``python -m voxarena.services.generators.mbrola --port N`` (optional, non-free voices)"""

from voxarena.sdk import serve

from .model import MbrolaModel

if __name__ == "__main__":
    serve(MbrolaModel)
