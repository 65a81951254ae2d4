# The image of a catalogued service that needs nothing of its own (voxarena/catalogue.py): its Debian
# packages, its pyproject extra, the project's code, the non-root user and the gRPC healthcheck.
# compose/build_images.py passes the catalogue's values as build arguments and appends the CMD line,
#   CMD ["python", "-m", MODULE, "--port", "50051"]
# because Docker expands no build argument in CMD. By hand (with the wheelhouse served, see
# compose/README.md): { cat compose/service.Dockerfile; echo 'CMD [...]'; } | docker build --network host \
#   -f - --build-arg EXTRA=espeak --build-arg DEBIAN_PACKAGES=espeak-ng -t voxarena/espeak-ng .
ARG RUNTIME_IMAGE=voxarena/runtime:latest
FROM ${RUNTIME_IMAGE}
USER root
# Space-separated; none: the layer is empty.
ARG DEBIAN_PACKAGES=
RUN if [ -n "${DEBIAN_PACKAGES}" ]; then apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${DEBIAN_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*; fi
# Wheels from the wheelhouse that compose/build_images.py serves on the build host (--network host).
ARG WHEELHOUSE_URL=http://127.0.0.1:8765/
ARG DEPS_DIGEST=unset
ARG EXTRA
RUN pip install --find-links ${WHEELHOUSE_URL} "voxarena[${EXTRA}]"
# The project's own code last, so a code change rebuilds only this layer.
ARG SOURCE_DIGEST=unset
RUN pip install --find-links ${WHEELHOUSE_URL} --no-deps --force-reinstall voxarena voxarena-sdk
USER voxarena
HEALTHCHECK --interval=5s --timeout=5s --start-period=60s --retries=3 CMD ["python", "-m", "voxarena.sdk.healthcheck"]
