# Prometheus for the compose stack's "monitoring" profile: Debian's package on the runtime layer, built
# locally like every image (no registry). Its configuration comes from compose/monitoring/prometheus.yml
# (mounted; written by `make generate`); its data lives in /tmp (a tmpfs: monitoring, not an archive).
#   docker-compose --profile monitoring up -d      # then http://127.0.0.1:9090
ARG RUNTIME_IMAGE=voxarena/runtime:latest
FROM ${RUNTIME_IMAGE}
USER root
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
USER voxarena
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus", "--config.file=/etc/voxarena/prometheus.yml", "--storage.tsdb.path=/tmp/prometheus", \
            "--storage.tsdb.retention.time=2d", "--web.listen-address=:9090"]
