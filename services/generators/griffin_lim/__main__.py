"""``python -m services.generators.griffin_lim --port N``"""

from services.sdk import serve

from .model import GriffinLimModel

if __name__ == "__main__":
    serve(GriffinLimModel)
