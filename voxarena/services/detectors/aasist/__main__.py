"""``python -m voxarena.services.detectors.aasist --port N``"""

from voxarena.sdk import serve

from .model import AasistModel

if __name__ == "__main__":
    serve(AasistModel)
