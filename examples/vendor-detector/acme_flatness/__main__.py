"""``python -m acme_flatness --port 50051`` (or the ``acme-flatness`` script): serve the detector."""

from voxarena.sdk import serve

from .service import AcmeFlatness


def main() -> None:
    serve(AcmeFlatness)


if __name__ == "__main__":
    main()
