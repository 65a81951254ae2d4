"""ASVspoof protocol files: the three layouts parse, attack ids become labels, and the corpus's own
spoofs are scored as spoofs of their attack (one row per attack in the matrix) in a real run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from voxarena.codec import read_audio_file, resample
from voxarena.orchestrator.report.build import build_report
from voxarena.orchestrator.run.config import ConfigError, load_config
from voxarena.orchestrator.run.importers import read_asvspoof_protocol
from voxarena.orchestrator.run.manifest import DatasetError
from voxarena.orchestrator.run.pipeline import Arena
from voxarena.orchestrator.run.status import run_status


def test_the_three_protocol_layouts(tmp_path):
    p = tmp_path / "p.txt"
    p.write_text(
        "LA_0039 LA_E_2834763 - A11 spoof\nLA_0014 LA_E_8688370 - - bonafide\n"  # 2019 LA
        "PA_0079 PA_E_1000001 aaa AA spoof\n"  # 2019 PA
        "LA_0009 LA_E_9332881 alaw ita_tx A07 spoof notrim eval\n"  # 2021 LA
        "LA_0043 DF_E_2000011 nocodec asvspoof A14 spoof notrim progress traditional_vocoder - - - -\n"
        "LA_0023 DF_E_2000026 mp3m4a vcc2018 - bonafide notrim eval bonafide - - - -\n"  # 2021 DF
        "E_0001 E_0000000001 F mp3 5 1 AC3 A11 spoof -\n"  # ASVspoof 5
        "E_0002 E_0000000002 M - - - - bonafide bonafide -\n"
    )
    rows = read_asvspoof_protocol(p)
    assert [(r["id"], r["speaker"], r["key"]) for r in rows][:2] == [
        ("LA_E_2834763", "LA_0039", "spoof"),
        ("LA_E_8688370", "LA_0014", "bonafide"),
    ]
    assert [r["labels"] for r in rows] == [
        {"key": "spoof", "attack": "A11"},
        {"key": "bonafide"},
        {"key": "spoof", "attack": "AA", "environment": "aaa"},
        {"key": "spoof", "attack": "A07", "codec": "alaw", "transmission": "ita_tx"},
        {"key": "spoof", "attack": "A14", "codec": "nocodec", "transmission": "asvspoof"},
        {"key": "bonafide", "codec": "mp3m4a", "transmission": "vcc2018"},
        {"key": "spoof", "attack": "A11", "sex": "F", "codec": "mp3"},
        {"key": "bonafide", "sex": "M"},
    ]
    p.write_text("LA_0039 LA_E_2834763 - A11 spoof\nLA_0039 LA_E_2834764 - A11 maybe\n")
    with pytest.raises(DatasetError, match=r"p.txt:2: column 5 of a 2019 line is 'maybe'"):
        read_asvspoof_protocol(p)
    p.write_text("LA_0039 LA_E_2834763 A11 spoof\n")
    with pytest.raises(DatasetError, match=r"p.txt:1: 4 columns, not an ASVspoof protocol layout"):
        read_asvspoof_protocol(p)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, speech_dir) -> Path:
    """An ASVspoof 2019 LA layout: 6 bona fide LibriSpeech clips (copied: a link out of the dataset root is
    refused), and two attacks
    made from them: A01 band-limits to 4 kHz (a narrowband vocoder), A02 is a synthetic buzz."""
    root = tmp_path_factory.mktemp("asvspoof") / "ASVspoof2019_LA_eval"
    (root / "flac").mkdir(parents=True)
    sources = sorted((speech_dir / "LibriSpeech" / "test-clean").rglob("*.flac"))[:6]
    lines = []
    for n, src in enumerate(sources):
        spk = f"LA_{src.parent.parent.name}"
        shutil.copyfile(src, root / "flac" / f"LA_E_B{n}.flac")
        lines.append(f"{spk} LA_E_B{n} - - bonafide")
        clip = read_audio_file(src)
        narrow = resample(resample(clip.samples, clip.sample_rate, 8000), 8000, clip.sample_rate)
        sf.write(root / "flac" / f"LA_E_S{n}.flac", narrow, clip.sample_rate)
        lines.append(f"{spk} LA_E_S{n} - A01 spoof")
        t = np.arange(clip.samples.size) / clip.sample_rate
        sf.write(
            root / "flac" / f"LA_E_T{n}.flac",
            (0.2 * np.sign(np.sin(2 * np.pi * 120 * t))).astype(np.float32),
            clip.sample_rate,
        )
        lines.append(f"{spk} LA_E_T{n} - A02 spoof")
    (root.parent / "ASVspoof2019.LA.cm.eval.trl.txt").write_text("\n".join(lines) + "\n")
    return root


def test_corpus_spoofs_are_scored_per_attack_in_a_real_run(corpus, tmp_path, speech_dir, read_csv):
    cfg = {
        "name": "asv",
        "dataset": {
            "kind": "asvspoof",
            "root": str(corpus),
            "protocol": str(corpus.parent / "ASVspoof2019.LA.cm.eval.trl.txt"),
            "prompts": str(speech_dir / "prompts" / "librispeech-test-clean.trans.txt"),
        },
        "protocol": {"seed": 3, "tasks": ["TTS", "CLONE"]},
        "generators": {"dummy-generator": {}, "dummy-cloner": {}},
        "detectors": {"dummy-detector": {}},
        "scorer": {"metrics": ["rtf"], "bootstrap_resamples": 20},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "run"
    Arena(load_config(path), out, progress=False).run()
    manifest = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert len(manifest) == 18 and {m["labels"].get("attack") for m in manifest} == {None, "A01", "A02"}
    # only bona fide items are spoken anew or cloned; spoofs are never a generator's input
    gens = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert len(gens) == 12 and all(g["item"].startswith("LA_E_B") for g in gens)
    assert all(g["speaker_reference"].startswith("LA_E_B") for g in gens)
    det = read_csv(out / "metrics" / "detection_metrics.csv")
    rows = {r["generator"]: r for r in det}
    assert set(rows) == {"dummy-generator", "dummy-cloner", "asvspoof:A01", "asvspoof:A02", "pooled"}
    assert (rows["asvspoof:A01"]["n_bonafide"], rows["asvspoof:A01"]["n_spoof"]) == ("6", "6")
    assert rows["pooled"]["n_spoof"] == str(6 + 6 + 12)
    # the dummy detector listens to the band above 4 kHz: the band-limited attack is caught outright
    assert float(rows["asvspoof:A01"]["eer"]) == 0.0
    by_attack = [
        r
        for r in read_csv(out / "metrics" / "detection_by_label.csv")
        if r["label"] == "attack" and r["generator"] == "pooled"
    ]
    # an attack label splits the spoofs and keeps every bona fide trial
    assert {(r["value"], r["n_bonafide"], r["n_spoof"]) for r in by_attack} == {("A01", "6", "6"), ("A02", "6", "6")}
    assert not any(r["label"] == "key" for r in read_csv(out / "metrics" / "detection_by_label.csv"))
    composite = read_csv(out / "metrics" / "composite_scores.csv")
    assert not any(r["system"].startswith("asvspoof:") for r in composite)
    assert run_status(out)["complete"]
    assert build_report(out)["generators"][2:] == ["asvspoof:A01", "asvspoof:A02"]  # after the arena's own


def test_asvspoof_dataset_needs_its_protocol(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"dataset": {"kind": "asvspoof", "root": str(tmp_path)}, "generators": {"g": {}}}))
    with pytest.raises(ConfigError, match="dataset.protocol"):
        load_config(path)
