"""perth-embed: Resemble AI's Perth-Net implicit watermark, embedded as the vendor ships it (kind WATERMARK).

The package's ``PerthImplicitWatermarker.apply_watermark`` without torch (``voxarena.services.watermark.perth``:
numpy STFT, the encoder converted to ONNX by ``make models`` and checked against the package): the clip goes to
32 kHz (soxr HQ), its 0-2 kHz magnitudes get the encoder's residual on the loud frames, the phase is kept, and
it comes back to the input's rate. As the package, the output is a little shorter than the input (its inverse
STFT drops the last partial hop at 32 kHz: under 10 ms). The answer is clipped at full scale. No options, no
randomness: the same clip gives the same bytes.
"""

from __future__ import annotations

import numpy as np

from voxarena.codec import AudioClip
from voxarena.converted import load_converted
from voxarena.sdk import InvalidArgument, TransformModel, TransformRequest, TransformResult
from voxarena.services.watermark.perth import CONVERTED_NAME, MIN_SAMPLES, SAMPLE_RATE, SOURCE, PerthNet


class PerthEmbedModel(TransformModel):
    name = "perth-embed"
    version = f"1.0.0+{SOURCE.package}-{SOURCE.version}"
    licence = f"{SOURCE.licence} (Perth-Net code and weights, Resemble AI); VoxArena service Apache-2.0"
    kind = "WATERMARK"
    deterministic = True
    timing_scope = "transform: resample to 32 kHz + STFT + ONNX encoder + inverse STFT + resample back"
    max_seconds = 600.0
    options = ()
    ranges = {}

    def load(self) -> None:
        self.converted = load_converted(CONVERTED_NAME, source_sha256=SOURCE.sha256)
        self.net = PerthNet.load(self.converted.directory)

    def metadata(self) -> dict[str, str]:
        return self.converted.metadata()

    def transform(self, request: TransformRequest) -> TransformResult:
        clip = request.audio
        if clip.samples.size * SAMPLE_RATE < MIN_SAMPLES * clip.sample_rate:
            raise InvalidArgument(
                f"{clip.samples.size / clip.sample_rate:.3f} s is too short: Perth-Net needs "
                f"{MIN_SAMPLES / SAMPLE_RATE:.3f} s or more"
            )
        marked = np.clip(self.net.embed(clip.as_float32(), clip.sample_rate), -1.0, 1.0).astype(np.float32)
        return TransformResult(AudioClip(marked, clip.sample_rate), [f"perth-net watermark ({SOURCE.version})"])
