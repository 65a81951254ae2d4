"""``python -m services.detectors.whisper_frontend --port N``"""

from services.sdk import serve

from .model import WhisperFrontendModel

if __name__ == "__main__":
    serve(WhisperFrontendModel)
