"""``python -m voxarena.services.detectors.source_tracer --port N``"""

from voxarena.sdk import serve

from .model import SourceTracerModel

if __name__ == "__main__":
    serve(SourceTracerModel)
