"""The metric catalogue: every scorer metric's identity, written once and read without loading any metric.

A row says what a metric is: its name, the class that computes it (``"module:Class"``, imported only
when the metric is used), its direction, unit, whether a run computes it by default, the clip inputs it
needs, its result columns, how clips pool into a corpus figure, a one-line summary and the published
definition it follows. Everything else is a view of these rows:

- the scorer's registry (``voxarena.scorers.registry``: name -> class, and each ``Metric`` class's
  direction, needs, columns and aggregation, set from its row when the class is defined; GetInfo's
  ``MetricSpec`` reports them);
- ``HIGHER_IS_BETTER``, which the statistics core's composite scores read;
- ``DEFAULT_METRICS``, the orchestrator's ``scorer.metrics`` default;
- ``orchestrator metrics list`` and ``orchestrator metrics describe NAME``.

It lives at the package root and imports only the standard library, so each layer that needs it (the
statistics core, the scorer, the orchestrator) reads it without importing another layer or a metric
backend (VERSA's lesson: listing and describing metrics is cheap). The detailed account of an
implementation (its window sizes, limits, package versions) stays on its class, as ``description``,
beside the constants it quotes.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass
from typing import Any

# What a metric may need of a clip besides the generated audio: the ``ClipRequest`` fields (scorer.proto)
# a clip without them is refused by the metric, in its row.
INPUTS: dict[str, str] = {
    "text": "the words the clip should say (ClipRequest.text: the prompt or transcript)",
    "speaker_reference": "audio of the target speaker (ClipRequest.speaker_reference)",
    "source_reference": (
        "the clip's source, or the original recording of the same words (ClipRequest.source_reference); "
        "the time-aligned metrics also need reference_aligned"
    ),
    "timing": "the generator's own timing of the call (ClipRequest.generation_timing)",
}


class UnknownMetric(KeyError):
    """A metric name the catalogue does not hold; the message names the closest and every known one."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class MetricEntry:
    """One metric's row."""

    name: str  # the name a run config, a request and the result tables use
    implementation: str  # "module:Class" computing it; imported on first use only
    higher_is_better: bool  # its direction; its extra columns share it
    unit: str
    default: bool  # computed when a run's config names no metrics
    needs: tuple[str, ...]  # clip inputs beyond the audio (INPUTS)
    columns: tuple[str, ...]  # result columns, the first the headline
    aggregation: str  # how the clips' raw values pool into the corpus figure
    summary: str  # one line: what it measures
    reference: str  # the published definition it follows

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in INPUTS]
        if unknown:
            raise ValueError(f"metric {self.name!r}: unknown inputs {unknown}; inputs are {', '.join(INPUTS)}")
        module, _, cls = self.implementation.partition(":")
        if not module or not cls:
            raise ValueError(f"metric {self.name!r}: implementation {self.implementation!r} is not 'module:Class'")
        if not self.columns:
            raise ValueError(f"metric {self.name!r}: no result columns")
        if "\n" in self.summary:
            raise ValueError(f"metric {self.name!r}: the summary is one line")

    @property
    def direction(self) -> str:
        return "higher" if self.higher_is_better else "lower"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _row(
    name: str,
    implementation: str,
    higher_is_better: bool,
    unit: str,
    *,
    default: bool,
    aggregation: str,
    summary: str,
    reference: str,
    needs: tuple[str, ...] = (),
    columns: tuple[str, ...] = (),
) -> MetricEntry:
    """A row; most metrics have one column, named after them."""
    return MetricEntry(
        name,
        implementation,
        higher_is_better,
        unit,
        default,
        needs,
        columns or (name,),
        aggregation,
        summary,
        reference,
    )


_WORD_ERRORS = "sum(S+D+I) / sum(S+D+H) over words"
_ALIGNED = ("source_reference",)

# In the order of the default list (a run's config default; result tables follow it), then the optional ones.
_ROWS = (
    _row(
        "wer",
        "voxarena.scorers.asr:WhisperWER",
        False,
        "fraction of reference words (0 is perfect; insertions can take it past 1)",
        default=True,
        needs=("text",),
        aggregation=_WORD_ERRORS,
        summary="Word error rate of a Whisper tiny.en transcript of the clip against its prompt.",
        reference="WER over a Levenshtein alignment (jiwer counts) after Whisper's English text normaliser "
        "(Radford et al. 2022).",
    ),
    _row(
        "cer",
        "voxarena.scorers.asr:WhisperCER",
        False,
        "fraction of reference characters (0 is perfect)",
        default=True,
        needs=("text",),
        aggregation="sum(S+D+I) / sum(S+D+H) over characters",
        summary="Character error rate of the same Whisper transcript against the prompt.",
        reference="CER over a Levenshtein alignment of characters (jiwer counts) after Whisper's English text "
        "normaliser.",
    ),
    _row(
        "sim",
        "voxarena.scorers.speaker:ResemblyzerSIM",
        True,
        "cosine similarity (-1 to 1)",
        default=True,
        needs=("speaker_reference",),
        aggregation="mean of per-clip cosine",
        summary="Speaker similarity of the clip to the target speaker's audio.",
        reference="Cosine of GE2E speaker embeddings (Wan et al. 2018), Resemblyzer's pretrained encoder and "
        "preprocessing.",
    ),
    _row(
        "rtf",
        "voxarena.scorers.timing:RealTimeFactor",
        False,
        "seconds of compute per second of audio",
        default=True,
        needs=("timing",),
        aggregation="sum(generation wall seconds) / sum(generated audio seconds)",
        summary="Real-time factor: seconds of the generator's own call per second of audio it produced.",
        reference="Real-time factor (processing time / audio duration), pooled over the corpus; the timing scope "
        "is the generator's own (GetInfo).",
    ),
    _row(
        "dnsmos",
        "voxarena.scorers.quality:Dnsmos",
        True,
        "MOS (1 to 5)",
        default=True,
        columns=("dnsmos", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808"),
        aggregation="mean per column",
        summary="Predicted quality without a reference: DNSMOS overall, with signal, background and P.808 columns.",
        reference="DNSMOS P.835 (Reddy et al. 2022) and P.808 (Reddy et al. 2021), as Microsoft's dnsmos_local.py "
        "computes them.",
    ),
    _row(
        "pesq",
        "voxarena.scorers.reference:Pesq",
        True,
        "MOS-LQO (about 1 to 4.6)",
        default=True,
        needs=_ALIGNED,
        aggregation="mean",
        summary="Perceptual speech quality of the clip against its time-aligned source.",
        reference="ITU-T P.862.2 (wide band, 16 kHz); P.862.1 MOS-LQO (narrow band) for 8 kHz clips.",
    ),
    _row(
        "stoi",
        "voxarena.scorers.reference:Stoi",
        True,
        "intelligibility index (up to 1)",
        default=True,
        needs=_ALIGNED,
        columns=("stoi", "estoi"),
        aggregation="mean",
        summary="Short-time objective intelligibility, and its extended form, against the time-aligned source.",
        reference="STOI (Taal et al. 2011) and ESTOI (Jensen & Taal 2016), as pystoi computes them.",
    ),
    _row(
        "psnr",
        "voxarena.scorers.reference:Psnr",
        True,
        "dB",
        default=True,
        needs=_ALIGNED,
        aggregation="mean",
        summary="Peak signal-to-noise ratio of the clip's spectrogram magnitudes against the reference's.",
        reference="The SoK paper's PSNR (appendix F): 10 log10(1 / MSE) of max-normalised STFT magnitudes.",
    ),
    _row(
        "ssim",
        "voxarena.scorers.reference:Ssim",
        True,
        "structural similarity index (up to 1)",
        default=True,
        needs=_ALIGNED,
        aggregation="mean",
        summary="Structural similarity of the clip's spectrogram to the time-aligned source's.",
        reference="SSIM (Wang et al. 2004; scikit-image's structural_similarity) of the PSNR spectrograms.",
    ),
    _row(
        "ls_mse",
        "voxarena.scorers.reference:LogMelMse",
        False,
        "squared difference of natural-log mel magnitudes",
        default=True,
        needs=_ALIGNED,
        aggregation="mean",
        summary="Log-mel spectral distance of the clip to the time-aligned source.",
        reference="The SoK paper's LS-MSE (appendix F): mean squared error of log mel spectrograms.",
    ),
    _row(
        "mcd",
        "voxarena.scorers.reference:MelCepstralDistortion",
        False,
        "dB",
        default=True,
        needs=_ALIGNED,
        aggregation="mean",
        summary="Mel-cepstral distortion to the reference, frames aligned by DTW (any pair of clips).",
        reference="MCD (Kubichek 1993) with DTW alignment, on WORLD envelopes through pysptk's sp2mc.",
    ),
    _row(
        "wer_pocketsphinx",
        "voxarena.scorers.asr_pocketsphinx:PocketsphinxWER",
        False,
        "fraction of reference words (0 is perfect)",
        default=False,
        needs=("text",),
        aggregation=_WORD_ERRORS,
        summary="Word error rate by a second ASR (PocketSphinx), a cross-check of wer.",
        reference="As wer (jiwer counts, Whisper's English normaliser), transcribed by CMU PocketSphinx 5.",
    ),
    _row(
        "mos_distill",
        "voxarena.scorers.mos_distill:MosDistill",
        True,
        "MOS (1 to 5)",
        default=False,
        aggregation="mean",
        summary="Predicted MOS without a reference, by DistillMOS.",
        reference="DistillMOS (Stahl & Gamper 2025), distillmos 0.9.1's own inference path.",
    ),
    _row(
        "cloneval",
        "voxarena.scorers.cloneval:ClonEvalFeatures",
        True,
        "cosine similarity per feature (-1 to 1)",
        default=False,
        needs=("speaker_reference",),
        columns=tuple(
            f"cloneval_{f}" for f in ("pitch", "mel", "centroid", "flatness", "rolloff", "rms", "tempogram", "chroma")
        ),
        aggregation="mean per feature",
        summary="Acoustic-feature similarities (pitch, mel, spectral shape, energy, rhythm, chroma) to the speaker "
        "reference.",
        reference="ClonEval (Christop et al. 2025): cosine of librosa feature rows over the common length.",
    ),
)


def _index(rows: tuple[MetricEntry, ...]) -> dict[str, MetricEntry]:
    index: dict[str, MetricEntry] = {}
    for row in rows:
        if row.name in index:
            raise ValueError(f"metric {row.name!r} has two rows in the catalogue")
        index[row.name] = row
    return index


METRICS: dict[str, MetricEntry] = _index(_ROWS)

# Views of the rows; nothing else states these facts.
DEFAULT_METRICS: tuple[str, ...] = tuple(name for name, row in METRICS.items() if row.default)
HIGHER_IS_BETTER: dict[str, bool] = {name: row.higher_is_better for name, row in METRICS.items()}


def metric_entry(name: str) -> MetricEntry:
    """The row of ``name``, or UnknownMetric naming the closest name and every known one."""
    if name not in METRICS:
        close = difflib.get_close_matches(name, METRICS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        raise UnknownMetric(f"unknown metric {name!r}{hint} Known metrics: {', '.join(sorted(METRICS))}")
    return METRICS[name]
