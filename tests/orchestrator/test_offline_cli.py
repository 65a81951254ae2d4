"""The offline CLI commands exactly as specified: ASVspoof 5 files in, JSON out; composite scores."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voxarena.orchestrator.cli.app import app

DATA = Path(__file__).resolve().parents[1] / "scorers" / "data"
runner = CliRunner()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def asvspoof_files(tmp_path):
    # bona fide .9 .8 .3, spoof .5 .2 .1 .4: the hand-computed set of tests/scorers/test_detection.py
    scores = write(
        tmp_path / "scores.tsv",
        "filename\tcm-score\n"
        + "".join(
            f"{n}\t{s}\n"
            for n, s in [("b1", 0.9), ("b2", 0.8), ("b3", 0.3), ("s1", 0.5), ("s2", 0.2), ("s3", 0.1), ("s4", 0.4)]
        ),
    )
    keys = write(
        tmp_path / "keys.tsv",
        "filename\tcm-label\n"
        + "".join(
            f"{n}\t{'bonafide' if n.startswith('b') else 'spoof'}\n" for n in ["s4", "s3", "s2", "s1", "b3", "b2", "b1"]
        ),
    )
    return scores, keys


def test_detection_metrics_from_asvspoof_files(asvspoof_files):
    scores, keys = asvspoof_files
    result = runner.invoke(app, ["metrics", "detection", "--scores", str(scores), "--keys", str(keys)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"eer", "min_dcf", "act_dcf", "cllr", "min_cllr", "n_bonafide", "n_spoof"}
    assert out["eer"] == pytest.approx((1 / 3 + 0.25) / 2)  # a fraction, not a percent
    assert out["min_dcf"] == pytest.approx(0.5) and out["act_dcf"] == pytest.approx(1.0)
    assert (out["n_bonafide"], out["n_spoof"]) == (3, 4)
    expected_cllr = 0.5 * (
        sum(math.log2(1 + math.exp(-x)) for x in (0.9, 0.8, 0.3)) / 3
        + sum(math.log2(1 + math.exp(x)) for x in (0.5, 0.2, 0.1, 0.4)) / 4
    )
    assert out["cllr"] == pytest.approx(expected_cllr)


def test_mismatched_ids_are_refused_with_names(tmp_path, asvspoof_files):
    scores, _ = asvspoof_files
    keys = write(tmp_path / "k2.tsv", "filename\tcm-label\nb1\tbonafide\nb2\tbonafide\nzz9\tspoof\n")
    result = runner.invoke(app, ["metrics", "detection", "--scores", str(scores), "--keys", str(keys)])
    assert result.exit_code == 2
    assert "zz9" in result.output and "s1" in result.output


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("file\tscore\nb1\t1\n", "header must be"),
        ("filename\tcm-score\nb1\tabc\nb2\t1\nb3\t1\ns1\t0\ns2\t0\ns3\t0\ns4\t0\n", "not a number"),
        ("filename\tcm-score\nb1\t1\nb1\t2\n", "duplicate filename 'b1'"),
    ],
)
def test_bad_score_files(tmp_path, asvspoof_files, text, fragment):
    _, keys = asvspoof_files
    result = runner.invoke(
        app, ["metrics", "detection", "--scores", str(write(tmp_path / "s.tsv", text)), "--keys", str(keys)]
    )
    assert result.exit_code == 2 and fragment in result.output


def test_bad_label(tmp_path, asvspoof_files):
    scores, _ = asvspoof_files
    keys = write(
        tmp_path / "k.tsv",
        "filename\tcm-label\n" + "".join(f"{n}\tfake\n" for n in ["b1", "b2", "b3", "s1", "s2", "s3", "s4"]),
    )
    result = runner.invoke(app, ["metrics", "detection", "--scores", str(scores), "--keys", str(keys)])
    assert result.exit_code == 2 and "neither 'bonafide' nor 'spoof'" in result.output


def _paper_ranking(path: Path) -> list[str]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [r["system"] for r in sorted(rows, key=lambda r: -float(r["paper_overall"]))]


@pytest.mark.parametrize(
    "kind, table", [("tts", "sok_table4_tts.csv"), ("reconstruction", "sok_table5_reconstruction.csv")]
)
def test_composites_reproduce_the_sok_rankings(kind, table):
    result = runner.invoke(app, ["composite", kind, str(DATA / table)])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout)
    assert sorted(scores, key=lambda s: -scores[s]) == _paper_ranking(DATA / table)
    assert all(0.1 <= v <= 1.0 for v in scores.values())


def test_composite_weights_are_configurable_and_checked(tmp_path):
    result = runner.invoke(app, ["composite", "tts", str(DATA / "sok_table4_tts.csv"), "--weights", "sim=1"])
    scores = json.loads(result.stdout)
    assert max(scores, key=scores.get) == "MaskGCT-TTS (zero-shot)"  # best SIM (0.9567)
    bad = write(tmp_path / "m.csv", "system,dnsmos\na,3\n")
    result = runner.invoke(app, ["composite", "tts", str(bad)])
    assert result.exit_code == 2 and "missing column(s)" in result.output


def test_detector_composite_by_hand(tmp_path):
    pairs = write(
        tmp_path / "pairs.csv",
        "detector,generator,eer,cllr,min_dcf\nA,g1,0.1,0.5,0.2\nA,g2,0.3,0.9,0.4\nB,g1,0.2,0.7,0.3\nB,g2,0.5,1.3,0.6\n",
    )
    params = write(tmp_path / "params.csv", "detector,params_m\nA,100\nB,1\n")
    # Normalised (min/max over all pairs): EER (.1,.3,.2,.5)/.4, Cllr (.5,.9,.7,1.3)/.8, minDCF (.2,.4,.3,.6)/.4
    a_g1, a_g2 = 0.0, (0.5 + 0.5 + 0.5) / 3
    b_g1, b_g2 = (0.25 + 0.25 + 0.25) / 3, 1.0
    expected = {"A": 0.8 * (a_g1 + a_g2) / 2 + 0.2 * 1.0, "B": 0.8 * (b_g1 + b_g2) / 2 + 0.2 * 0.0}
    result = runner.invoke(app, ["composite", "detectors", str(pairs), "--params", str(params)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == pytest.approx(expected)
    challenge = write(tmp_path / "r.csv", "generator,r\ng1,3\ng2,1\n")
    result = runner.invoke(
        app,
        ["composite", "detectors", str(pairs), "--params", str(params), "--alpha", "1", "--challenge", str(challenge)],
    )
    weighted = json.loads(result.stdout)
    assert weighted["A"] == pytest.approx(0.75 * a_g1 + 0.25 * a_g2)
    assert weighted["B"] == pytest.approx(0.75 * b_g1 + 0.25 * b_g2)


def test_composite_reads_a_runs_own_generator_metrics(tmp_path):
    # A run's metrics/generator_metrics.csv: `generator` and `tasks` columns. F_TTS compares the text
    # speakers only; the vocoder row C must not enter its min-max normalisation.
    table = tmp_path / "generator_metrics.csv"
    table.write_text(
        "generator,family,tasks,dnsmos,sim,psnr,wer,rtf,params_m\n"
        "A,X,TTS,3.5,0.8,10,0.05,0.9,10\n"
        "B,X,TTS,2.5,0.5,20,0.10,0.1,\n"
        "C,X,RECONSTRUCT,9,9,99,0,0,1\n"
    )
    result = runner.invoke(app, ["composite", "tts", str(table)])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.output)
    # By hand (eps 0.1): A best on dnsmos, sim, wer (1.0 each), worst on psnr, rtf (0.1), and the only one
    # with a parameter count, so its log-params term is the worst (0.1); B has none: the best term (1.0).
    assert scores == pytest.approx(
        {"A": 0.25 + 0.25 + 0.2 + 0.015 + 0.0075 + 0.0075, "B": 0.025 + 0.025 + 0.02 + 0.15 + 0.075 + 0.075}
    )
    result = runner.invoke(app, ["composite", "reconstruction", str(table)])
    assert result.exit_code == 2 and "missing column(s) pesq, ssim" in result.output
