"""``python -m services.detectors.lfcc_gmm --port N``"""

from services.sdk import serve

from .model import LfccGmmModel

if __name__ == "__main__":
    serve(LfccGmmModel)
