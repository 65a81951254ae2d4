"""``python -m services.generators.piper_vits --port N``"""

from services.sdk import serve

from .model import PiperVitsModel

if __name__ == "__main__":
    serve(PiperVitsModel)
