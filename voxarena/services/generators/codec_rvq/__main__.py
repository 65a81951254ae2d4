"""``python -m voxarena.services.generators.codec_rvq --port N``"""

from voxarena.sdk import serve

from .model import CodecRvqModel

if __name__ == "__main__":
    serve(CodecRvqModel)
