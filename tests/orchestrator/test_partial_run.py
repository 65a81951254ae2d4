"""Partial fakes in a run (tasks PARTIAL_VOCODED and PARTIAL_WORDS): the scorer aligns each LibriSpeech
item, the dummy generator re-synthesises it or says new words, the orchestrator splices; every row records
its exact fake spans, the same seed gives the same bytes, and an item that cannot be spliced fails alone."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from voxarena.orchestrator.store.records import GenerationRecord

TASKS = ["PARTIAL_VOCODED", "PARTIAL_WORDS"]


def partial_rows(run) -> dict[str, GenerationRecord]:
    rows = [
        GenerationRecord.from_dict(json.loads(line)) for line in (run / "generations.jsonl").read_text().splitlines()
    ]
    return {r.id: r for r in rows}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, speech_dir, make_config, run_arena):
    out = {}
    for name in ("a", "b"):
        tmp = tmp_path_factory.mktemp(f"partial-{name}")
        config = make_config(
            tmp,
            speech_dir,
            **{
                "dataset.max_items": 4,
                "protocol.tasks": TASKS,
                "protocol.partial": {"spans": 2, "min_words": 1, "max_words": 2, "crossfade_ms": 10},
                "generators": {"dummy-generator": {}, "dummy-cloner": {}},
                "detectors": {"dummy-detector": {}, "whole-detector": {}},
            },
        )
        out[name] = (tmp / "run", run_arena(config, tmp / "run"))
    return out


def test_every_partial_fake_records_its_spans_and_holds_them(runs):
    run, _ = runs["a"]
    rows = partial_rows(run)
    ok = [r for r in rows.values() if r.ok]
    assert {(r.generator, r.task) for r in ok} >= {
        ("dummy-generator", "PARTIAL_VOCODED"),
        ("dummy-generator", "PARTIAL_WORDS"),
        ("dummy-cloner", "PARTIAL_WORDS"),
    }
    for r in ok:
        p = r.partial
        assert p["method"] == {"PARTIAL_VOCODED": "vocoded", "PARTIAL_WORDS": "words"}[r.task]
        assert p["via"] == {"PARTIAL_VOCODED": "RECONSTRUCT"}.get(
            r.task, "CLONE" if r.generator == "dummy-cloner" else "TTS"
        )
        assert p["aligner"].startswith("pocketsphinx")
        x, rate = sf.read(run / r.audio, dtype="float32")
        assert rate == r.sample_rate and len(x) / rate == pytest.approx(r.duration, abs=1e-5)
        spans = p["spans"]
        assert len(spans) == (2 if r.task == "PARTIAL_VOCODED" else 1)
        assert all(0 <= s["start"] < s["end"] <= len(x) for s in spans)
        assert all(a["end"] <= b["start"] for a, b in zip(spans, spans[1:]))
        assert all(s["start_seconds"] == round(s["start"] / rate, 6) for s in spans)
        assert p["fake_fraction"] == round(sum(s["end"] - s["start"] for s in spans) / len(x), 6)
        if r.task == "PARTIAL_WORDS":
            assert spans[0]["said"] in r.text and spans[0]["replaced"] not in r.text.split()


def test_the_same_seed_makes_the_same_partial_fakes(runs):
    a, b = partial_rows(runs["a"][0]), partial_rows(runs["b"][0])
    assert a.keys() == b.keys()
    for i in a:
        assert (a[i].status, a[i].audio_sha256, a[i].partial, a[i].reason) == (
            b[i].status, b[i].audio_sha256, b[i].partial, b[i].reason
        )  # fmt: skip


def test_partial_fakes_are_detected_but_not_in_the_detection_matrix_nor_measured(runs, read_csv):
    run, _ = runs["a"]
    dets = [json.loads(line) for line in (run / "detections.jsonl").read_text().splitlines()]
    assert any("PARTIAL_VOCODED" in d["clip"] for d in dets)
    assert not (run / "measurements.jsonl").exists() or not any(
        "PARTIAL" in line for line in (run / "measurements.jsonl").read_text().splitlines()
    )
    matrix = read_csv(run / "metrics" / "detection_metrics.csv")
    assert all(int(r["n_spoof"]) == 0 for r in matrix) or not matrix


def test_a_fake_span_sounds_like_the_generator_and_the_rest_like_the_original(runs, speech_dir):
    """The dummy generator's buzz has almost no energy above 4 kHz; LibriSpeech speech has some."""
    run, _ = runs["a"]
    r = next(r for r in partial_rows(run).values() if r.ok and r.task == "PARTIAL_VOCODED")
    x, rate = sf.read(run / r.audio, dtype="float32")
    fake = np.zeros(len(x), bool)
    for s in r.partial["spans"]:
        fake[s["start"] : s["end"]] = True

    def high_band(y):
        spec = np.abs(np.fft.rfft(y)) ** 2
        return spec[np.fft.rfftfreq(y.size, 1 / rate) >= 4000].sum() / spec.sum()

    assert high_band(x[fake]) < 0.2 * high_band(x[~fake])


def test_labels_export_round_trips(runs, tmp_path):
    from voxarena.orchestrator.store.labels import export_labels, read_rttm
    from voxarena.stats.localisation import RESOLUTIONS

    run, _ = runs["a"]
    export_labels(run, "rttm", tmp_path / "rttm")
    export_labels(run, "partialspoof", tmp_path / "ps")
    with open(tmp_path / "rttm" / "clips.tsv") as f:
        clips = {c: (int(rate), int(n)) for c, _, rate, n in (line.rstrip("\n").split("\t") for line in list(f)[1:])}
    back = read_rttm(tmp_path / "rttm" / "labels.rttm", {c: rate for c, (rate, _) in clips.items()})
    rows = partial_rows(run)
    for clip, (rate, n) in clips.items():
        row = rows.get(clip)
        expected = () if row is None else tuple((s["start"], s["end"]) for s in row.partial["spans"])
        assert back.get(clip, ()) == expected, clip
        for resolution in RESOLUTIONS:  # PartialSpoof labels: written apart, read off the samples here
            labels = np.load(tmp_path / "ps" / f"seglab_{resolution:g}.npy", allow_pickle=True).item()[clip]
            width = int(round(resolution * rate))
            truth = np.zeros(n, bool)
            for a, b in expected:
                truth[a:b] = True
            assert labels.tolist() == [0 if truth[s : s + width].any() else 1 for s in range(0, n, width)], clip


def test_segment_scores_native_and_from_windows(runs):
    """dummy-detector answers its own 20 ms segments; whole-detector's come from 1 s windows every 0.2 s.
    Only partial fakes and bona fide clips have them, and every count is the clip's."""
    run, _ = runs["a"]
    dets = [json.loads(line) for line in (run / "detections.jsonl").read_text().splitlines()]
    rows = partial_rows(run)
    seen = set()
    for d in dets:
        assert d["status"] == "ok", d
        if d["kind"] == "bonafide" or d["task"].startswith("PARTIAL"):
            seg = d["segments"]
            source, hop = {"dummy-detector": ("native", 0.02), "whole-detector": ("windows", 0.2)}[d["detector"]]
            assert (seg["source"], seg["hop_seconds"]) == (source, hop)
            if d["clip"] in rows:
                n = int(round(rows[d["clip"]].duration * rows[d["clip"]].sample_rate))
                assert len(seg["scores"]) == -(-n // int(round(hop * 16000)))
            seen.add(source)
        else:
            assert "segments" not in d
    assert seen == {"native", "windows"}


def test_localisation_table_agrees_with_the_rows(runs, read_csv):
    """metrics/localisation.csv: per detector x method, recomputed here from the detection rows, the labels
    and voxarena.stats (the statistics are tested against independent code in tests/voxarena/stats)."""
    from voxarena.stats.detection import eer

    run, _ = runs["a"]
    table = {(r["detector"], r["method"]): r for r in read_csv(run / "metrics" / "localisation.csv")}
    assert set(table) == {(d, m) for d in ("dummy-detector", "whole-detector") for m in ("vocoded", "words", "pooled")}
    rows = partial_rows(run)
    dets = [json.loads(line) for line in (run / "detections.jsonl").read_text().splitlines()]
    for (detector, method), r in table.items():
        mine = [d for d in dets if d["detector"] == detector and "segments" in d]
        bona = np.array([d["score"] for d in mine if d["kind"] == "bonafide"])
        fakes = [d for d in mine if d["clip"] in rows and method in ("pooled", rows[d["clip"]].partial["method"])]
        assert int(r["n_bonafide"]) == bona.size == 4 and int(r["n_partial"]) == len(fakes)
        assert float(r["eer_utt"]) == pytest.approx(eer(bona, np.array([d["score"] for d in fakes]))[0], abs=1e-9)
        assert r["segments"] == {"dummy-detector": "native", "whole-detector": "windows"}[detector]
        for column in ("range_eer", "seg_eer_20ms", "seg_eer_640ms", "iou"):
            assert 0.0 <= float(r[column]) <= 1.0, (column, r)
        assert float(r["range_eer_ci_low"]) <= float(r["range_eer"]) <= float(r["range_eer_ci_high"])
    # The dummy detector's high-band ratio drops in the buzz: it localises better than chance, both ways.
    assert float(table[("dummy-detector", "pooled")]["range_eer"]) < 0.45
    assert float(table[("whole-detector", "pooled")]["range_eer"]) < 0.45


def test_the_report_shows_the_localisation_table_and_timelines(runs):
    from voxarena.orchestrator.report.build import write_report

    run, _ = runs["a"]
    json_path, html_path = write_report(run)
    rep = json.loads(json_path.read_text())
    assert len(rep["localisation"]["table"]) == 6
    timelines = rep["localisation"]["timelines"]
    assert len(timelines) == 3 and {t["clip"].split("|")[1] for t in timelines} == set(TASKS)
    for t in timelines:
        assert set(t["detectors"]) == {"dummy-detector", "whole-detector"} and t["spans"]
        assert all(d["threshold"] is not None for d in t["detectors"].values())
    html = html_path.read_text()
    assert "<h2>Localisation (partial fakes)</h2>" in html and html.count("aria-label='timeline of") == 3


def test_an_item_that_cannot_be_spliced_fails_alone_and_a_resume_redoes_only_it(
    tmp_path, speech_dir, make_config, run_arena
):
    """One item's transcript says far more than its audio: the aligner refuses it, its row fails naming the
    item and why; the other item is made. A resume leaves the made one alone; --retry-failed tries the
    failed one again (and fails it again, the same way)."""
    import csv

    folder = speech_dir / "LibriSpeech" / "test-clean" / "1089" / "134686"
    text = next(line.split(" ", 1)[1] for line in (folder / "1089-134686.trans.txt").read_text().splitlines())
    table = tmp_path / "items.csv"
    with open(table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "audio", "speaker", "text"])
        w.writerow(["good", folder / "1089-134686-0000.flac", "1089", text])
        w.writerow(["wordy", folder / "1089-134686-0000.flac", "1089", " ".join([text] * 20)])
    dataset = {"kind": "table", "root": str(table), "allow_outside_root": True}
    config = make_config(tmp_path, dataset, **{"protocol.tasks": ["PARTIAL_VOCODED"]})
    run = tmp_path / "run"
    run_arena(config, run)
    rows = partial_rows(run)
    good, wordy = rows["dummy-generator|PARTIAL_VOCODED|good"], rows["dummy-generator|PARTIAL_VOCODED|wordy"]
    assert good.ok and not wordy.ok and wordy.failure == "input"
    assert wordy.reason.startswith(f"{wordy.id}: the scorer could not align item wordy: INVALID_ARGUMENT")
    assert "could not be aligned to its transcript" in wordy.reason
    lines = (run / "generations.jsonl").read_text().splitlines()
    run_arena(config, run)  # resume: nothing to redo
    assert (run / "generations.jsonl").read_text().splitlines() == lines
    run_arena(config, run, retry_failed=True)  # only the failed row is tried again
    again = (run / "generations.jsonl").read_text().splitlines()[len(lines) :]
    assert [json.loads(line)["id"] for line in again] == [wordy.id]
