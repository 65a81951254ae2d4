"""``python -m voxarena.services.detectors.perth_detect --port N``"""

from voxarena.sdk import serve

from .model import PerthDetectModel

if __name__ == "__main__":
    serve(PerthDetectModel)
