"""``python -m services.detectors.aasist --port N``"""

from services.sdk import serve

from .model import AasistModel

if __name__ == "__main__":
    serve(AasistModel)
