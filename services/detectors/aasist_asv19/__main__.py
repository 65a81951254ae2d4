"""``python -m services.detectors.aasist_asv19 --port N`` (model from ``$VOXARENA_MODELS``, else build/models)."""

from services.sdk import serve

from .model import AasistAsv19Model

if __name__ == "__main__":
    serve(AasistAsv19Model)
