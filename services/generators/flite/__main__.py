"""``python -m services.generators.flite --port N``"""

from services.sdk import serve

from .model import FliteModel

if __name__ == "__main__":
    serve(FliteModel)
