"""``python -m voxarena.services.detectors.lfcc_lcnn --port N``"""

from voxarena.sdk import serve

from .model import LfccLcnnModel

if __name__ == "__main__":
    serve(LfccLcnnModel)
