"""``python -m voxarena.services.generators.codec2 --port N``"""

from voxarena.sdk import serve

from .model import Codec2Model

if __name__ == "__main__":
    serve(Codec2Model)
