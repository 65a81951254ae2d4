# The converter: a build stage holding torch, never served. It converts every model of
# voxarena.convert.CONVERTERS from its registry package's torch checkpoint to ONNX (sha256 of the source
# weights checked, ONNX checked against torch on real speech) into /opt/voxarena/models; serving images
# take their model with `FROM ${CONVERTER_IMAGE} AS converted` + `COPY --from=converted ...`.
# Built by compose/build_images.py (make images) before the images that use it.
ARG BASE_IMAGE=voxarena/base:bookworm
FROM ${BASE_IMAGE}
# Debian's CPU torch (about 1.2 GB of packages; PyPI's torch is the multi-GB CUDA build) and its numpy;
# torchaudio because resemble-perth's package imports it (its STFT is the reference the check compares with).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch python3-torchaudio python3-venv \
 && rm -rf /var/lib/apt/lists/*
# Debian's python3 explicitly: a python:3.11-slim base has its own python3 that would not see Debian's torch.
RUN /usr/bin/python3 -m venv --system-site-packages /opt/convert \
 && /usr/bin/python3 -c 'import numpy; print(f"numpy=={numpy.__version__}")' > /opt/convert/constraints.txt
ENV PATH=/opt/convert/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp NUMBA_CACHE_DIR=/tmp/numba OMP_NUM_THREADS=1 \
    PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY voxarena/convert/requirements.txt voxarena/convert/sources.txt /tmp/convert/
# Wheels from the wheelhouse that compose/build_images.py serves on the build host (--network host).
ARG WHEELHOUSE_URL=http://127.0.0.1:8765/
RUN pip install -c /opt/convert/constraints.txt --find-links ${WHEELHOUSE_URL} -r /tmp/convert/requirements.txt \
 && pip install --no-deps --find-links ${WHEELHOUSE_URL} -r /tmp/convert/sources.txt
ARG DEPS_DIGEST=unset
RUN pip install -c /opt/convert/constraints.txt --find-links ${WHEELHOUSE_URL} voxarena
# The conversions are keyed by the project code they run (CONVERT_DIGEST, compose/build_images.py), which
# goes in afresh in the same step: a commit that leaves that code alone reuses them (about 5 minutes).
# The check clips (LibriSpeech, sha256-verified) come over HTTP from the build host and are not kept.
ARG CONVERT_DIGEST=unset
ARG SPEECH_URL=http://127.0.0.1:8765/speech/
RUN pip install --find-links ${WHEELHOUSE_URL} --no-deps --force-reinstall voxarena voxarena-sdk \
 && python -m voxarena.convert --out /opt/voxarena/models --speech-url ${SPEECH_URL}
