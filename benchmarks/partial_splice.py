"""What splicing a partial fake costs beside the generator call that makes its fake speech.

    python benchmarks/partial_splice.py [--items N]

For N LibriSpeech test-clean clips with transcripts: the aligner's word boundaries (the scorer's
``alignment.align``, timed apart), then per method the generator call in this process (PARTIAL_VOCODED:
world-vocoder and griffin-lim re-synthesise the whole clip; PARTIAL_WORDS: piper says the new words) and
the splice (``run.partial.make_partial``: resampling, silence trim, loudness match, crossfades). Prints
the time of each per clip and the ratio splice / generator call (target: under 5 %), measured in one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import soundfile as sf  # noqa: E402

from voxarena.codec import AudioClip  # noqa: E402
from voxarena.orchestrator.run.partial import PartialConfig, choose_spans, make_partial, substitutes  # noqa: E402
from voxarena.scorers.alignment import align  # noqa: E402
from voxarena.sdk.model import SynthesisRequest  # noqa: E402

SPEECH = Path(os.environ.get("VOXARENA_SPEECH", REPO.parent / "shared" / "data" / "speech"))


def clips(n: int) -> list[tuple[str, AudioClip, str]]:
    out = []
    for trans in sorted((SPEECH / "LibriSpeech" / "test-clean").glob("*/*/*.trans.txt")):
        for line in trans.read_text().splitlines():
            utt, text = line.split(" ", 1)
            x, rate = sf.read(trans.parent / f"{utt}.flac", dtype="float32")
            out.append((utt, AudioClip(x, rate), text))
    return out[:n]


def generators() -> dict[str, tuple[object, str]]:
    from voxarena.services.generators.griffin_lim.model import GriffinLimModel
    from voxarena.services.generators.piper_vits.model import PiperVitsModel
    from voxarena.services.generators.world_vocoder.model import WorldVocoderModel

    models = {"world-vocoder": (WorldVocoderModel(), "RECONSTRUCT"), "griffin-lim": (GriffinLimModel(), "RECONSTRUCT")}
    models["piper-vits"] = (PiperVitsModel(), "TTS")
    for model, _ in models.values():
        model.load()
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=8)
    args = parser.parse_args()
    cfg = PartialConfig(spans=2, min_words=1, max_words=3)
    models = generators()
    totals = {"align": 0.0, "generate": 0.0, "splice": 0.0}
    calls = 0
    for seed, (utt, clip, text) in enumerate(clips(args.items)):
        t0 = time.perf_counter()
        try:
            words = align(clip, text)
        except Exception as e:  # the run fails such an item alone; so does the benchmark
            print(f"{utt}: not aligned ({e})")
            continue
        totals["align"] += time.perf_counter() - t0
        for model, task in models.values():
            partial_task = "PARTIAL_VOCODED" if task == "RECONSTRUCT" else "PARTIAL_WORDS"
            spans = choose_spans(len(words), seed, partial_task, cfg)
            options = model.resolve_options({})
            if task == "RECONSTRUCT":
                request = SynthesisRequest(request_id=utt, seed=seed, task=task, source_audio=clip, parameters=options)
            else:
                first, last = spans[0]
                said = " ".join(substitutes(seed, [w for w, _, _ in words[first : last + 1]]))
                request = SynthesisRequest(request_id=utt, seed=seed, task=task, text=said, parameters=options)
            t0 = time.perf_counter()
            generated = model.synthesize(request).audio  # type: ignore[attr-defined]
            t1 = time.perf_counter()
            make_partial(partial_task, clip, words, spans, generated, cfg.crossfade_ms)
            t2 = time.perf_counter()
            totals["generate"] += t1 - t0
            totals["splice"] += t2 - t1
            calls += 1
    n = max(calls, 1)
    print(f"{calls} partial fakes from {args.items} clips and {len(models)} generators")
    print(f"  alignment per clip:       {1000 * totals['align'] / max(args.items, 1):8.1f} ms (the scorer's Align)")
    print(f"  generator call per fake:  {1000 * totals['generate'] / n:8.1f} ms")
    print(f"  splice per fake:          {1000 * totals['splice'] / n:8.1f} ms")
    print(f"  splice / generator calls: {totals['splice'] / max(totals['generate'], 1e-9):8.2%} (target: under 5 %)")
    both = (totals["splice"] + totals["align"]) / max(totals["generate"], 1e-9)
    print(f"  with the alignment too:   {both:8.2%} (one Align per clip, shared by its {len(models)} generators)")


if __name__ == "__main__":
    main()
