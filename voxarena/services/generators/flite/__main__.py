"""``python -m voxarena.services.generators.flite --port N``"""

from voxarena.sdk import serve

from .model import FliteModel

if __name__ == "__main__":
    serve(FliteModel)
