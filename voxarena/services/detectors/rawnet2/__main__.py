"""``python -m voxarena.services.detectors.rawnet2 --port N``"""

from voxarena.sdk import serve

from .model import RawNet2Model

if __name__ == "__main__":
    serve(RawNet2Model)
