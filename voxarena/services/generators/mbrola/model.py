"""MBROLA diphone concatenation with the espeak-ng front end (voices us1, us2, us3).

OPTIONAL and NON-FREE: the MBROLA voices come from Debian contrib/non-free and their licence
forbids commercial use and sale. This service is kept out of the default stacks; opt in with
``make setup-mbrola`` (adds Debian contrib/non-free, installs mbrola and mbrola-us1..3).
"""

from __future__ import annotations

from pathlib import Path

from voxarena.sdk import Voice
from voxarena.services.generators.espeak_ng.model import EspeakNgModel

MBROLA_VOICE_DIR = Path("/usr/share/mbrola")


class MbrolaModel(EspeakNgModel):
    name = "mbrola"
    licence = (
        "NON-FREE, OPTIONAL: mbrola binary AGPL-3.0; voices us1-us3 (Debian contrib/non-free) licensed for "
        "non-commercial use only, sale forbidden; espeak-ng front end GPL-3.0-or-later"
    )
    family = "CONCATENATIVE"
    native_sample_rate = 16000
    timing_scope = "synthesis: espeak-ng + mbrola process run (start-up + synthesis + WAV write)"
    voices = (
        Voice("mb-us1", "en-US", "MBROLA us1, American English female diphones"),
        Voice("mb-us2", "en-US", "MBROLA us2, American English male diphones"),
        Voice("mb-us3", "en-US", "MBROLA us3, American English male diphones"),
    )

    def _check_voices(self) -> None:
        missing = [v.name for v in self.voices if not (MBROLA_VOICE_DIR / v.name[3:]).exists()]
        if missing:
            raise RuntimeError(
                f"MBROLA voices {', '.join(missing)} are not installed under {MBROLA_VOICE_DIR}; "
                "they are non-free and optional: run `make setup-mbrola`"
            )

    def metadata(self) -> dict[str, str]:
        return {
            "engine": self._version,
            "non_free": "true",
            "licence_note": "MBROLA voices: non-commercial use only; do not sell results' audio",
        }
