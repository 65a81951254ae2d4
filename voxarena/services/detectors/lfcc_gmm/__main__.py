"""``python -m voxarena.services.detectors.lfcc_gmm --port N``"""

from voxarena.sdk import serve

from .model import LfccGmmModel

if __name__ == "__main__":
    serve(LfccGmmModel)
