"""``python -m voxarena.services.transforms.laundering --port N``"""

from voxarena.sdk import serve

from .model import LaunderingModel

if __name__ == "__main__":
    serve(LaunderingModel)
