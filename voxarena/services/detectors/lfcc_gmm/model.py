"""LFCC-GMM: the ASVspoof 2019/2021 baseline countermeasure.

Two GMMs over LFCC frames, one trained on bona fide speech and one on spoofed speech; the score of
a clip is the average over its frames of log p(x|bona fide) - log p(x|spoof) (higher = more bona
fide). That frame-average is not a likelihood ratio; the service maps it to an LLR with the logistic
calibration fitted on dev at training time (see ``voxarena.services.detectors.training``).

Segment scores (partial fakes), natively at 20 ms: the mean frame log-likelihood ratio of the LFCC frames
whose centre falls in each 20 ms (two frames of the 10 ms shift; a segment at the clip's end with no frame
centre takes the nearest frame's), uncalibrated, on the scale of the utterance score before calibration.

Streaming, natively (``stream.py``): the mean frame LLR accumulated as frames come, each running score
the Score of the audio seen so far (at 16 kHz, to rounding).

Weights live in ``weights/`` (or ``$VOXARENA_LFCC_GMM_WEIGHTS``): ``lfcc_gmm.npz`` and
``metadata.json``; the service refuses to start when the npz does not hash to the recorded sha256.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.segments import segment_count
from voxarena.services.detectors.trained import TrainedDetector, WeightsMismatch  # noqa: F401 (re-exported)

from .gmm import DiagonalGmm
from .lfcc import LfccConfig, frame_segments, lfcc
from .stream import LfccGmmStream

WEIGHTS_FILE = "lfcc_gmm.npz"


class LfccGmmModel(TrainedDetector):
    name = "lfcc-gmm"
    version = "1.3.0"  # 1.2: native 20 ms segment scores; 1.3: native streaming (utterance scores unchanged)
    licence = "Apache-2.0 (VoxArena implementation of the ASVspoof baseline; weights trained on LibriSpeech, CC BY 4.0)"
    family = "HANDCRAFTED_FRONT_END"
    native_sample_rate = 16000
    timing_scope = "score: resample to 16 kHz (soxr HQ) + LFCC + two GMM likelihoods, batch averaged per clip"
    max_batch_size = 64
    max_seconds = 600.0
    weight_files = (WEIGHTS_FILE,)
    weights_env = "VOXARENA_LFCC_GMM_WEIGHTS"
    segment_hop_seconds = 0.02
    # Streams natively (stream.py): frame LLRs accumulated, a running score every 0.2 s of audio.
    stream_mode = "NATIVE"
    stream_hop_seconds = 0.2

    def load_weights(self, directory: Path, meta: dict) -> None:
        data = np.load(directory / WEIGHTS_FILE)
        self._bona, self._spoof = (
            DiagonalGmm(data[f"{k}_weights"], data[f"{k}_means"], data[f"{k}_variances"]) for k in ("bonafide", "spoof")
        )
        self._cfg = LfccConfig(**meta["lfcc"])

    def parameter_count(self) -> int:
        return int(sum(g.weights.size + g.means.size + g.variances.size for g in (self._bona, self._spoof)))

    @property
    def lfcc_config(self) -> LfccConfig:
        return self._cfg

    def frame_llrs(self, clip: AudioClip) -> np.ndarray:
        """log p(x|bona fide) - log p(x|spoof) of each LFCC frame of the clip."""
        x = resample(clip.samples, clip.sample_rate, self._cfg.sample_rate)
        return self.llr_of_features(lfcc(x, self._cfg))

    def llr_of_features(self, feats: np.ndarray) -> np.ndarray:
        return self._bona.frame_log_likelihood(feats) - self._spoof.frame_log_likelihood(feats)

    def open_stream(self, sample_rate: int, options: dict[str, str]) -> LfccGmmStream:
        return LfccGmmStream(self, sample_rate, options)

    def score_clip(self, clip: AudioClip) -> float:
        return float(np.mean(self.frame_llrs(clip)))

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        return [self.score_clip(c) for c in clips]

    def segment_batch(self, clips: list[AudioClip], options: list[dict[str, str]]) -> list[list[float]]:
        return [self.segments_of(c) for c in clips]

    def segments_of(self, clip: AudioClip) -> list[float]:
        n = segment_count(clip.samples.size, clip.sample_rate, self.segment_hop_seconds)
        return frame_segments(self.frame_llrs(clip), n, self.segment_hop_seconds, self._cfg).tolist()
