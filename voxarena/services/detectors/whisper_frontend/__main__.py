"""``python -m voxarena.services.detectors.whisper_frontend --port N``"""

from voxarena.sdk import serve

from .model import WhisperFrontendModel

if __name__ == "__main__":
    serve(WhisperFrontendModel)
