"""``python -m acme_formant --port 50051`` (or the ``acme-formant`` script): serve the generator."""

from voxarena.sdk import serve

from .service import AcmeFormant


def main() -> None:
    serve(AcmeFormant)


if __name__ == "__main__":
    main()
