"""world-vocoder's frame_period bounds its memory: a request with more analysis frames than
MAX_WORLD_FRAMES is INVALID_ARGUMENT naming the option before any analysis; the worst request inside the
bound stays under a stated peak RSS."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from voxarena.sdk import AudioClip, InvalidArgument, SynthesisRequest
from voxarena.services.generators.world_vocoder import model as world

PEAK_RSS_MB = 1024  # stated bound at MAX_WORLD_FRAMES (measured 145 MB per 12000 frames of growth)


def _request(seconds: float, frame_period: str) -> SynthesisRequest:
    x = np.random.default_rng(0).uniform(-0.1, 0.1, int(seconds * 16000)).astype(np.float32)
    return SynthesisRequest(
        "w",
        1,
        "RECONSTRUCT",
        source_audio=AudioClip(x, 16000),
        parameters={"frame_period": frame_period, "f0_method": "dio"},
    )


def test_too_many_frames_is_refused_before_any_analysis():
    model = world.WorldVocoderModel()
    model.load()
    t0 = time.perf_counter()
    with pytest.raises(InvalidArgument, match=r"frame_period=1 ms on a 120.0 s source: 120001 analysis frames"):
        model.synthesize(_request(120.0, "1"))
    assert time.perf_counter() - t0 < 2.0


PEAK_SCRIPT = """
import sys
import numpy as np
from voxarena.sdk import AudioClip, SynthesisRequest
from voxarena.services.generators.world_vocoder.model import MAX_WORLD_FRAMES, WorldVocoderModel
seconds = (MAX_WORLD_FRAMES - 1) / 1000  # 1 ms frames: exactly the bound
x = np.random.default_rng(0).uniform(-0.1, 0.1, int(seconds * 16000)).astype(np.float32)
model = WorldVocoderModel()
model.load()
out = model.synthesize(SynthesisRequest("peak", 1, "RECONSTRUCT", source_audio=AudioClip(x, 16000),
                                        parameters={"frame_period": "1", "f0_method": "dio"}))
assert out.audio.samples.size == x.size
# VmHWM, not ru_maxrss: ru_maxrss keeps the parent's peak across fork + exec (pytest may be GBs)
print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) // 1024)
"""


@pytest.mark.slow
def test_the_most_frames_allowed_stay_under_the_stated_peak():
    done = subprocess.run([sys.executable, "-c", PEAK_SCRIPT], capture_output=True, text=True, timeout=900, check=True)
    peak_mb = int(done.stdout.split()[-1])
    assert peak_mb < PEAK_RSS_MB, f"{world.MAX_WORLD_FRAMES} frames: peak RSS {peak_mb} MB"
