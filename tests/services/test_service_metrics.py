"""Prometheus metrics of a service: calls by method and code, latency, in-flight, queued and rejected work
calls, readiness and load time, scraped over HTTP as Prometheus does; the scorer's per-metric counts; the
command line's --metrics-port (off by default, a bad port refused)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
import urllib.request

import grpc
import numpy as np
import pytest

from voxarena.sdk import AudioClip, GeneratorModel, SynthesisResult
from voxarena.sdk.metrics import ServiceMetrics, metrics_port_argument
from voxarena.sdk.testing import serve_in_process
from voxarena.v1 import common_pb2, generator_pb2


class Gate(GeneratorModel):
    """Each Synthesize waits for ``release`` (30 s at most, so a broken test cannot hang)."""

    name = "gate"
    family = "VOCODER_DSP"
    timing_scope = "synthesis: test"

    def __init__(self) -> None:
        super().__init__()
        self.release, self.entered = threading.Event(), threading.Semaphore(0)

    def load(self) -> None:
        pass

    def synthesize(self, request):
        self.entered.release()
        self.release.wait(30)
        return SynthesisResult(AudioClip(np.zeros(160, np.float32), 16000))


def _tts(request_id: str) -> generator_pb2.SynthesizeRequest:
    return generator_pb2.SynthesizeRequest(request_id=request_id, seed=1, task=generator_pb2.TTS, text="hi")


SYNTH = "/voxarena.v1.GeneratorService/Synthesize"


def scrape(port: int) -> dict[str, float]:
    """name{labels} -> value of every sample on http://127.0.0.1:PORT/metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def sample(samples: dict[str, float], name: str, **labels: str) -> float:
    """The value of ``name`` whose labels include ``labels`` (0 when absent)."""
    for key, value in samples.items():
        base, _, rest = key.partition("{")
        got = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if base == name and all(got.get(k) == v for k, v in labels.items()):
            return value
    return 0.0


def test_calls_slots_queue_and_rejections_are_counted_as_they_happen():
    metrics = ServiceMetrics()
    metrics.describe_service("gate", "generator", "0.0.0")
    model = Gate()
    served = serve_in_process(model, "[::]:0", workers=1, max_queue=1, metrics=metrics)
    port = metrics.serve(0, "127.0.0.1")
    try:
        stub = served.stub()
        first = stub.Synthesize.future(_tts("a"), timeout=60)
        assert model.entered.acquire(timeout=10)
        queued = stub.Synthesize.future(_tts("b"), timeout=60)
        deadline = time.monotonic() + 10
        while served.running.admission.waiting < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Synthesize(_tts("c"), timeout=10)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        busy = scrape(port)
        assert sample(busy, "voxarena_calls_in_flight") == 1 and sample(busy, "voxarena_calls_queued") == 1
        assert sample(busy, "voxarena_calls_rejected_total") == 1 and sample(busy, "voxarena_call_slots") == 1
        assert sample(busy, "voxarena_requests_total", method=SYNTH, code="RESOURCE_EXHAUSTED") == 1
        model.release.set()
        first.result(), queued.result()
        stub.GetInfo(common_pb2.GetInfoRequest(), timeout=10)
        done = scrape(port)
        assert sample(done, "voxarena_requests_total", method=SYNTH, code="OK") == 2
        assert sample(done, "voxarena_request_duration_seconds_count", method=SYNTH) == 3
        assert sample(done, "voxarena_requests_total", method="/voxarena.v1.GeneratorService/GetInfo", code="OK") == 1
        assert sample(done, "voxarena_calls_in_flight") == 0 and sample(done, "voxarena_calls_queued") == 0
        assert sample(done, "voxarena_service_info", service="gate", role="generator") == 1
        assert sample(done, "process_resident_memory_bytes") > 0
    finally:
        model.release.set()
        served.stop()
        metrics.stop()


def test_the_metrics_port_argument():
    assert metrics_port_argument("") is None
    assert metrics_port_argument(" 9464 ") == 9464
    for bad in ("x", "70000", "-1"):
        with pytest.raises(ValueError, match="metrics port"):
            metrics_port_argument(bad)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_service_started_with_metrics_port_serves_its_load_time_and_calls():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "voxarena.services.generators.griffin_lim", "--port", "0", "--metrics-port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline, ready = time.monotonic() + 60, {}
        while time.monotonic() < deadline:
            try:
                ready = scrape(port)
                if sample(ready, "voxarena_model_ready") == 1:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        assert sample(ready, "voxarena_model_ready") == 1 and sample(ready, "voxarena_model_load_seconds") > 0
        assert sample(ready, "voxarena_service_info", service="griffin-lim", role="generator") == 1
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_bad_metrics_port_stops_the_service_naming_it():
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.services.generators.griffin_lim", "--port", "0", "--metrics-port", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "metrics port 'x' is not an integer" in out.stderr


def test_the_scorer_counts_each_metric(tmp_path):
    from voxarena.codec import encode_audio
    from voxarena.scorers.service import ScorerServicer
    from voxarena.sdk.testing import serve_servicers
    from voxarena.v1 import scorer_pb2, scorer_pb2_grpc

    metrics = ServiceMetrics()
    servicer = ScorerServicer(fingerprint_metrics=("rtf",), clip_workers=1)
    servicer.count_metrics(metrics.registry)
    name = scorer_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
    reg = [(name, lambda s: scorer_pb2_grpc.add_ScorerServiceServicer_to_server(servicer, s))]
    with serve_servicers(reg, load=servicer.load, metrics=metrics) as served:
        port = metrics.serve(0, "127.0.0.1")
        clip = encode_audio(AudioClip(np.zeros(1600, np.float32), 16000))
        timing = common_pb2.Timing(wall_seconds=0.05)
        items = [
            scorer_pb2.ClipRequest(request_id="ok", audio=clip, metrics=["rtf"], generation_timing=timing),
            scorer_pb2.ClipRequest(request_id="no-timing", audio=clip, metrics=["rtf"]),
        ]
        served.stub(scorer_pb2_grpc.ScorerServiceStub).MeasureClips(scorer_pb2.MeasureClipsRequest(items=items))
        got = scrape(port)
    metrics.stop()
    assert sample(got, "voxarena_scorer_metric_seconds_count", metric="rtf") == 2
    assert sample(got, "voxarena_scorer_clips_total", metric="rtf", outcome="ok") == 1
    assert sample(got, "voxarena_scorer_clips_total", metric="rtf", outcome="refused") == 1


def test_the_dashboard_and_the_scrape_config_name_what_exists():
    """Every metric the Grafana dashboard plots is one the services or the orchestrator define (or the client
    library's process metrics); Prometheus's configuration discovers every catalogue service on its port."""
    import json
    from pathlib import Path

    import yaml

    from voxarena.catalogue import SERVICES
    from voxarena.deploy.monitoring import METRICS_PORT, PROMETHEUS_FILE

    repo = Path(__file__).resolve().parents[2]
    sources = "".join(
        (repo / p).read_text()
        for p in (
            "sdk/src/voxarena/sdk/metrics.py",
            "voxarena/orchestrator/run/run_metrics.py",
            "voxarena/scorers/service.py",
        )
    )
    dashboard = json.loads((repo / "compose/monitoring/grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    names = {n for e in exprs for n in re.findall(r"\b(voxarena_\w+|process_\w+)", e)}
    assert len(names) >= 12
    for name in names:
        base = re.sub(r"_(total|bucket|count|sum)$", "", name)
        assert name.startswith("process_") or f'"{base}"' in sources, f"{name} is defined nowhere"
    config = yaml.safe_load((repo / PROMETHEUS_FILE).read_text())
    [sd] = config["scrape_configs"][0]["dns_sd_configs"]
    assert sd["names"] == [s.name for s in SERVICES] and sd["port"] == METRICS_PORT
    compose = yaml.safe_load((repo / "docker-compose.yml").read_text())
    model = compose["x-model"]["environment"]
    assert model["VOXARENA_METRICS_PORT"] == str(METRICS_PORT)
    assert compose["services"]["prometheus"]["profiles"] == ["monitoring"]
