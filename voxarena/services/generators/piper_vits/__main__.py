"""``python -m voxarena.services.generators.piper_vits --port N``"""

from voxarena.sdk import serve

from .model import PiperVitsModel

if __name__ == "__main__":
    serve(PiperVitsModel)
