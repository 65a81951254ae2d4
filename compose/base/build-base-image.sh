#!/usr/bin/env bash
# Builds the VoxArena base image from nothing, for machines without an image registry:
# a minimal Debian root made with debootstrap (Python 3 from Debian), imported with `docker import`.
#
#   compose/base/build-base-image.sh [IMAGE]        (default voxarena/base:bookworm; needs root)
#
# The Debian mirror is the one this machine's apt already uses (override: DEBIAN_MIRROR=...).
# With a registry, skip this: build the services with BASE_IMAGE=python:3.11-slim-bookworm.
set -euo pipefail
IMAGE=${1:-voxarena/base:bookworm}
SUITE=${DEBIAN_SUITE:-bookworm}
if [ -z "${DEBIAN_MIRROR:-}" ]; then
  DEBIAN_MIRROR=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
  [ -n "$DEBIAN_MIRROR" ] || DEBIAN_MIRROR=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
fi
[ -n "$DEBIAN_MIRROR" ] || { echo "no Debian mirror found in apt's sources; set DEBIAN_MIRROR" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
ROOT=$(mktemp -d /tmp/voxarena-rootfs.XXXXXX)
trap 'rm -rf "$ROOT"' EXIT
# python3-venv: the images install into a venv; libgomp1: onnxruntime/ctranslate2; libsndfile1: soundfile.
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,libgomp1,libsndfile1 \
  "$SUITE" "$ROOT" "$DEBIAN_MIRROR"
# Same mirror inside, so a Dockerfile's apt-get install works as it does on this machine.
cat > "$ROOT/etc/apt/sources.list" <<SOURCES
deb $DEBIAN_MIRROR $SUITE main
deb $DEBIAN_MIRROR $SUITE-updates main
SOURCES
chroot "$ROOT" apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/*
tar -C "$ROOT" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' - "$IMAGE"
docker image inspect "$IMAGE" --format '{{.Id}} {{.Size}}'
