"""``python -m voxarena.services.transforms.perth_embed --port N``"""

from voxarena.sdk import serve

from .model import PerthEmbedModel

if __name__ == "__main__":
    serve(PerthEmbedModel)
