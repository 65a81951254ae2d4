"""The service catalogue: every service VoxArena ships, its identity written once.

Read by local mode (``voxarena.orchestrator.fleet.local_services``: name -> module), by ``compose/build_images.py``
(which image, which Dockerfile, which extra, Debian packages and converted model), by the Makefile
(``python -m voxarena.catalogue extras``: the images' extras; ``... trainable``: the detectors
``make train-detectors`` trains) and by the detectors' training registry. ``make generate``
(``voxarena/deploy/generate.py``) writes ``docker-compose.yml``, the mTLS overlay, the Swarm stack, the
Kubernetes tree and the README's services table from it; each own Dockerfile and the pyproject extras and
install profiles are checked against it (``tests/voxarena/test_catalogue.py``).

Adding a model service: its folder under ``voxarena/services/<role>s/<name>/``, one row here, its extra in
``pyproject.toml``, then ``make generate``.

Most images come from one parametrised Dockerfile, ``compose/service.Dockerfile``; a service has its
own only where the image truly differs, and ``own_dockerfile`` says how.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal

Role = Literal["generator", "detector", "transform", "scorer", "orchestrator"]
Profile = Literal["demo", "test", "optional"]

SERVICE_DOCKERFILE = "compose/service.Dockerfile"
PORT = 50051  # the port every image serves on (its CMD), the one the compose stack dials
# The record a trainer writes in its weights directory (``--out``): the weight files' sha256, the training
# manifest's, the calibration. The detector's service checks its weights against it; a race reads it.
WEIGHTS_METADATA = "metadata.json"
TRAINING = "voxarena.services.detectors.training"  # the trained detectors' shared training entry point


@dataclass(frozen=True)
class Service:
    name: str  # the compose service, the image's name and the name a run config uses
    role: Role
    module: str  # ``python -m MODULE`` serves it (local mode and the image's CMD)
    # The install profile whose venv runs it locally: demo (``make setup``), test (``make setup-test``),
    # optional (an opt-in step of its own, e.g. ``make setup-mbrola``).
    profile: Profile
    extra: str | None = None  # its pyproject extra; None: the core dependencies suffice
    debian_packages: tuple[str, ...] = ()  # what its engine needs from Debian (image and `make setup`)
    converted_model: str | None = None  # a ``voxarena.convert.CONVERTERS`` model the image copies from the converter
    compose_profile: str | None = None  # the compose profile that must be named to start it
    serve_args: tuple[str, ...] = ()  # arguments after ``--port`` in the image's CMD
    own_dockerfile: str = ""  # why it has its own Dockerfile; empty: ``compose/service.Dockerfile``
    # The container's limits where they differ from the stack's default (docker-compose.yml's x-model).
    cpus: float | None = None
    mem_limit: str | None = None  # compose's size syntax, e.g. "4g"
    volumes: tuple[str, ...] = ()  # compose volumes, ``SOURCE:PATH[:ro]``
    # A detector whose weights a race can retrain: ``python -m TRAINER --detector NAME --data RUN... --out DIR``
    # (with --seed, --dev-fraction, --max-epochs, --loao-dir, --keep-current, --as-command, --quiet: the
    # arguments of ``voxarena.services.detectors.training``) writes them, with ``WEIGHTS_METADATA``, into DIR;
    # the service serves the weights in ``$weights_env``. None: not trainable.
    trainer: str | None = None

    @property
    def image(self) -> str:
        return f"voxarena/{self.name}:latest"

    @property
    def dockerfile(self) -> str:
        """The Dockerfile its image is built from: its own, beside its module, or the shared one."""
        return f"{self.module.replace('.', '/')}/Dockerfile" if self.own_dockerfile else SERVICE_DOCKERFILE

    @property
    def trainable(self) -> bool:
        """A detector a trainer fits (``make train-detectors``, the training registry, the race)."""
        return self.trainer is not None

    @property
    def weights_env(self) -> str:
        """The environment variable that points a trained detector's service at a weights directory."""
        return f"VOXARENA_{self.name.upper().replace('-', '_')}_WEIGHTS"

    @property
    def command(self) -> list[str]:
        """The image's CMD."""
        return ["python", "-m", self.module, "--port", str(PORT), *self.serve_args]

    @property
    def folder(self) -> str:
        """Its package's folder, relative to the repository root."""
        return self.module.replace(".", "/")


_CONVERTED = "copies its converted model from the converter image and sets VOXARENA_MODELS"

SERVICES: tuple[Service, ...] = (
    Service("piper-vits", "generator", "voxarena.services.generators.piper_vits", "demo", extra="piper"),
    Service(
        "espeak-ng",
        "generator",
        "voxarena.services.generators.espeak_ng",
        "demo",
        extra="espeak",
        debian_packages=("espeak-ng",),
    ),
    Service(
        "mbrola",
        "generator",
        "voxarena.services.generators.mbrola",
        "optional",
        extra="espeak",
        debian_packages=("espeak-ng", "mbrola", "mbrola-us1", "mbrola-us2", "mbrola-us3"),
        compose_profile="nonfree",
        own_dockerfile="adds Debian's contrib/non-free sources for the MBROLA voices",
    ),
    Service(
        "flite", "generator", "voxarena.services.generators.flite", "demo", extra="flite", debian_packages=("flite",)
    ),
    Service(
        "festival-hts",
        "generator",
        "voxarena.services.generators.festival_hts",
        "demo",
        extra="festival",
        debian_packages=("festival", "festvox-us-slt-hts"),
    ),
    Service("world-vocoder", "generator", "voxarena.services.generators.world_vocoder", "demo", extra="world"),
    Service("griffin-lim", "generator", "voxarena.services.generators.griffin_lim", "demo", extra="griffin-lim"),
    Service("mlsa-vocoder", "generator", "voxarena.services.generators.mlsa_vocoder", "demo", extra="mlsa"),
    Service(
        "codec2",
        "generator",
        "voxarena.services.generators.codec2",
        "demo",
        extra="codec2",
        debian_packages=("codec2",),
    ),
    Service("world-vc", "generator", "voxarena.services.generators.world_vc", "demo", extra="world-vc"),
    Service(
        "kokoro",
        "generator",
        "voxarena.services.generators.kokoro",
        "demo",
        extra="kokoro",
        debian_packages=("espeak-ng",),
        own_dockerfile="builds CLONE's style bank into the image (VOXARENA_CACHE)",
    ),
    Service(
        "hifigan",
        "generator",
        "voxarena.services.generators.hifigan",
        "demo",
        extra="hifigan",
        converted_model="hifigan",
        own_dockerfile=_CONVERTED,
    ),
    # Trained here (`make train-generators`): the diffusion vocoder and the neural codec families.
    Service(
        "diffwave-small", "generator", "voxarena.services.generators.diffwave_small", "demo", extra="diffwave-small"
    ),
    Service("codec-rvq", "generator", "voxarena.services.generators.codec_rvq", "demo", extra="codec-rvq"),
    Service("lfcc-gmm", "detector", "voxarena.services.detectors.lfcc_gmm", "demo", extra="lfcc-gmm", trainer=TRAINING),
    Service(
        "lfcc-lcnn", "detector", "voxarena.services.detectors.lfcc_lcnn", "demo", extra="lfcc-lcnn", trainer=TRAINING
    ),
    Service("rawnet2", "detector", "voxarena.services.detectors.rawnet2", "demo", extra="rawnet2", trainer=TRAINING),
    Service("aasist", "detector", "voxarena.services.detectors.aasist", "demo", extra="aasist", trainer=TRAINING),
    Service(
        "aasist-asv19",
        "detector",
        "voxarena.services.detectors.aasist_asv19",
        "demo",
        extra="aasist-asv19",
        converted_model="aasist-asv19",
        own_dockerfile=_CONVERTED,
    ),
    Service(
        "whisper-frontend",
        "detector",
        "voxarena.services.detectors.whisper_frontend",
        "demo",
        extra="whisper-frontend",
        trainer=TRAINING,
    ),
    # Localises partial fakes (20 ms segment scores): trained by its own data run and trainer (`make train-partial`).
    Service("frame-lcnn", "detector", "voxarena.services.detectors.frame_lcnn", "demo", extra="frame-lcnn"),
    # Source tracing (DetectorInfo.attribution): trained by its own data run and trainer (`make train-tracer`).
    Service("source-tracer", "detector", "voxarena.services.detectors.source_tracer", "demo", extra="source-tracer"),
    # Perth-Net watermark: the detector that looks for it (its embedder is a transform, below).
    Service(
        "perth-detect",
        "detector",
        "voxarena.services.detectors.perth_detect",
        "demo",
        extra="perth",
        converted_model="perth",
        own_dockerfile=_CONVERTED,
    ),
    Service(
        "hf-audio-classifier",
        "detector",
        "voxarena.services.detectors.hf_audio_classifier",
        "test",
        extra="hf-audio-classifier",
        compose_profile="torch",
        serve_args=("--model-dir", "/model"),
        volumes=("${VOXARENA_HF_MODEL_DIR:-./models/hf}:/model:ro",),  # your checkpoint
        own_dockerfile="torch, built only on request after `make wheelhouse-torch`: not rebuilt here "
        "to check it against the shared one",
    ),
    Service(
        "hf-tts",
        "generator",
        "voxarena.services.generators.hf_tts",
        "test",
        extra="hf-tts",
        compose_profile="torch",
        serve_args=("--model-dir", "/model"),
        volumes=("${VOXARENA_HF_TTS_MODEL_DIR:-./models/hf-tts}:/model:ro",),  # your checkpoint
        own_dockerfile="torch, built only on request after `make wheelhouse-torch`: not rebuilt here "
        "to check it against the shared one",
    ),
    # Transform services (TransformService): the laundering chain and the orchestrator's channel steps.
    Service("laundering", "transform", "voxarena.services.transforms.laundering", "demo", extra="transforms"),
    Service("channel", "transform", "voxarena.services.transforms.channel", "demo", extra="transforms"),
    Service(
        "perth-embed",
        "transform",
        "voxarena.services.transforms.perth_embed",
        "demo",
        extra="perth",
        converted_model="perth",
        own_dockerfile=_CONVERTED,
    ),
    Service(
        "scorer",
        "scorer",
        "voxarena.scorers",
        "demo",
        extra="scorer",
        debian_packages=("espeak-ng",),  # Align spells the words outside PocketSphinx's dictionary
        converted_model="distillmos",
        own_dockerfile="resemblyzer without its dependencies (torch); " + _CONVERTED,
        cpus=2.0,
        mem_limit="4g",
    ),
    Service(
        "orchestrator",
        "orchestrator",
        "voxarena.orchestrator",
        "demo",
        compose_profile="tools",
        own_dockerfile="the CLI as ENTRYPOINT, WORKDIR /work, no healthcheck: a client, not a service",
    ),
)

# The small services shipped in the package for tests (name -> module): local mode only, no image,
# not in the README.
TEST_DOUBLES = {
    "dummy-generator": "voxarena.services.testing.dummy_generator",
    "dummy-cloner": "voxarena.services.testing.dummy_cloner",
    "dummy-detector": "voxarena.services.testing.dummy_detector",
    "whole-detector": "voxarena.services.testing.whole_detector",
    "dummy-tracer": "voxarena.services.testing.dummy_tracer",
    "misbehaving-generator": "voxarena.services.testing.misbehaving_generator",
}


def local_modules() -> dict[str, str]:
    """Name -> module of every service local mode can start (not the orchestrator: it starts them)."""
    return {**{s.name: s.module for s in SERVICES if s.role != "orchestrator"}, **TEST_DOUBLES}


def image_extras() -> list[str]:
    """The extras the default image build installs (``make wheelhouse``): the "torch" profile's opt in."""
    return list(dict.fromkeys(s.extra for s in SERVICES if s.extra and s.compose_profile != "torch"))


def trainable(services: tuple[Service, ...] = SERVICES) -> list[str]:
    """The detectors the training pipeline fits, in catalogue order (``make train-detectors``)."""
    return [s.name for s in services if s.trainable]


USAGE = """usage: python -m voxarena.catalogue extras      (the images' pyproject extras, comma-separated)
       python -m voxarena.catalogue trainable   (the trainable detectors, space-separated)"""


def main(argv: list[str]) -> int:
    if argv == ["extras"]:
        print(",".join(image_extras()))
        return 0
    if argv == ["trainable"]:
        print(" ".join(trainable()))
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
