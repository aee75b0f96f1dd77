#!/usr/bin/env bash
# Generates the test PKI into <outdir> at test time (no key is committed):
#   ca.pem ca.key              test CA
#   server.pem server.key      CN=localhost, SAN DNS:localhost IP:127.0.0.1
#   client.pem client.key      client certificate (clientAuth), same CA
#   expired.pem expired.key    server certificate of the same CA, expired
#   wrongca.pem wrongca.key    another CA
#   wrong.pem wrong.key        a client/server certificate of the other CA
# Idempotent: does nothing when <outdir>/.done exists and is newer than this
# script. Usage: gen.sh <outdir>
set -euo pipefail
out="${1:?usage: gen.sh <outdir>}"
mkdir -p "$out"
if [ -f "$out/.done" ] && [ "$out/.done" -nt "$0" ]; then
	exit 0
fi
cd "$out"
rm -rf ca.db && mkdir -p ca.db
umask 077

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }

cat >ext.cnf <<'CNF'
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
[client_ext]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
[ca]
default_ca = testca
[testca]
dir = ca.db
database = ca.db/index.txt
new_certs_dir = ca.db
serial = ca.db/serial
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
CNF

mkca() { # name cn
	key "$1.key"
	openssl req -x509 -new -key "$1.key" -sha256 -days 3650 -subj "/CN=$2" \
	    -config ext.cnf -extensions ca_ext -out "$1.pem"
}
mkcert() { # name cn ca ext
	key "$1.key"
	openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
	openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" \
	    -CAcreateserial -days 3650 -sha256 -extfile ext.cnf \
	    -extensions "$4" -out "$1.pem" 2>/dev/null
	rm -f "$1.csr"
}

mkca ca "ebnode test CA"
mkca wrongca "ebnode wrong CA"
mkcert server localhost ca server_ext
mkcert client "ebnode test client" ca client_ext
mkcert wrong localhost wrongca server_ext

# Expired: openssl x509 cannot backdate, openssl ca can.
key expired.key
openssl req -new -key expired.key -subj "/CN=localhost" -out expired.csr
: >ca.db/index.txt
echo 1000 >ca.db/serial
openssl ca -batch -config ext.cnf -cert ca.pem -keyfile ca.key \
    -startdate 20200101000000Z -enddate 20200102000000Z \
    -extfile ext.cnf -extensions server_ext -notext \
    -in expired.csr -out expired.pem 2>/dev/null
rm -f expired.csr
chmod 644 ./*.pem
openssl verify -CAfile ca.pem server.pem client.pem >/dev/null
touch .done
echo "certs: generated in $out"
