"""Real-time factor of every generator in-process and through gRPC, and the RPC overhead.

    python benchmarks/generator_rtf.py [--repeats N] [--only NAME ...]

For each generator: a ~5-second utterance (TTS: a prompt; RECONSTRUCT/CONVERT: a 5.0 s cut of a
LibriSpeech clip), synthesised N times by calling the model directly in this process, then N times
through a real gRPC service process started as the orchestrator starts it (client wall time, so
serialisation, transport and the SDK are included). Prints RTF in-process, RTF via gRPC, their ratio
and the per-call overhead as a share of a 5-second utterance (target: under 5% for the fastest engine).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from voxarena.codec import AudioClip, decode_audio, encode_audio, read_audio_file  # noqa: E402
from voxarena.orchestrator.fleet.clients import GeneratorClient  # noqa: E402
from voxarena.orchestrator.fleet.local_services import KNOWN_SERVICES, LocalService  # noqa: E402
from voxarena.sdk.model import SynthesisRequest  # noqa: E402
from voxarena.v1 import generator_pb2  # noqa: E402

SPEECH = Path(os.environ.get("VOXARENA_SPEECH", REPO.parent / "shared" / "data" / "speech"))
TEXT = "After early nightfall the yellow lamps would light up here and there in the squalid quarter."
GENERATORS = {  # name -> (model class, task)
    "piper-vits": ("voxarena.services.generators.piper_vits.model:PiperVitsModel", "TTS"),
    "espeak-ng": ("voxarena.services.generators.espeak_ng.model:EspeakNgModel", "TTS"),
    "mbrola": ("voxarena.services.generators.mbrola.model:MbrolaModel", "TTS"),
    "flite": ("voxarena.services.generators.flite.model:FliteModel", "TTS"),
    "festival-hts": ("voxarena.services.generators.festival_hts.model:FestivalHtsModel", "TTS"),
    "world-vocoder": ("voxarena.services.generators.world_vocoder.model:WorldVocoderModel", "RECONSTRUCT"),
    "griffin-lim": ("voxarena.services.generators.griffin_lim.model:GriffinLimModel", "RECONSTRUCT"),
    "mlsa-vocoder": ("voxarena.services.generators.mlsa_vocoder.model:MlsaVocoderModel", "RECONSTRUCT"),
    "world-vc": ("voxarena.services.generators.world_vc.model:WorldVcModel", "CONVERT"),
}


def five_seconds(path: Path) -> AudioClip:
    clip = read_audio_file(str(path))
    return AudioClip(clip.samples[: 5 * clip.sample_rate].copy(), clip.sample_rate)


def in_process(
    name: str, path: str, task: str, source: AudioClip, reference: AudioClip, repeats: int
) -> tuple[SynthesisRequest, float, float]:
    """The model called directly in this process: (the request, its duration in s, median wall s)."""
    module, cls = path.split(":")
    model = getattr(importlib.import_module(module), cls)()
    model.load()
    params = {o.name: o.default for o in model.options}
    if name == "piper-vits":
        params.update(noise_scale="0", noise_w_scale="0")
    req = SynthesisRequest(
        request_id="bench",
        seed=1,
        task=task,
        text=TEXT if task == "TTS" else "",
        voice=model.voices[0].name if model.voices else "",
        parameters=params,
        source_audio=source if task in ("RECONSTRUCT", "CONVERT") else None,
        reference_audio=reference if task == "CONVERT" else None,
    )
    model.synthesize(req)  # warm-up
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = model.synthesize(req)
        walls.append(time.perf_counter() - t0)
    return req, result.audio.duration, statistics.median(walls)


def via_grpc(name: str, req: SynthesisRequest, duration: float, repeats: int) -> float:
    """The same request through a gRPC service process started as the orchestrator starts it: median
    client wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        svc = LocalService(name, KNOWN_SERVICES[name], Path(tmp) / "log")
        svc.start()
        address = svc.wait_ready(300)
        client = GeneratorClient(name, address, 300, 0, 0.1)
        msg = generator_pb2.SynthesizeRequest(
            request_id="bench",
            seed=1,
            task=generator_pb2.Task.Value(req.task),
            text=req.text,
            voice=req.voice,
            parameters=req.parameters,
        )
        if req.source_audio is not None:
            msg.source_audio.CopyFrom(encode_audio(req.source_audio))
        if req.reference_audio is not None:
            msg.reference_audio.CopyFrom(encode_audio(req.reference_audio))
        client.call("Synthesize", msg)  # warm-up
        grpc_walls = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            resp, _ = client.call("Synthesize", msg)
            grpc_walls.append(time.perf_counter() - t0)
        assert abs(decode_audio(resp.audio).duration - duration) < 0.01
        client.close()
        svc.stop()
    return statistics.median(grpc_walls)


def print_table(rows: list[tuple[str, str, float, float, float, float]]) -> None:
    print(
        f"\n{'generator':<14} {'task':<12} {'audio s':>7} {'RTF in-proc':>11} {'RTF gRPC':>9} {'ratio':>6} "
        f"{'overhead ms':>11} {'% of 5 s':>8}"
    )
    for name, task, dur, r_in, r_grpc, over in rows:
        print(
            f"{name:<14} {task:<12} {dur:7.2f} {r_in:11.4f} {r_grpc:9.4f} {r_grpc / r_in:6.2f} {1000 * over:11.1f} "
            f"{100 * over / 5.0:8.2f}"
        )
    fastest = min(rows, key=lambda r: r[3])
    print(
        f"\nfastest engine: {fastest[0]} (RTF {fastest[3]:.4f}); RPC overhead {1000 * fastest[5]:.1f} ms = "
        f"{100 * fastest[5] / 5.0:.2f}% of a 5-second utterance (target < 5%)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--only", nargs="*", default=None)
    args = p.parse_args()
    files = sorted((SPEECH / "LibriSpeech" / "test-other").glob("*/*/*.flac"))
    source, reference = five_seconds(files[0]), five_seconds(files[20])
    rows = []
    for name, (path, task) in GENERATORS.items():
        if args.only and name not in args.only:
            continue
        if name == "mbrola" and not shutil.which("mbrola"):
            print(f"{name}: skipped (optional, non-free: make setup-mbrola)")
            continue
        req, duration, inproc = in_process(name, path, task, source, reference, args.repeats)
        via = via_grpc(name, req, duration, args.repeats)
        rows.append((name, task, duration, inproc / duration, via / duration, via - inproc))
    print_table(rows)


if __name__ == "__main__":
    main()
