"""Audio longer than a response can carry is INVALID_ARGUMENT saying how long it is, not grpc's
RESOURCE_EXHAUSTED on the send (which the orchestrator would retry as a busy service)."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

from voxarena.sdk import AudioClip, GeneratorModel, Option, SynthesisResult
from voxarena.sdk.testing import serve_in_process
from voxarena.v1 import generator_pb2


class LongGenerator(GeneratorModel):
    """Says ``seconds`` of 16 kHz float32 audio (4 bytes a sample)."""

    name = "long"
    family = "VOCODER_DSP"
    timing_scope = "synthesis: test"
    options = (Option("seconds", "output duration, 1..120", "1"),)

    def load(self) -> None:
        pass

    def synthesize(self, request):
        seconds = self.float_option(request.parameters, "seconds", 1, 120)
        return SynthesisResult(AudioClip(np.full(int(seconds * 16000), 0.1, np.float32), 16000))


@pytest.fixture
def stub():
    with serve_in_process(LongGenerator(), "[::]:0", max_message_mb=1) as served:
        yield served.stub()


def _say(stub, seconds: float):
    request = generator_pb2.SynthesizeRequest(
        request_id="long-1", seed=1, task=generator_pb2.TTS, text="hi", parameters={"seconds": str(seconds)}
    )
    return stub.Synthesize(request, timeout=30)


def test_audio_that_fits_is_returned(stub):
    assert _say(stub, 10).audio.sample_rate == 16000  # 640 kB in a 1 MiB message


def test_audio_longer_than_a_response_is_invalid_argument_with_its_size(stub):
    with pytest.raises(grpc.RpcError) as err:
        _say(stub, 20)  # 1.28 MB
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "long-1" in err.value.details() and "20 s (1.2 MiB)" in err.value.details(), err.value.details()
