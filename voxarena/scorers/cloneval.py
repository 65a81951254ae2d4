"""ClonEval's acoustic-feature similarities (Christop et al., 2025), by its definition:

both clips at 16 kHz, truncated to the shorter one; librosa features with a 2048-point FFT and hop
512: pitch (pYIN, 65-2093 Hz), mel spectrogram (of the magnitude STFT, in dB re max), spectral
centroid, flatness and roll-off, RMS, tempogram and chromagram; for each feature, NaNs set to 0, the
cosine similarity between every row of one clip's feature matrix and every row of the other's
(a 1-D feature is one row), averaged. One column per feature, each averaged over clips.
"""

from __future__ import annotations

import numpy as np

from voxarena.codec import resample

from .registry import ClipInputs, Measurement, Metric, MetricInputError, mean_of

FEATURES = ("pitch", "mel", "centroid", "flatness", "rolloff", "rms", "tempogram", "chroma")
N_FFT, HOP, SR = 2048, 512, 16000
# Longest common length measured. pYIN decodes its pitch track by Viterbi over the whole clip, so it cannot
# be chunked to the same result; on a 600 s pair the scorer passed 1.49 GB and 13 minutes (on two loaded
# cores) before the features were done. Longer pairs fail in their row.
MAX_SECONDS = 120.0


def features(y: np.ndarray) -> dict[str, np.ndarray]:
    import librosa

    mag = np.abs(librosa.stft(y=y, n_fft=N_FFT, hop_length=HOP))
    onset = librosa.onset.onset_strength(y=y, sr=SR)
    return {
        "pitch": librosa.pyin(y=y, sr=SR, fmin=65, fmax=2093)[0],
        "mel": librosa.power_to_db(librosa.feature.melspectrogram(S=mag, sr=SR), ref=np.max),
        "centroid": librosa.feature.spectral_centroid(y=y, sr=SR, n_fft=N_FFT, hop_length=HOP),
        "flatness": librosa.feature.spectral_flatness(y=y, n_fft=N_FFT, hop_length=HOP),
        "rolloff": librosa.feature.spectral_rolloff(y=y, sr=SR, n_fft=N_FFT, hop_length=HOP),
        "rms": librosa.feature.rms(y=y),
        "tempogram": librosa.feature.tempogram(onset_envelope=onset, sr=SR, hop_length=HOP),
        "chroma": librosa.feature.chroma_stft(y=y, sr=SR, n_fft=N_FFT, hop_length=HOP),
    }


def mean_row_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = np.nan_to_num(a).reshape(1, -1) if np.ndim(a) < 2 else np.nan_to_num(a)
    b = np.nan_to_num(b).reshape(1, -1) if np.ndim(b) < 2 else np.nan_to_num(b)
    na, nb = np.linalg.norm(a, axis=1, keepdims=True), np.linalg.norm(b, axis=1, keepdims=True)
    a = np.divide(a, na, out=np.zeros_like(a), where=na > 0)
    b = np.divide(b, nb, out=np.zeros_like(b), where=nb > 0)
    return float(np.mean(a @ b.T))


class ClonEvalFeatures(Metric):
    name = "cloneval"
    description = (
        "ClonEval acoustic-feature cosine similarities between the clip and the speaker reference, over their "
        f"common length; a common length over {MAX_SECONDS:g} s is refused (pYIN's whole-clip decoding: time, memory)."
    )

    def measure(self, clip: ClipInputs) -> Measurement:
        if clip.speaker_reference is None:
            raise MetricInputError("no speaker reference audio")
        ref = resample(clip.speaker_reference.samples, clip.speaker_reference.sample_rate, SR)
        gen = resample(clip.audio.samples, clip.audio.sample_rate, SR)
        n = min(ref.size, gen.size)
        if n > MAX_SECONDS * SR:
            raise MetricInputError(
                f"common length {n / SR:.1f} s exceeds the {MAX_SECONDS:g} s cloneval measures (pYIN decodes the "
                "whole clip: time and memory)"
            )
        if n < N_FFT * 4:
            raise MetricInputError("clips too short for ClonEval features (under 0.5 s in common)")
        fr, fg = features(ref[:n]), features(gen[:n])
        return {f"cloneval.{f}": mean_row_cosine(fr[f], fg[f]) for f in FEATURES}, {}

    def aggregate(self, rows: list[dict[str, float]]) -> dict[str, float]:
        return {f"cloneval_{f}": mean_of(rows, f"cloneval.{f}") for f in FEATURES}
