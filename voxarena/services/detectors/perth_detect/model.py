"""perth-detect: is Resemble AI's Perth-Net watermark in the clip? A detector whose score is its absence.

The package's ``PerthImplicitWatermarker.get_watermark`` without torch (``voxarena.services.watermark.perth``:
the clip to 32 kHz by scipy's polyphase filter as the package does, numpy STFT, the decoder's three stacks
converted to ONNX by ``make models`` and checked against the package). The decoder answers a confidence per
clip, near 1 when marked and near 0 when not; the package clips it to [0, 1] and rounds it. The service
answers **score = 0.5 - confidence**, unclipped: higher = more bona fide (no mark), so the matrix, EER and the
survival table read it like any detector's; 0 is the package's own rounding threshold. Not calibrated
(``is_llr`` false): a watermark detector's scores say marked or not, not how likely a voice is fake.

The score covers the whole clip (the decoder averages over its loud frames); a clip with no loud frame has
no answer from the package (a division by zero): here it scores 0.5 (no mark found).
"""

from __future__ import annotations

from voxarena.codec import AudioClip
from voxarena.converted import load_converted
from voxarena.sdk import DetectorModel
from voxarena.services.watermark.perth import CONVERTED_NAME, SOURCE, PerthNet


class PerthDetectModel(DetectorModel):
    name = "perth-detect"
    version = f"1.0.0+{SOURCE.package}-{SOURCE.version}"
    licence = f"{SOURCE.licence} (Perth-Net code and weights, Resemble AI); VoxArena service Apache-2.0"
    family = "WATERMARK_DECODER"
    deterministic = True
    timing_scope = "score: resample to 32 kHz (polyphase) + STFT + three ONNX decoder stacks, per clip"
    max_batch_size = 16
    min_seconds = 0.05
    max_seconds = 600.0
    # A mark is read from whole clips; a sliding window of 4 s every second streams it.
    stream_hop_seconds = 1.0

    def load(self) -> None:
        self.converted = load_converted(CONVERTED_NAME, source_sha256=SOURCE.sha256)
        self.net = PerthNet.load(self.converted.directory)

    def metadata(self) -> dict[str, str]:
        return self.converted.metadata()

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        return [0.5 - self.net.detect(c.as_float32(), c.sample_rate) for c in clips]
