# The layer every VoxArena image shares: a Python venv with the contract's runtime (grpcio, health,
# reflection, numpy, soxr, ...) and a non-root user. Model images start FROM it.
#   BASE_IMAGE: voxarena/base:bookworm (make base-image: debootstrap + docker import, no registry
#   needed) or any Debian-based Python 3.11 image, e.g. python:3.11-slim-bookworm.
# Wheels come from build/wheelhouse (make wheelhouse), which the Makefile serves on the build host
# while it builds with --network host: image builds need no package index.
ARG BASE_IMAGE=voxarena/base:bookworm
FROM ${BASE_IMAGE}
RUN python3 -m venv /opt/venv \
 && (getent passwd voxarena || useradd --system --uid 10001 --home-dir /tmp --shell /usr/sbin/nologin voxarena)
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    HOME=/tmp NUMBA_CACHE_DIR=/tmp/numba HF_HOME=/tmp/hf \
    OMP_WAIT_POLICY=PASSIVE KMP_BLOCKTIME=0 \
    PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# The third-party core dependencies of both distributions (voxarena and the voxarena-sdk it depends on);
# the project's own code comes later, in each service image.
COPY pyproject.toml /tmp/pyproject.toml
COPY sdk/pyproject.toml /tmp/sdk-pyproject.toml
ARG WHEELHOUSE_URL=http://127.0.0.1:8765/
RUN python -c "import tomllib; deps = [d for f in ('/tmp/pyproject.toml', '/tmp/sdk-pyproject.toml') \
      for d in tomllib.load(open(f, 'rb'))['project']['dependencies'] if not d.startswith('voxarena-sdk')]; \
      print('\n'.join(deps))" > /tmp/core.txt \
 && pip install --find-links ${WHEELHOUSE_URL} -r /tmp/core.txt && rm /tmp/core.txt /tmp/pyproject.toml /tmp/sdk-pyproject.toml
WORKDIR /tmp
EXPOSE 50051
