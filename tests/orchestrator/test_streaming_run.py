"""Streamed detection in a run (protocol.streaming): every clean one-shot clip is streamed to each detector
that streams, beside its ordinary score; a detector that does not stream has no streams planned; the row
keeps running scores with their audio time and latency, the final score equals the clip's Score; status
counts the streams; a rerun resumes without streaming again."""

from __future__ import annotations

import json

import pytest

from voxarena.orchestrator.run.status import run_status
from voxarena.orchestrator.store.records import DetectionRecord, StreamRecord


def rows(run, table, kind):
    return {r.id: r for r in (kind.from_dict(json.loads(line)) for line in (run / table).read_text().splitlines())}


@pytest.fixture(scope="module")
def streamed(tmp_path_factory, speech_dir, make_config, run_arena):
    tmp = tmp_path_factory.mktemp("streaming")
    config = make_config(
        tmp,
        speech_dir,
        **{
            "dataset.max_items": 3,
            "protocol.streaming": {"chunk_seconds": 0.25, "pacing": "fast"},
            "generators": {"dummy-generator": {}},
            "detectors": {"dummy-detector": {}, "whole-detector": {}},
        },
    )
    record = run_arena(config, tmp / "run")
    return tmp / "run", config, record


def test_every_clean_one_shot_clip_is_streamed_to_each_streaming_detector(streamed):
    run, _, _ = streamed
    streams = rows(run, "streams.jsonl", StreamRecord)
    detections = rows(run, "detections.jsonl", DetectionRecord)
    clean = {d.clip for d in detections.values() if d.detector == "dummy-detector" and d.channel == "clean"}
    assert {s.clip for s in streams.values()} == clean and len(clean) >= 4
    assert {s.detector for s in streams.values()} == {"dummy-detector"}  # whole-detector declares no streaming
    for s in streams.values():
        assert s.ok, s.reason
        assert s.chunk_seconds == 0.25 and s.pacing == "fast"
        assert [round(x["audio_seconds"] / 0.5) for x in s.scores] == list(range(1, len(s.scores) + 1))
        assert all(x["latency_seconds"] > 0 and x["wall_seconds"] > 0 for x in s.scores)
        whole = detections[f"dummy-detector|{s.clip}"]
        assert s.final_score == pytest.approx(whole.score, rel=1e-9)


def test_status_counts_the_streams_and_a_rerun_streams_nothing_again(streamed, run_arena):
    run, config, _ = streamed
    status = run_status(run)
    stream_rows = [c for c in status["coverage"] if c["stage"] == "stream"]
    assert [(c["service"], c["done"], c["failed"]) for c in stream_rows] == [
        ("dummy-detector", stream_rows[0]["expected"], 0)
    ]
    assert status["complete"]
    before = (run / "streams.jsonl").read_bytes()
    run_arena(config, run)
    assert (run / "streams.jsonl").read_bytes() == before


def test_the_streaming_table_has_a_row_per_generator_and_its_final_eer_is_the_detection_eer(streamed, read_csv):
    run, _, _ = streamed
    table = {(r["detector"], r["generator"]): r for r in read_csv(run / "metrics" / "streaming.csv")}
    assert set(table) == {("dummy-detector", "dummy-generator"), ("dummy-detector", "pooled")}
    detection = {
        (r["detector"], r["generator"]): r
        for r in read_csv(run / "metrics" / "detection_metrics.csv")
        if r["condition"] == "clean"
    }
    pooled = table[("dummy-detector", "pooled")]
    assert pooled["eer_final"] == detection[("dummy-detector", "pooled")]["eer"]
    assert pooled["n_spoof"] == detection[("dummy-detector", "pooled")]["n_spoof"]
    assert pooled["latency_p95_seconds"] == "nan"  # paced as fast as possible: no live latency
    assert float(pooled["rtf"]) > 0


def test_the_report_shows_the_streaming_table_and_the_eer_over_time_chart(streamed):
    from voxarena.orchestrator.report.build import write_report

    run, _, _ = streamed
    json_path, html_path = write_report(run)
    rep = json.loads(json_path.read_text())
    assert [(r["detector"], r["generator"]) for r in rep["streaming"]] == [
        ("dummy-detector", "dummy-generator"),
        ("dummy-detector", "pooled"),
    ]
    html = html_path.read_text()
    assert "<h2>Streaming: how soon a detector knows</h2>" in html
    assert "aria-label='EER after t seconds of audio'" in html and 'id="streaming"' in html


def test_explain_finds_a_stream_beside_the_clean_detection_that_shares_its_id(streamed):
    from voxarena.orchestrator.store.triage import RunTables

    run, _, record = streamed
    stream_id = json.loads((run / "streams.jsonl").read_text().splitlines()[0])["id"]
    found = RunTables(run, record).find(stream_id)
    assert [(r.stage, r.services) for r in found] == [
        ("detection", ("dummy-detector",)),
        ("stream", ("dummy-detector",)),
    ]
