"""``python -m voxarena.services.transforms.channel --port N``"""

from voxarena.sdk import serve

from .model import ChannelModel

if __name__ == "__main__":
    serve(ChannelModel)
