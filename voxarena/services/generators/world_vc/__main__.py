"""``python -m voxarena.services.generators.world_vc --port N``"""

from voxarena.sdk import serve

from .model import WorldVcModel

if __name__ == "__main__":
    serve(WorldVcModel)
