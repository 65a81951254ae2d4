"""``orchestrator conformance``: passes services that honour the contract, and catches each
misbehaving double by the check named for its fault, with what was sent and what came back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf

from voxarena.conformance import STILL_SERVING, run_conformance
from voxarena.conformance.session import UNDECODABLE
from voxarena.orchestrator.fleet.local_services import LocalService
from voxarena.sdk.testing import InProcessServer, serve_in_process
from voxarena.services.testing import raw_faulty_services
from voxarena.services.testing.faulty_detector import FAULTS as DETECTOR_FAULTS
from voxarena.services.testing.faulty_detector import FaultyDetector
from voxarena.services.testing.faulty_generator import FAULTS as GENERATOR_FAULTS
from voxarena.services.testing.faulty_generator import FaultyGenerator

REPO = Path(__file__).resolve().parents[2]

# fault -> (the check family that must FAIL, text its detail must contain, other families allowed to fail)
SDK_GENERATOR_FAULTS = {
    "wrong_native_rate": (
        "sample rate as declared",
        "got 16000 Hz, declared 22050 Hz",
        {"concurrent requests answered"},
    ),
    "wrong_voice_rate": ("sample rate as declared (TTS voice=buzz-8k)", "got 16000 Hz, declared 8000 Hz", set()),
    "clone_crashes": ("answers (CLONE)", "INTERNAL", set()),
    "not_deterministic": (
        "deterministic as declared",
        "different audio",
        {"option default accepted", "concurrent requests answered"},
    ),
    "wrong_seed": ("echoes seed", "seed 424243, sent 424242", {"concurrent requests answered"}),
    "wrong_voice": ("echoes voice", "voice 'somebody-else'", set()),
    "too_short": ("duration plausible", "got 0.25 s", set()),
    "reconstruct_too_long": ("duration plausible (RECONSTRUCT)", "expected 1.50..6.00 s", set()),
    "over_full_scale": ("audio well-formed", "exceed full scale", set()),
    "silent": ("audio not silent", "RMS 0.00e+00", set()),
    "shared_state": ("concurrent requests answered", "the same request gave alone", set()),
}
SDK_DETECTOR_FAULTS = {
    "segments_miscounted": ("segment scores (", "INTERNAL", set()),
    "stream_window_too_long": ("stream scores", "Score of its last window", set()),
    "stream_final_early": (
        "stream final",
        "final score",
        {"stream scores (clip 1, 3 s chunks"},
    ),  # the stream in one chunk: nothing before it, the model fails (INTERNAL)
    "batch_normalised": ("Score == ScoreBatch", "ScoreBatch", set()),
    "nan_score": (
        "finite score (clip 3)",
        "score nan",
        {
            "Score == ScoreBatch",
            "concurrent requests answered",
            "deterministic as declared",
            "max_batch_size accepted",
            "option default accepted",
            "segment scores",  # the utterance score beside them is NaN too
            "stream scores",  # running scores of the first 1.5 s are NaN: the stream ends INTERNAL
            "stream final",
            "stream slots",
            "stream slow reader",
            "stream bad chunk (past max_seconds",  # its first running score, of a 1 s window, is NaN
        },
    ),
    "not_deterministic": (
        "deterministic as declared",
        "first time",
        {
            "Score == ScoreBatch",
            "concurrent requests answered",
            "option default accepted",
            "segment scores",
            "stream scores",
            "stream final",
        },
    ),
    "refuses_max_batch": ("max_batch_size accepted", "INVALID_ARGUMENT", set()),
    "shared_state": ("concurrent requests answered", "for the same clip alone", set()),
}
RAW_FAULTS = {
    ("generator", "wrong_request_id"): (
        "echoes request_id",
        "got request_id 'conformance-TTS-x', sent 'conformance-TTS'",
        {"concurrent requests answered"},
    ),
    ("generator", "wrong_timing_scope"): ("timing fields", "scope 'synthesis' != GetInfo timing_scope", set()),
    ("generator", "accepts_unknown_option"): ("unknown option rejected", "the call succeeded", set()),
    ("generator", "default_option_refused"): ("option default accepted (speaking_rate)", "INVALID_ARGUMENT", set()),
    ("generator", "not_serving_after_bad_input"): (STILL_SERVING, "NOT_SERVING", set()),
    ("detector", "wrong_request_id"): (
        "echoes request_id",
        "got request_id 'conformance-clip-1-x', sent 'conformance-clip-1'",
        {"concurrent requests answered", "Score == ScoreBatch", "max_batch_size accepted"},
    ),
    ("detector", "is_llr_mismatch"): (
        "is_llr matches calibrated",
        "is_llr=True, GetInfo calibrated=False",
        {"Score == ScoreBatch"},
    ),
    ("detector", "ignores_max_batch_size"): ("max_batch_size + 1 refused", "the call succeeded", set()),
    ("generator", "internal_on_undecodable"): (UNDECODABLE, "INTERNAL", set()),
    ("detector", "internal_on_undecodable"): (UNDECODABLE, "INTERNAL", set()),
    ("detector", "accepts_junk_audio"): (
        "1-sample clip rejected",
        "the call succeeded",
        {"bad audio rejected", "clip under min_seconds", "ScoreBatch per-item outcomes"},
    ),
}


def test_every_fault_of_the_doubles_has_a_case():
    assert set(SDK_GENERATOR_FAULTS) == set(GENERATOR_FAULTS) - {"none"}
    assert set(SDK_DETECTOR_FAULTS) == set(DETECTOR_FAULTS) - {"none"}
    raw = {(role, f) for role, faults in raw_faulty_services.FAULTS.items() for f in faults if f != "none"}
    # dies_after_bad_input is a separate test: it kills its process, so it runs as a child process
    assert raw - set(RAW_FAULTS) == {("generator", "dies_after_bad_input")}


@pytest.fixture
def service(tmp_path):
    started = []

    def start(name: str, module: str | None = None, args: list[str] | None = None) -> str:
        svc = LocalService(name, module, tmp_path / f"{name}.log", args)
        svc.start()
        started.append(svc)
        return svc.wait_ready(60)

    yield start
    for svc in started:
        svc.stop()


@pytest.fixture
def in_process():
    """Start a model (SDK) or a raw server in this process on a free port; stopped at the end."""
    servers: list[InProcessServer] = []

    def start(model=None, raw: tuple[str, str] | None = None) -> str:
        if raw is not None:
            served = InProcessServer(raw_faulty_services.build_server(*raw, "127.0.0.1:0")).start()
        else:
            served = serve_in_process(model)
        servers.append(served)
        return served.address

    yield start
    for served in servers:
        served.stop()


def _failed_families(checks, allowed: set[str]) -> set[str]:
    """Failed checks whose name does not start with an allowed family."""
    return {c.name for c in checks if c.status == "FAIL" and not any(c.name.startswith(a) for a in allowed)}


def _assert_caught(checks, family: str, text: str, others: set[str]) -> None:
    """A FAIL of ``family`` naming ``text`` (a WARN when the check tests a SHOULD rule), and no other FAIL."""
    caught = [c for c in checks if c.name.startswith(family) and c.status in ("FAIL", "WARN")]
    assert caught, f"no FAIL of {family!r}: " + "\n".join(f"{c.status} {c.name}: {c.detail}" for c in checks)
    assert all(x.status == ("FAIL" if x.rule.grade == "MUST" else "WARN") for x in caught), caught
    c = caught[0]
    assert c.detail.startswith("sent ") and "; got " in c.detail and c.sent and c.got, c
    assert any(text in x.detail for x in caught), [x.detail for x in caught]
    assert not _failed_families(checks, {family} | others), _failed_families(checks, {family} | others)


# -- good services pass everything ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["dummy-generator", "dummy-cloner", "dummy-detector"])
def test_conforming_services_pass(service, name):
    checks = run_conformance(service(name), timeout=60)
    assert not [c for c in checks if c.status == "FAIL"], [c for c in checks if c.status == "FAIL"]
    names = {c.name for c in checks if c.status == "PASS"}
    assert {
        "health SERVING",
        "reflection",
        "GetInfo fields",
        "concurrent requests answered",
        STILL_SERVING,
        "unknown option rejected",
        "bad audio rejected (NaN)" if name == "dummy-detector" else "empty request_id rejected",
        "oversize message refused",
        "oversize message status",
    } <= names
    if name == "dummy-generator":
        assert {
            "answers (TTS)",
            "answers (RECONSTRUCT)",
            "sample rate as declared (TTS voice=buzz)",
            "deterministic as declared (RECONSTRUCT)",
            "echoes seed (TTS)",
            "duration plausible (RECONSTRUCT)",
            "missing input rejected (TTS text)",
            "bad audio rejected (RECONSTRUCT source_audio NaN)",
            "unsupported task rejected",
            "option default accepted (seconds_per_char)",
        } <= names
    if name == "dummy-cloner":
        assert {"answers (CLONE)", "answers (CONVERT)", "missing input rejected (CONVERT reference_audio)"} <= names
    if name == "dummy-detector":
        assert {
            "Score == ScoreBatch",
            "max_batch_size accepted",
            "max_batch_size + 1 refused",
            "is_llr matches calibrated (clip 1)",
            "ScoreBatch per-item outcomes",
            "stream declared valid",
            "stream scores (clip 1, 0.25 s chunks)",
            "stream final (clip 2, 0.25 s chunks)",
            "stream bad chunk (gap)",
            "stream bad open (unknown option)",
            "stream slots freed (client gone)",
            "stream slow reader",
        } <= names


@pytest.mark.parametrize("model", [FaultyGenerator, FaultyDetector])
def test_the_doubles_without_a_fault_pass(in_process, model):
    checks = run_conformance(in_process(model("none")), timeout=30)
    assert not [c for c in checks if c.status == "FAIL"], [c for c in checks if c.status == "FAIL"]
    if model is FaultyGenerator:  # every task, both voices at their own rates
        assert {f"answers ({t})" for t in ("TTS", "CLONE", "RECONSTRUCT", "CONVERT")} <= {c.name for c in checks}
        rate = next(c for c in checks if c.name == "sample rate as declared (TTS voice=buzz-8k)")
        assert rate.status == "PASS" and rate.got.startswith("8000 Hz")


@pytest.mark.parametrize("role", ["generator", "detector"])
def test_a_raw_service_without_the_sdk_can_pass(in_process, role):
    checks = run_conformance(in_process(raw=(role, "none")), timeout=30)
    assert not [c for c in checks if c.status == "FAIL"], [c for c in checks if c.status == "FAIL"]


# -- each misbehaving double is caught by its check ------------------------------------------------
@pytest.mark.parametrize("fault", sorted(SDK_GENERATOR_FAULTS))
def test_sdk_generator_fault_is_caught(in_process, fault):
    checks = run_conformance(in_process(FaultyGenerator(fault)), timeout=30)
    _assert_caught(checks, *SDK_GENERATOR_FAULTS[fault])


@pytest.mark.parametrize("fault", sorted(SDK_DETECTOR_FAULTS))
def test_sdk_detector_fault_is_caught(in_process, fault):
    checks = run_conformance(in_process(FaultyDetector(fault)), timeout=30)
    _assert_caught(checks, *SDK_DETECTOR_FAULTS[fault])


@pytest.mark.parametrize("role,fault", sorted(RAW_FAULTS))
def test_raw_fault_is_caught(in_process, role, fault):
    checks = run_conformance(in_process(raw=(role, fault)), timeout=30)
    _assert_caught(checks, *RAW_FAULTS[(role, fault)])


def test_a_service_that_dies_on_a_bad_input_is_caught(service):
    address = service(
        "raw-dying",
        "voxarena.services.testing.raw_faulty_services",
        ["--role", "generator", "--fault", "dies_after_bad_input"],
    )
    checks = {c.name: c for c in run_conformance(address, timeout=30)}
    nan = checks["bad audio rejected (RECONSTRUCT source_audio NaN)"]
    assert nan.status == "FAIL" and "UNAVAILABLE" in nan.got and "source_audio=" in nan.sent
    still = checks[STILL_SERVING]
    assert still.status == "FAIL" and "after 'bad audio rejected (RECONSTRUCT source_audio NaN)'" in still.got
    assert "health Check failed with UNAVAILABLE" in still.got


def test_the_messages_say_what_was_sent_and_what_came_back(in_process):
    checks = {c.name: c for c in run_conformance(in_process(FaultyGenerator("wrong_native_rate")), timeout=30)}
    rate = checks["sample rate as declared (TTS voice=buzz)"]
    assert rate.detail == (
        "sent TTS voice='buzz' text='Good morning to you.' (20 chars) seed=424342 "
        "request_id='conformance-voice-0'; got 16000 Hz, declared 22050 Hz (ModelInfo.native_sample_rate); "
        "expected 22050 Hz"
    )


# -- the command line --------------------------------------------------------------------------------
def test_cli_exit_codes_and_json(service, tmp_path):
    good = service("dummy-detector")
    bad = service("faulty-generator", "voxarena.services.testing.faulty_generator", ["--fault", "clone_crashes"])
    report = tmp_path / "report.json"
    ok = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "conformance", good],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ok.returncode == 0 and "0 FAIL" in ok.stdout
    broken = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "conformance", bad, "--json", str(report)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert broken.returncode == 1 and "FAIL" in broken.stdout
    data = json.loads(report.read_text())
    assert data["address"] == bad and data["summary"]["FAIL"] == 1
    crash = next(c for c in data["checks"] if c["status"] == "FAIL")
    assert crash["name"] == "answers (CLONE)" and crash["sent"].startswith("CLONE text=")
    assert "reference_audio=3.00 s at 16000 Hz" in crash["sent"] and crash["got"].startswith("INTERNAL: ")
    keys = {"name", "status", "rule", "grade", "rule_text", "rule_where", "sent", "got", "detail"}
    assert all(set(c) == keys and c["rule"] and c["grade"] in ("MUST", "SHOULD") for c in data["checks"])
    nobody = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "conformance", "localhost:1", "--timeout", "5"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},  # rich wraps the table's cells to the terminal's width
    )
    assert nobody.returncode == 1 and "no gRPC server at localhost:1" in nobody.stdout


def test_the_old_misbehaving_generator_fails_with_reasons(service):
    checks = {c.name: c for c in run_conformance(service("misbehaving-generator"), timeout=60)}
    assert checks["GetInfo fields"].status == "FAIL" and "licence" in checks["GetInfo fields"].detail
    assert checks["missing input rejected (TTS text)"].status == "FAIL"
    assert "got a normal response (the call succeeded)" in checks["missing input rejected (TTS text)"].detail


@pytest.mark.parametrize("module", ["voxarena.services.template.generator", "voxarena.services.template.detector"])
def test_the_templates_a_vendor_copies_conform(service, module):
    checks = run_conformance(service(module.rsplit(".", 1)[1], module), timeout=60)
    assert not [c for c in checks if c.status == "FAIL"], [c for c in checks if c.status == "FAIL"]


def test_the_scorer_conforms(service):
    checks = {c.name: c for c in run_conformance(service("scorer"), timeout=120)}
    assert not [c for c in checks.values() if c.status == "FAIL"], checks
    assert checks["EER of known trials"].status == "PASS" and checks["unknown metric rejected"].status == "PASS"
    for name in ("bootstrap confidence 1.5 refused", UNDECODABLE, "bad clip of a batch fails alone"):
        assert checks[name].status == "PASS", checks[name]
    assert checks["bootstrap resamples 100001 refused"].status == "PASS"


def test_probes_cut_from_real_speech(in_process, speech_dir, tmp_path):
    """--probe-audio: a vendor whose service refuses synthetic audio checks it with a recording."""
    from typer.testing import CliRunner

    from voxarena.codec import read_audio_file
    from voxarena.orchestrator.cli.app import app

    recording = next(
        p
        for p in sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))
        if read_audio_file(str(p)).duration >= 5.0
    )
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        ["conformance", in_process(FaultyGenerator("none")), "--probe-audio", str(recording), "--json", str(report)],
    )
    assert result.exit_code == 0, result.output
    sent = next(c["sent"] for c in json.loads(report.read_text())["checks"] if c["name"] == "answers (CONVERT)")
    assert "reference_audio=2.00 s at 16000 Hz source_audio=3.00 s at 16000 Hz" in sent
    short = tmp_path / "short.wav"
    sf.write(short, read_audio_file(str(recording)).samples[:16000], 16000)
    refused = CliRunner().invoke(app, ["conformance", "localhost:1", "--probe-audio", str(short)])
    assert refused.exit_code == 2 and "the probes need at least 5 s" in refused.output
