"""The channel steps as a transform service (kind CHANNEL): it passes conformance and gives the bytes the
orchestrator's built-in steps give, alone and as a run condition beside the built-in one."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file
from voxarena.conformance import run_conformance
from voxarena.orchestrator.run.channel import apply_condition
from voxarena.sdk import TransformRequest
from voxarena.services.transforms.channel.model import ChannelModel


@pytest.fixture(scope="module")
def speech(speech_dir) -> AudioClip:
    path = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[1]
    clip = read_audio_file(str(path))
    return AudioClip(clip.samples[: 3 * 16000], clip.sample_rate)


def test_the_channel_service_passes_conformance(in_process_model):
    checks = run_conformance(in_process_model(ChannelModel()), timeout=60)
    assert not [f"{c.name}: {c.detail}" for c in checks if c.status == "FAIL"]
    assert {"kind declared", "option range ends accepted (codec)"} <= {c.name for c in checks}


def step(**kw) -> SimpleNamespace:
    none = dict(resample=None, codec=None, compression=None, noise_snr_db=None, noise="white", gain_db=None)
    return SimpleNamespace(**{**none, "transform": None, "attack": None, **kw})


def test_same_seed_same_bytes_as_the_built_in_steps(speech):
    model = ChannelModel()
    options = {"resample_hz": "8000", "codec": "mp3", "compression": "0.7", "noise": "pink", "noise_snr_db": "15"}
    options["gain_db"] = "-6"
    got = model.transform(TransformRequest("c", 99, speech, model.checked_options(options)))
    built_in, done = apply_condition(
        speech,
        [
            step(resample=8000),
            step(codec="mp3", compression=0.7),
            step(noise_snr_db=15.0, noise="pink"),
            step(gain_db=-6.0),
        ],
        99,
    )
    assert got.audio.sample_rate == built_in.sample_rate == 8000
    assert np.array_equal(got.audio.samples, built_in.samples)
    assert got.steps[0] == "resample=8000" and got.steps[1].startswith("codec=mp3 compression=0.7 rate=8000 kbps=")
    assert len(done["steps"]) == 4


def test_a_run_through_the_service_stores_the_built_in_conditions_audio(
    synthetic_dataset, make_config, run_arena, tmp_path
):
    phone = [{"resample": 8000}, {"codec": "gsm"}]
    conditions = {
        "phone": phone,
        "phone-remote": [{"transform": "ch", "parameters": {"resample_hz": "8000", "codec": "gsm"}}],
    }
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{
            "dataset.max_items": 3,
            "transforms": {"ch": {"module": "voxarena.services.transforms.channel"}},
            "conditions": conditions,
        },
    )
    run_arena(config, tmp_path / "run")
    degr = [json.loads(line) for line in (tmp_path / "run" / "degradations.jsonl").read_text().splitlines()]
    by = {(r["condition"], r["clip"]): r["audio_sha256"] for r in degr if r["status"] == "ok"}
    clips = {clip for _, clip in by}
    assert len(clips) == 9 and len(by) == 18
    assert all(by["phone", c] == by["phone-remote", c] for c in clips)
