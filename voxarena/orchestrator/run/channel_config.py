"""A channel condition's steps as a run config writes them (``conditions: NAME: [STEP, ...]``): what each
step kind takes and the rule that a step is exactly one kind. What the steps do is ``run.channel``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from voxarena.orchestrator.fleet.service_config import Strict

STEP_KINDS = ("resample", "codec", "noise_snr_db", "gain_db", "transform", "resynthesize", "attack")


class AttackStep(Strict):
    """An adaptive black-box attack on the spoofed clips (``voxarena.attack``): random search over band gains
    and shaped noise within ``snr_db`` / ``max_gain_db``, using only ``target``'s ScoreBatch answers, at most
    ``queries`` clips scored (the original's included). Bona fide clips pass unchanged."""

    target: str = Field(description="the detector attacked (a detector service of this run)")
    queries: int = Field(100, ge=2, le=5000, description="query budget per clip")
    snr_db: float = Field(30.0, ge=10, le=80, description="minimum SNR of the perturbation, dB")
    max_gain_db: float = Field(6.0, gt=0, le=20, description="bound on every band gain, +- dB")
    bands: int = Field(8, ge=2, le=32)
    noise: bool = True
    batch: int = Field(4, ge=1, le=64, description="candidates per ScoreBatch call")


class ChannelStep(Strict):
    """One step of a channel condition: exactly one of resample, codec, noise_snr_db, gain_db, transform
    (the name of an entry under ``transforms:``, a TransformService, called with ``parameters``), resynthesize
    (a generator under ``generators:`` that declares RECONSTRUCT: copy-synthesis of the clip) or attack."""

    resample: int | None = Field(None, ge=4000, le=192000, description="new sample rate, Hz")
    codec: Literal["mp3", "opus", "vorbis", "gsm", "ulaw", "alaw"] | None = None
    compression: float | None = Field(None, ge=0, le=1, description="mp3/opus/vorbis: 0 = best quality, 1 = smallest")
    noise_snr_db: float | None = Field(None, ge=-20, le=100)
    noise: Literal["white", "pink"] = "white"
    gain_db: float | None = Field(None, ge=-60, le=40)
    transform: str | None = Field(None, description="a transform service's name (transforms:)")
    resynthesize: str | None = Field(
        None, description="a generator of the run (generators:) that re-synthesises the clip (its RECONSTRUCT task)"
    )
    parameters: dict[str, str] = Field({}, description="with transform: its options (TransformInfo.ranges)")
    attack: AttackStep | None = None

    @model_validator(mode="after")
    def _one_kind(self):
        kinds = [k for k in STEP_KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                f"a step sets exactly one of {', '.join(STEP_KINDS)}" + (f" (got {', '.join(kinds)})" if kinds else "")
            )
        if self.parameters and self.transform is None:
            raise ValueError("parameters: apply to a transform step only")
        from voxarena.dsp.channel import COMPRESSIBLE

        if self.compression is not None and self.codec not in COMPRESSIBLE:
            raise ValueError(f"compression applies to codec {', '.join(COMPRESSIBLE)} only")
        if self.codec == "mp3" and self.compression == 1.0:
            raise ValueError("mp3: libsndfile's encoder refuses compression 1.0; 0.99 is its lowest bit rate")
        return self
