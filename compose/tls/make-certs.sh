#!/usr/bin/env bash
# Make a private CA and certificates for VoxArena's TLS / mTLS (`make certs`; tests call it too).
#   compose/tls/make-certs.sh OUT_DIR [SERVICE_NAME ...]
# OUT_DIR/ca.pem, ca.key       the CA (keep ca.key private; it signs the others)
# OUT_DIR/server.pem, .key     one certificate for every service: SAN localhost, 127.0.0.1, ::1 and each
#                              SERVICE_NAME (the compose names); usable for server and client auth, so a
#                              container's healthcheck can present it under mTLS
# OUT_DIR/client.pem, .key     the orchestrator's client certificate (mTLS)
# EC P-256 keys, 825 days. An existing OUT_DIR/ca.pem is kept, so new service certificates stay trusted.
set -euo pipefail
out=${1:?usage: make-certs.sh OUT_DIR [SERVICE_NAME ...]}
shift
mkdir -p "$out"
cd "$out"
umask 077
san="DNS:localhost,IP:127.0.0.1,IP:::1"
for name in "$@"; do san="$san,DNS:$name"; done
if [ ! -f ca.pem ]; then
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout ca.key -out ca.pem \
    -days 825 -subj "/CN=VoxArena private CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi
issue() {  # issue NAME CN EXTENDED_KEY_USAGE SAN
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout "$1.key" -out "$1.csr" \
    -subj "/CN=$2" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\nsubjectAltName=%s\n' \
    "$3" "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.pem" -days 825 \
    -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
issue server "voxarena services" "serverAuth,clientAuth" "$san"
issue client "voxarena orchestrator" "clientAuth" "DNS:orchestrator"
chmod 644 ca.pem server.pem client.pem
# Containers run as uid 10001: the service key must be readable there (the directory is mounted read-only).
chmod 644 server.key
echo "certificates in $out (CA, server for: ${*:-localhost only}, client)"
