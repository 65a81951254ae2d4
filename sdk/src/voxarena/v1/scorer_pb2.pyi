from voxarena.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MetricSpec(_message.Message):
    __slots__ = ("name", "higher_is_better", "aggregation", "description", "needs", "columns")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HIGHER_IS_BETTER_FIELD_NUMBER: _ClassVar[int]
    AGGREGATION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NEEDS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    name: str
    higher_is_better: bool
    aggregation: str
    description: str
    needs: _containers.RepeatedScalarFieldContainer[str]
    columns: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., higher_is_better: _Optional[bool] = ..., aggregation: _Optional[str] = ..., description: _Optional[str] = ..., needs: _Optional[_Iterable[str]] = ..., columns: _Optional[_Iterable[str]] = ...) -> None: ...

class ScorerLimits(_message.Message):
    __slots__ = ("max_bootstrap_resamples", "max_clip_seconds", "max_clips_per_request", "max_trials_per_set", "max_bootstrap_draws")
    MAX_BOOTSTRAP_RESAMPLES_FIELD_NUMBER: _ClassVar[int]
    MAX_CLIP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MAX_CLIPS_PER_REQUEST_FIELD_NUMBER: _ClassVar[int]
    MAX_TRIALS_PER_SET_FIELD_NUMBER: _ClassVar[int]
    MAX_BOOTSTRAP_DRAWS_FIELD_NUMBER: _ClassVar[int]
    max_bootstrap_resamples: int
    max_clip_seconds: float
    max_clips_per_request: int
    max_trials_per_set: int
    max_bootstrap_draws: int
    def __init__(self, max_bootstrap_resamples: _Optional[int] = ..., max_clip_seconds: _Optional[float] = ..., max_clips_per_request: _Optional[int] = ..., max_trials_per_set: _Optional[int] = ..., max_bootstrap_draws: _Optional[int] = ...) -> None: ...

class ScorerInfo(_message.Message):
    __slots__ = ("model", "metrics", "fingerprint", "limits")
    class FingerprintEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODEL_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    model: _common_pb2.ModelInfo
    metrics: _containers.RepeatedCompositeFieldContainer[MetricSpec]
    fingerprint: _containers.ScalarMap[str, str]
    limits: ScorerLimits
    def __init__(self, model: _Optional[_Union[_common_pb2.ModelInfo, _Mapping]] = ..., metrics: _Optional[_Iterable[_Union[MetricSpec, _Mapping]]] = ..., fingerprint: _Optional[_Mapping[str, str]] = ..., limits: _Optional[_Union[ScorerLimits, _Mapping]] = ...) -> None: ...

class ClipRequest(_message.Message):
    __slots__ = ("request_id", "metrics", "audio", "text", "speaker_reference", "source_reference", "generation_timing", "reference_aligned")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    GENERATION_TIMING_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_ALIGNED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    metrics: _containers.RepeatedScalarFieldContainer[str]
    audio: _common_pb2.Audio
    text: str
    speaker_reference: _common_pb2.Audio
    source_reference: _common_pb2.Audio
    generation_timing: _common_pb2.Timing
    reference_aligned: bool
    def __init__(self, request_id: _Optional[str] = ..., metrics: _Optional[_Iterable[str]] = ..., audio: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., text: _Optional[str] = ..., speaker_reference: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., source_reference: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., generation_timing: _Optional[_Union[_common_pb2.Timing, _Mapping]] = ..., reference_aligned: _Optional[bool] = ...) -> None: ...

class ClipMeasurement(_message.Message):
    __slots__ = ("request_id", "values", "notes", "errors", "cluster")
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class NotesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ErrorsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    values: _containers.ScalarMap[str, float]
    notes: _containers.ScalarMap[str, str]
    errors: _containers.ScalarMap[str, str]
    cluster: str
    def __init__(self, request_id: _Optional[str] = ..., values: _Optional[_Mapping[str, float]] = ..., notes: _Optional[_Mapping[str, str]] = ..., errors: _Optional[_Mapping[str, str]] = ..., cluster: _Optional[str] = ...) -> None: ...

class Bootstrap(_message.Message):
    __slots__ = ("resamples", "seed", "confidence")
    RESAMPLES_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    resamples: int
    seed: int
    confidence: float
    def __init__(self, resamples: _Optional[int] = ..., seed: _Optional[int] = ..., confidence: _Optional[float] = ...) -> None: ...

class MeasureClipsRequest(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[ClipRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[ClipRequest, _Mapping]]] = ...) -> None: ...

class MeasureClipsResponse(_message.Message):
    __slots__ = ("items", "timing")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[ClipMeasurement]
    timing: _common_pb2.Timing
    def __init__(self, items: _Optional[_Iterable[_Union[ClipMeasurement, _Mapping]]] = ..., timing: _Optional[_Union[_common_pb2.Timing, _Mapping]] = ...) -> None: ...

class MeasurementGroup(_message.Message):
    __slots__ = ("name", "clips")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CLIPS_FIELD_NUMBER: _ClassVar[int]
    name: str
    clips: _containers.RepeatedCompositeFieldContainer[ClipMeasurement]
    def __init__(self, name: _Optional[str] = ..., clips: _Optional[_Iterable[_Union[ClipMeasurement, _Mapping]]] = ...) -> None: ...

class AggregateRequest(_message.Message):
    __slots__ = ("metrics", "groups", "bootstrap")
    METRICS_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    BOOTSTRAP_FIELD_NUMBER: _ClassVar[int]
    metrics: _containers.RepeatedScalarFieldContainer[str]
    groups: _containers.RepeatedCompositeFieldContainer[MeasurementGroup]
    bootstrap: Bootstrap
    def __init__(self, metrics: _Optional[_Iterable[str]] = ..., groups: _Optional[_Iterable[_Union[MeasurementGroup, _Mapping]]] = ..., bootstrap: _Optional[_Union[Bootstrap, _Mapping]] = ...) -> None: ...

class GroupMetrics(_message.Message):
    __slots__ = ("name", "values", "counts", "ci_low", "ci_high")
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class CountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class CiLowEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class CiHighEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    CI_LOW_FIELD_NUMBER: _ClassVar[int]
    CI_HIGH_FIELD_NUMBER: _ClassVar[int]
    name: str
    values: _containers.ScalarMap[str, float]
    counts: _containers.ScalarMap[str, int]
    ci_low: _containers.ScalarMap[str, float]
    ci_high: _containers.ScalarMap[str, float]
    def __init__(self, name: _Optional[str] = ..., values: _Optional[_Mapping[str, float]] = ..., counts: _Optional[_Mapping[str, int]] = ..., ci_low: _Optional[_Mapping[str, float]] = ..., ci_high: _Optional[_Mapping[str, float]] = ...) -> None: ...

class AggregateResponse(_message.Message):
    __slots__ = ("groups",)
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[GroupMetrics]
    def __init__(self, groups: _Optional[_Iterable[_Union[GroupMetrics, _Mapping]]] = ...) -> None: ...

class CostModel(_message.Message):
    __slots__ = ("p_spoof", "c_miss", "c_fa")
    P_SPOOF_FIELD_NUMBER: _ClassVar[int]
    C_MISS_FIELD_NUMBER: _ClassVar[int]
    C_FA_FIELD_NUMBER: _ClassVar[int]
    p_spoof: float
    c_miss: float
    c_fa: float
    def __init__(self, p_spoof: _Optional[float] = ..., c_miss: _Optional[float] = ..., c_fa: _Optional[float] = ...) -> None: ...

class TrialSet(_message.Message):
    __slots__ = ("name", "bonafide_scores", "spoof_scores", "bonafide_clusters", "spoof_clusters")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BONAFIDE_SCORES_FIELD_NUMBER: _ClassVar[int]
    SPOOF_SCORES_FIELD_NUMBER: _ClassVar[int]
    BONAFIDE_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    SPOOF_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    bonafide_scores: _containers.RepeatedScalarFieldContainer[float]
    spoof_scores: _containers.RepeatedScalarFieldContainer[float]
    bonafide_clusters: _containers.RepeatedScalarFieldContainer[str]
    spoof_clusters: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., bonafide_scores: _Optional[_Iterable[float]] = ..., spoof_scores: _Optional[_Iterable[float]] = ..., bonafide_clusters: _Optional[_Iterable[str]] = ..., spoof_clusters: _Optional[_Iterable[str]] = ...) -> None: ...

class DetectionMetricsRequest(_message.Message):
    __slots__ = ("sets", "costs", "bootstrap")
    SETS_FIELD_NUMBER: _ClassVar[int]
    COSTS_FIELD_NUMBER: _ClassVar[int]
    BOOTSTRAP_FIELD_NUMBER: _ClassVar[int]
    sets: _containers.RepeatedCompositeFieldContainer[TrialSet]
    costs: CostModel
    bootstrap: Bootstrap
    def __init__(self, sets: _Optional[_Iterable[_Union[TrialSet, _Mapping]]] = ..., costs: _Optional[_Union[CostModel, _Mapping]] = ..., bootstrap: _Optional[_Union[Bootstrap, _Mapping]] = ...) -> None: ...

class DetectionMetrics(_message.Message):
    __slots__ = ("name", "n_bonafide", "n_spoof", "eer", "eer_threshold", "min_dcf", "act_dcf", "cllr", "min_cllr", "ci_low", "ci_high")
    class CiLowEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class CiHighEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    N_BONAFIDE_FIELD_NUMBER: _ClassVar[int]
    N_SPOOF_FIELD_NUMBER: _ClassVar[int]
    EER_FIELD_NUMBER: _ClassVar[int]
    EER_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    MIN_DCF_FIELD_NUMBER: _ClassVar[int]
    ACT_DCF_FIELD_NUMBER: _ClassVar[int]
    CLLR_FIELD_NUMBER: _ClassVar[int]
    MIN_CLLR_FIELD_NUMBER: _ClassVar[int]
    CI_LOW_FIELD_NUMBER: _ClassVar[int]
    CI_HIGH_FIELD_NUMBER: _ClassVar[int]
    name: str
    n_bonafide: int
    n_spoof: int
    eer: float
    eer_threshold: float
    min_dcf: float
    act_dcf: float
    cllr: float
    min_cllr: float
    ci_low: _containers.ScalarMap[str, float]
    ci_high: _containers.ScalarMap[str, float]
    def __init__(self, name: _Optional[str] = ..., n_bonafide: _Optional[int] = ..., n_spoof: _Optional[int] = ..., eer: _Optional[float] = ..., eer_threshold: _Optional[float] = ..., min_dcf: _Optional[float] = ..., act_dcf: _Optional[float] = ..., cllr: _Optional[float] = ..., min_cllr: _Optional[float] = ..., ci_low: _Optional[_Mapping[str, float]] = ..., ci_high: _Optional[_Mapping[str, float]] = ...) -> None: ...

class DetectionMetricsResponse(_message.Message):
    __slots__ = ("sets",)
    SETS_FIELD_NUMBER: _ClassVar[int]
    sets: _containers.RepeatedCompositeFieldContainer[DetectionMetrics]
    def __init__(self, sets: _Optional[_Iterable[_Union[DetectionMetrics, _Mapping]]] = ...) -> None: ...

class SystemMetrics(_message.Message):
    __slots__ = ("system", "values")
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    system: str
    values: _containers.ScalarMap[str, float]
    def __init__(self, system: _Optional[str] = ..., values: _Optional[_Mapping[str, float]] = ...) -> None: ...

class MetricWeight(_message.Message):
    __slots__ = ("metric", "weight")
    METRIC_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    metric: str
    weight: float
    def __init__(self, metric: _Optional[str] = ..., weight: _Optional[float] = ...) -> None: ...

class GeneratorComposite(_message.Message):
    __slots__ = ("name", "systems", "weights", "epsilon")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SYSTEMS_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    name: str
    systems: _containers.RepeatedCompositeFieldContainer[SystemMetrics]
    weights: _containers.RepeatedCompositeFieldContainer[MetricWeight]
    epsilon: float
    def __init__(self, name: _Optional[str] = ..., systems: _Optional[_Iterable[_Union[SystemMetrics, _Mapping]]] = ..., weights: _Optional[_Iterable[_Union[MetricWeight, _Mapping]]] = ..., epsilon: _Optional[float] = ...) -> None: ...

class DetectorPair(_message.Message):
    __slots__ = ("detector", "generator", "eer", "cllr", "min_dcf")
    DETECTOR_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    EER_FIELD_NUMBER: _ClassVar[int]
    CLLR_FIELD_NUMBER: _ClassVar[int]
    MIN_DCF_FIELD_NUMBER: _ClassVar[int]
    detector: str
    generator: str
    eer: float
    cllr: float
    min_dcf: float
    def __init__(self, detector: _Optional[str] = ..., generator: _Optional[str] = ..., eer: _Optional[float] = ..., cllr: _Optional[float] = ..., min_dcf: _Optional[float] = ...) -> None: ...

class DetectorComposite(_message.Message):
    __slots__ = ("name", "pairs", "params_m", "alpha", "challenge")
    class ParamsMEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class ChallengeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    PARAMS_M_FIELD_NUMBER: _ClassVar[int]
    ALPHA_FIELD_NUMBER: _ClassVar[int]
    CHALLENGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    pairs: _containers.RepeatedCompositeFieldContainer[DetectorPair]
    params_m: _containers.ScalarMap[str, float]
    alpha: float
    challenge: _containers.ScalarMap[str, float]
    def __init__(self, name: _Optional[str] = ..., pairs: _Optional[_Iterable[_Union[DetectorPair, _Mapping]]] = ..., params_m: _Optional[_Mapping[str, float]] = ..., alpha: _Optional[float] = ..., challenge: _Optional[_Mapping[str, float]] = ...) -> None: ...

class CompositeRequest(_message.Message):
    __slots__ = ("generators", "detectors")
    GENERATORS_FIELD_NUMBER: _ClassVar[int]
    DETECTORS_FIELD_NUMBER: _ClassVar[int]
    generators: _containers.RepeatedCompositeFieldContainer[GeneratorComposite]
    detectors: _containers.RepeatedCompositeFieldContainer[DetectorComposite]
    def __init__(self, generators: _Optional[_Iterable[_Union[GeneratorComposite, _Mapping]]] = ..., detectors: _Optional[_Iterable[_Union[DetectorComposite, _Mapping]]] = ...) -> None: ...

class SystemScore(_message.Message):
    __slots__ = ("system", "score", "rank")
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    system: str
    score: float
    rank: int
    def __init__(self, system: _Optional[str] = ..., score: _Optional[float] = ..., rank: _Optional[int] = ...) -> None: ...

class CompositeResult(_message.Message):
    __slots__ = ("name", "higher_is_better", "scores", "error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HIGHER_IS_BETTER_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    higher_is_better: bool
    scores: _containers.RepeatedCompositeFieldContainer[SystemScore]
    error: str
    def __init__(self, name: _Optional[str] = ..., higher_is_better: _Optional[bool] = ..., scores: _Optional[_Iterable[_Union[SystemScore, _Mapping]]] = ..., error: _Optional[str] = ...) -> None: ...

class CompositeResponse(_message.Message):
    __slots__ = ("results", "fingerprint")
    class FingerprintEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CompositeResult]
    fingerprint: _containers.ScalarMap[str, str]
    def __init__(self, results: _Optional[_Iterable[_Union[CompositeResult, _Mapping]]] = ..., fingerprint: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Trajectory(_message.Message):
    __slots__ = ("name", "values", "higher_is_better")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    HIGHER_IS_BETTER_FIELD_NUMBER: _ClassVar[int]
    name: str
    values: _containers.RepeatedScalarFieldContainer[float]
    higher_is_better: bool
    def __init__(self, name: _Optional[str] = ..., values: _Optional[_Iterable[float]] = ..., higher_is_better: _Optional[bool] = ...) -> None: ...

class I2DAggregatesRequest(_message.Message):
    __slots__ = ("trajectories", "ewa_decay")
    TRAJECTORIES_FIELD_NUMBER: _ClassVar[int]
    EWA_DECAY_FIELD_NUMBER: _ClassVar[int]
    trajectories: _containers.RepeatedCompositeFieldContainer[Trajectory]
    ewa_decay: float
    def __init__(self, trajectories: _Optional[_Iterable[_Union[Trajectory, _Mapping]]] = ..., ewa_decay: _Optional[float] = ...) -> None: ...

class TrajectoryAggregates(_message.Message):
    __slots__ = ("name", "iterations", "mean", "lwa", "ewa", "auc")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    LWA_FIELD_NUMBER: _ClassVar[int]
    EWA_FIELD_NUMBER: _ClassVar[int]
    AUC_FIELD_NUMBER: _ClassVar[int]
    name: str
    iterations: int
    mean: float
    lwa: float
    ewa: float
    auc: float
    def __init__(self, name: _Optional[str] = ..., iterations: _Optional[int] = ..., mean: _Optional[float] = ..., lwa: _Optional[float] = ..., ewa: _Optional[float] = ..., auc: _Optional[float] = ...) -> None: ...

class I2DAggregatesResponse(_message.Message):
    __slots__ = ("trajectories", "fingerprint")
    class FingerprintEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TRAJECTORIES_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    trajectories: _containers.RepeatedCompositeFieldContainer[TrajectoryAggregates]
    fingerprint: _containers.ScalarMap[str, str]
    def __init__(self, trajectories: _Optional[_Iterable[_Union[TrajectoryAggregates, _Mapping]]] = ..., fingerprint: _Optional[_Mapping[str, str]] = ...) -> None: ...

class AlignRequest(_message.Message):
    __slots__ = ("request_id", "audio", "text")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    audio: _common_pb2.Audio
    text: str
    def __init__(self, request_id: _Optional[str] = ..., audio: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., text: _Optional[str] = ...) -> None: ...

class AlignedWord(_message.Message):
    __slots__ = ("word", "start_seconds", "end_seconds")
    WORD_FIELD_NUMBER: _ClassVar[int]
    START_SECONDS_FIELD_NUMBER: _ClassVar[int]
    END_SECONDS_FIELD_NUMBER: _ClassVar[int]
    word: str
    start_seconds: float
    end_seconds: float
    def __init__(self, word: _Optional[str] = ..., start_seconds: _Optional[float] = ..., end_seconds: _Optional[float] = ...) -> None: ...

class AlignResponse(_message.Message):
    __slots__ = ("request_id", "words", "aligner")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    WORDS_FIELD_NUMBER: _ClassVar[int]
    ALIGNER_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    words: _containers.RepeatedCompositeFieldContainer[AlignedWord]
    aligner: str
    def __init__(self, request_id: _Optional[str] = ..., words: _Optional[_Iterable[_Union[AlignedWord, _Mapping]]] = ..., aligner: _Optional[str] = ...) -> None: ...
