"""The scorer's Composite and I2DAggregates RPCs, through a real server: scores, ranks and aggregates
against hand-computed values, errors as results or as INVALID_ARGUMENT, and the scorer's fingerprint
on every response."""

from __future__ import annotations

import math

import grpc
import pytest

from voxarena.scorers.service import ScorerServicer
from voxarena.sdk.errors import NotReady
from voxarena.sdk.testing import serve_servicers
from voxarena.v1 import common_pb2, scorer_pb2, scorer_pb2_grpc


@pytest.fixture(scope="module")
def scorer():
    servicer = ScorerServicer(fingerprint_metrics=("rtf",))
    name = scorer_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
    register = (name, lambda s: scorer_pb2_grpc.add_ScorerServiceServicer_to_server(servicer, s))
    with serve_servicers([register], load=servicer.load) as served:
        yield served.stub(scorer_pb2_grpc.ScorerServiceStub)


def generator_composite(name: str, table: dict[str, dict[str, float]], weights: dict[str, float], **kw):
    return scorer_pb2.GeneratorComposite(
        name=name,
        systems=[scorer_pb2.SystemMetrics(system=s, values=v) for s, v in table.items()],
        weights=[scorer_pb2.MetricWeight(metric=m, weight=w) for m, w in weights.items()],
        **kw,
    )


def by_system(result) -> dict[str, tuple[float, int]]:
    return {s.system: (s.score, s.rank) for s in result.scores}


def test_generator_and_detector_composites_by_hand(scorer):
    table = {
        "A": {"dnsmos": 3.0, "wer": 0.1, "params_m": 0.0},  # rule-based: the best parameter term
        "B": {"dnsmos": 4.0, "wer": 0.3, "params_m": 10.0},
        "C": {"dnsmos": 3.5, "wer": 0.2, "params_m": 100.0},
    }
    # dnsmos .1, 1, .55; wer (lower is better) 1, .1, .55; log params over B and C: 1, .1, A 1
    expected = {
        "A": 0.5 * 0.1 + 0.25 * 1.0 + 0.25 * 1.0,
        "B": 0.5 * 1.0 + 0.25 * 0.1 + 0.25 * 1.0,
        "C": 0.5 * 0.55 + 0.25 * 0.55 + 0.25 * 0.1,
    }
    pairs = [
        ("A", "g1", 0.1, 0.5, 0.2),
        ("A", "g2", 0.3, 0.9, 0.4),
        ("B", "g1", 0.2, 0.7, 0.3),
        ("B", "g2", 0.5, 1.3, 0.6),
    ]
    # normalised over all pairs: A (0, .5) -> P .25, B (.25, 1) -> P .625; log params A 100, B 1 -> C 1, 0
    request = scorer_pb2.CompositeRequest(
        generators=[generator_composite("tts", table, {"dnsmos": 0.5, "wer": 0.25, "params_m": 0.25})],
        detectors=[
            scorer_pb2.DetectorComposite(
                name="detector",
                params_m={"A": 100.0, "B": 1.0},
                pairs=[
                    scorer_pb2.DetectorPair(detector=d, generator=g, eer=e, cllr=c, min_dcf=m)
                    for d, g, e, c, m in pairs
                ],
            )
        ],
    )
    resp = scorer.Composite(request)
    tts, det = resp.results
    assert (tts.name, tts.higher_is_better, tts.error) == ("tts", True, "")
    assert [s.system for s in tts.scores] == ["A", "B", "C"]
    assert by_system(tts) == {
        "A": (pytest.approx(expected["A"]), 2),
        "B": (pytest.approx(expected["B"]), 1),
        "C": (pytest.approx(expected["C"]), 3),
    }
    assert (det.name, det.higher_is_better, det.error) == ("detector", False, "")
    assert by_system(det) == {"A": (pytest.approx(0.8 * 0.25 + 0.2), 1), "B": (pytest.approx(0.8 * 0.625), 2)}
    info = scorer.GetInfo(common_pb2.GetInfoRequest())
    assert dict(resp.fingerprint) == dict(info.fingerprint) and "voxarena.scorer" in resp.fingerprint


def test_composite_options_reach_the_formula(scorer):
    table = {"A": {"sim": 0.2}, "B": {"sim": 0.6}, "C": {"sim": 0.4}}
    resp = scorer.Composite(
        scorer_pb2.CompositeRequest(generators=[generator_composite("eps", table, {"sim": 2.0}, epsilon=0.3)])
    )
    # t = 0, 1, .5 -> .3 + .7 t
    assert by_system(resp.results[0]) == {
        "A": (pytest.approx(0.3), 3),
        "B": (pytest.approx(1.0), 1),
        "C": (pytest.approx(0.65), 2),
    }
    pairs = [
        scorer_pb2.DetectorPair(detector=d, generator=g, eer=e, cllr=e, min_dcf=e)
        for d, g, e in [("a", "g1", 0.4), ("a", "g2", 0.0), ("b", "g1", 0.0), ("b", "g2", 0.4)]
    ]
    resp = scorer.Composite(
        scorer_pb2.CompositeRequest(
            detectors=[
                scorer_pb2.DetectorComposite(
                    name="d", pairs=pairs, params_m={"a": 1.0, "b": 1.0}, alpha=1.0, challenge={"g1": 3.0}
                )
            ]
        )
    )
    # w = 3/4, 1/4: a is worst (1) on g1, b on g2
    assert by_system(resp.results[0]) == {"a": (pytest.approx(0.75), 2), "b": (pytest.approx(0.25), 1)}


def test_equal_scores_are_ranked_by_name(scorer):
    table = {"zeta": {"sim": 0.5}, "alpha": {"sim": 0.5}, "mid": {"sim": 0.1}}
    resp = scorer.Composite(scorer_pb2.CompositeRequest(generators=[generator_composite("t", table, {"sim": 1.0})]))
    assert {s.system: s.rank for s in resp.results[0].scores} == {"alpha": 1, "zeta": 2, "mid": 3}


def test_an_incomputable_composite_is_a_result_with_its_reason(scorer):
    missing = {"A": {"sim": 0.2}, "B": {"sim": math.nan, "wer": 0.1}}
    unknown = {"A": {"estoi": 0.5}, "B": {"estoi": 0.7}}
    resp = scorer.Composite(
        scorer_pb2.CompositeRequest(
            generators=[
                generator_composite("m", missing, {"sim": 1.0}),
                generator_composite("u", unknown, {"estoi": 1.0}),
            ],
            detectors=[
                scorer_pb2.DetectorComposite(
                    name="d",
                    pairs=[scorer_pb2.DetectorPair(detector="a", generator="g", eer=0.1, cllr=0.2, min_dcf=0.3)],
                )
            ],
        )
    )
    assert [(r.name, len(r.scores)) for r in resp.results] == [("m", 0), ("u", 0), ("d", 0)]
    assert "B: metric sim is missing" in resp.results[0].error
    assert "'estoi' has no known direction" in resp.results[1].error
    assert "no parameter count for detector(s) a" in resp.results[2].error


@pytest.mark.parametrize(
    "composite, fragment",
    [
        (
            scorer_pb2.CompositeRequest(
                generators=[generator_composite("x", {"A": {"sim": 1.0}}, {"sim": 1.0}, epsilon=1.0)]
            ),
            "composite x: epsilon 1.0 is outside [0, 1)",
        ),
        (
            scorer_pb2.CompositeRequest(detectors=[scorer_pb2.DetectorComposite(name="y", alpha=1.5)]),
            "composite y: alpha 1.5 is outside [0, 1]",
        ),
        (
            scorer_pb2.CompositeRequest(
                generators=[
                    scorer_pb2.GeneratorComposite(
                        name="z", systems=[scorer_pb2.SystemMetrics(system="A"), scorer_pb2.SystemMetrics(system="A")]
                    )
                ]
            ),
            "composite z: system 'A' appears twice",
        ),
        (
            scorer_pb2.CompositeRequest(
                generators=[
                    scorer_pb2.GeneratorComposite(
                        name="w",
                        weights=[
                            scorer_pb2.MetricWeight(metric="sim", weight=1),
                            scorer_pb2.MetricWeight(metric="sim"),
                        ],
                    )
                ]
            ),
            "composite w: weighted metric 'sim' appears twice",
        ),
    ],
)
def test_a_bad_composite_request_is_invalid_argument(scorer, composite, fragment):
    with pytest.raises(grpc.RpcError) as e:
        scorer.Composite(composite)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and fragment in e.value.details()


def test_i2d_aggregates_by_hand(scorer):
    request = scorer_pb2.I2DAggregatesRequest(
        trajectories=[
            scorer_pb2.Trajectory(name="up", values=[0.9, 0.8, 0.6], higher_is_better=True),
            scorer_pb2.Trajectory(name="cer", values=[0.1, 0.2], higher_is_better=False),  # enters as 0.9, 0.8
            scorer_pb2.Trajectory(name="gap", values=[0.5, math.nan, 0.4], higher_is_better=True),
        ]
    )
    resp = scorer.I2DAggregates(request)
    up, cer, gap = resp.trajectories
    assert (up.name, up.iterations) == ("up", 3)
    assert (up.mean, up.lwa, up.ewa, up.auc) == pytest.approx(  # default decay 0.5: weights 1, .5, .25
        (2.3 / 3, (0.9 + 1.6 + 1.8) / 6, (0.9 + 0.4 + 0.15) / 1.75, (0.9 + 0.8) / 2 + (0.8 + 0.6) / 2)
    )
    assert (cer.name, cer.iterations) == ("cer", 2)
    assert (cer.mean, cer.lwa, cer.ewa, cer.auc) == pytest.approx((0.85, (0.9 + 1.6) / 3, (0.9 + 0.4) / 1.5, 0.85))
    assert gap.iterations == 3 and all(math.isnan(v) for v in (gap.mean, gap.lwa, gap.ewa, gap.auc))
    assert dict(resp.fingerprint) == dict(scorer.GetInfo(common_pb2.GetInfoRequest()).fingerprint)


def test_i2d_decay_is_the_requests_and_checked(scorer):
    flat_weights = scorer.I2DAggregates(
        scorer_pb2.I2DAggregatesRequest(
            ewa_decay=1.0, trajectories=[scorer_pb2.Trajectory(name="t", values=[0.9, 0.8, 0.6], higher_is_better=True)]
        )
    ).trajectories[0]
    assert flat_weights.ewa == pytest.approx(2.3 / 3)  # decay 1: every iteration weighs the same
    for decay in (0.0, -0.5, 1.5):
        with pytest.raises(grpc.RpcError) as e:
            scorer.I2DAggregates(scorer_pb2.I2DAggregatesRequest(ewa_decay=decay))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "ewa_decay" in e.value.details()


def test_summaries_wait_for_the_scorer_to_load():
    servicer = ScorerServicer(fingerprint_metrics=("rtf",))
    with pytest.raises(NotReady):
        servicer.Composite(scorer_pb2.CompositeRequest(), None)
    with pytest.raises(NotReady):
        servicer.I2DAggregates(scorer_pb2.I2DAggregatesRequest(), None)
