# The conformance checker as an image, for a vendor without Python: the voxarena-sdk distribution alone
# (its console script voxarena-conformance) on the runtime layer. Built by `make images`
# (compose/build_images.py, the tool images after the services).
#   docker run --rm --network host voxarena/conformance HOST:PORT [--strict] [--json /out/report.json]
ARG RUNTIME_IMAGE=voxarena/runtime:latest
FROM ${RUNTIME_IMAGE}
USER root
ARG WHEELHOUSE_URL=http://127.0.0.1:8765/
ARG SOURCE_DIGEST=unset
RUN pip install --find-links ${WHEELHOUSE_URL} --no-deps --force-reinstall voxarena-sdk
USER voxarena
ENTRYPOINT ["voxarena-conformance"]
CMD ["--help"]
