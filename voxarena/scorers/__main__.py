"""``python -m voxarena.scorers --port N``"""

from .service import main

if __name__ == "__main__":
    main()
