"""``python -m voxarena.services.generators.kokoro --port N [--threads T]``; ``--build-bank`` builds the CLONE
style bank cache (under ``$VOXARENA_CACHE``) and exits, as the image build does."""

import argparse
import logging
import sys

from voxarena.sdk import serve

from .model import KokoroModel, add_arguments


def main() -> None:
    pre = argparse.ArgumentParser(add_help=False)
    add_arguments(pre)
    known, _ = pre.parse_known_args()
    if known.build_bank:
        logging.basicConfig(level="INFO", stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        KokoroModel(known.threads).load()
        return
    serve(lambda args: KokoroModel(args.threads, clone=not args.tts_only), add_arguments=add_arguments)


if __name__ == "__main__":
    main()
