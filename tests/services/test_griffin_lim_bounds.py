"""griffin-lim's options bound its time and memory: options whose spectrogram or iteration work is over
the bounds are INVALID_ARGUMENT naming them, before any work; the worst options inside the bounds stay
under a stated peak RSS; the bounded mel inversion gives the numbers of librosa's NNLS over the same
blocks (the shortcut only skips scipy's set-up when its start already converged)."""

from __future__ import annotations

import subprocess
import sys
import time

import grpc
import librosa
import numpy as np
import pytest

from voxarena.codec import AudioClip, encode_audio, read_audio_file
from voxarena.sdk.testing import serve_in_process
from voxarena.services.generators.griffin_lim import model as gl
from voxarena.v1 import generator_pb2

PEAK_RSS_MB = 1024  # the stated bound for the worst options inside the bounds (measured ~0.5 GB)


@pytest.fixture(scope="module")
def stub():
    with serve_in_process(gl.GriffinLimModel(), "[::]:0") as served:
        yield served.stub()


def _reconstruct(stub, seconds: float, **options: str):
    source = AudioClip((np.random.default_rng(0).uniform(-0.1, 0.1, int(seconds * 16000))).astype(np.float32), 16000)
    request = generator_pb2.SynthesizeRequest(
        request_id="gl", seed=1, task=generator_pb2.RECONSTRUCT, source_audio=encode_audio(source), parameters=options
    )
    return stub.Synthesize(request, timeout=60)


@pytest.mark.parametrize(
    ("options", "named", "bound"),
    [
        ({"n_fft": "4096", "hop_length": "64"}, ("n_fft=4096", "hop_length=64"), "(memory)"),
        ({"n_fft": "1024", "hop_length": "64"}, ("n_fft=1024", "hop_length=64"), "(memory)"),
        ({"n_iter": "500", "n_fft": "4096", "hop_length": "512"}, ("n_iter=500", "n_fft=4096"), "(time)"),
    ],
)
def test_options_over_the_bounds_are_refused_before_any_work(stub, options, named, bound):
    t0 = time.perf_counter()
    with pytest.raises(grpc.RpcError) as err:
        _reconstruct(stub, 120.0, **options)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert all(n in err.value.details() for n in named) and bound in err.value.details(), err.value.details()
    assert time.perf_counter() - t0 < 5  # refused from the sizes, not after a computation


def test_check_work_bounds():
    gl.check_work(120 * 16000, 32, 1024, 256)  # the defaults on the longest source pass
    gl.check_work(120 * 16000, 1, 4096, 512)  # the worst memory inside the bounds (7.7M values)
    with pytest.raises(gl.InvalidArgument, match="at most n_iter=65"):  # 1e9 // (15001 frames x 1024)
        gl.check_work(120 * 16000, 66, 1024, 128)
    gl.check_work(120 * 16000, 65, 1024, 128)


def test_bounded_inversion_matches_librosa_nnls_over_the_same_blocks(speech_dir):
    x = read_audio_file(str(sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[0])).as_float32()
    x = x[: 3 * 16000]
    for n_fft, hop, n_mels, scale in ((1024, 256, 80, 1.0), (4096, 512, 20, 1.0), (512, 128, 40, 1e4)):
        # scale 1e4: a start far from converged, so the L-BFGS-B path runs too
        mel = scale * librosa.feature.melspectrogram(
            y=x, sr=16000, n_fft=n_fft, hop_length=hop, n_mels=n_mels, power=1.0, fmax=8000
        )
        basis = librosa.filters.mel(sr=16000, n_fft=n_fft, n_mels=n_mels, fmax=8000, dtype=mel.dtype)
        step = max(1, gl.NNLS_BLOCK_VALUES // basis.shape[1])
        expected = np.concatenate(
            [
                librosa.util.nnls(basis, mel[:, i : i + step], m=gl.NNLS_HISTORY, maxiter=gl.NNLS_MAX_ITER)
                for i in range(0, mel.shape[1], step)
            ],
            axis=1,
        )
        assert np.array_equal(gl.mel_to_linear(mel, 16000, n_fft), expected), (n_fft, hop, n_mels, scale)


PEAK_SCRIPT = """
import sys
import numpy as np
from voxarena.sdk import AudioClip, SynthesisRequest
from voxarena.services.generators.griffin_lim.model import GriffinLimModel
n_fft, hop = sys.argv[1], sys.argv[2]
model = GriffinLimModel()
model.load()
x = np.random.default_rng(0).uniform(-0.1, 0.1, 120 * 16000).astype(np.float32)
request = SynthesisRequest("peak", 1, "RECONSTRUCT", source_audio=AudioClip(x, 16000),
                           parameters={"n_iter": "2", "n_mels": "256", "n_fft": n_fft, "hop_length": hop})
out = model.synthesize(request)
assert out.audio.samples.size == x.size
# VmHWM, not ru_maxrss: ru_maxrss keeps the parent's peak across fork + exec (pytest may be GBs)
print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) // 1024)
"""


@pytest.mark.slow
@pytest.mark.parametrize(("n_fft", "hop"), [("4096", "512"), ("1024", "128")])
def test_worst_options_inside_the_bounds_stay_under_the_stated_peak(n_fft, hop):
    """120 s (the longest source), the largest spectrogram the bounds admit: peak RSS of a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, n_fft, hop], capture_output=True, text=True, timeout=600, check=True
    )
    peak_mb = int(done.stdout.split()[-1])
    assert peak_mb < PEAK_RSS_MB, f"n_fft={n_fft} hop_length={hop}: peak RSS {peak_mb} MB"
