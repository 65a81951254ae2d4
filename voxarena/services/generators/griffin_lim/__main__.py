"""``python -m voxarena.services.generators.griffin_lim --port N``"""

from voxarena.sdk import serve

from .model import GriffinLimModel

if __name__ == "__main__":
    serve(GriffinLimModel)
