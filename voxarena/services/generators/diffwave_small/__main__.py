"""``python -m voxarena.services.generators.diffwave_small --port N``"""

from voxarena.sdk import serve

from .model import DiffwaveSmallModel

if __name__ == "__main__":
    serve(DiffwaveSmallModel)
