"""``python -m voxarena.services.detectors.aasist_asv19 --port N``

The model comes from ``$VOXARENA_MODELS``, else build/models."""

from voxarena.sdk import serve

from .model import AasistAsv19Model

if __name__ == "__main__":
    serve(AasistAsv19Model)
