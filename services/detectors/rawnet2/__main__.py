"""``python -m services.detectors.rawnet2 --port N``"""

from services.sdk import serve

from .model import RawNet2Model

if __name__ == "__main__":
    serve(RawNet2Model)
