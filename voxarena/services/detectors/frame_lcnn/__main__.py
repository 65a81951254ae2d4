"""``python -m voxarena.services.detectors.frame_lcnn --port N``"""

from voxarena.sdk import serve

from .model import FrameLcnnModel

if __name__ == "__main__":
    serve(FrameLcnnModel)
