"""``python -m services.generators.world_vc --port N``"""

from services.sdk import serve

from .model import WorldVcModel

if __name__ == "__main__":
    serve(WorldVcModel)
