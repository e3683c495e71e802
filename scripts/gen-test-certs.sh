#!/bin/sh
# Makes the certificates and keys of test/fixtures/tls (run once; the results are committed so
# that Apache and plume are recorded and replayed on the same files): a CA, server
# certificates (RSA and ECDSA) for localhost and two name-based hosts, client certificates (a
# good one, a revoked one, one from another CA), the CA's revocation list, an expired server
# certificate, an encrypted key (pass phrase "plume") and a key that matches nothing.
set -e
out=${1:-test/fixtures/tls}
mkdir -p "$out"
cd "$out"
days=36500
cat > ca.cnf <<'X'
[ca]
default_ca = ca_default
[ca_default]
dir = .
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = anything
default_crl_days = 36500
[anything]
commonName = supplied
[v3_ca]
basicConstraints = critical,CA:true
keyUsage = keyCertSign,cRLSign
[server]
basicConstraints = CA:false
subjectAltName = DNS:localhost,DNS:a.example,DNS:b.example,IP:127.0.0.1
[client]
basicConstraints = CA:false
extendedKeyUsage = clientAuth
1.3.6.1.4.1.18060.12.0 = ASN1:UTF8String:Lemons
subjectAltName = email:alice@example.com
X
: > index.txt
echo 1000 > serial
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days $days -subj "/C=US/O=Plume Test/CN=Plume Test CA" -addext "basicConstraints=critical,CA:true" -addext "keyUsage=keyCertSign,cRLSign" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days $days -subj "/C=US/O=Elsewhere/CN=Other CA" 2>/dev/null
sign() { # name subject extsection [keyalg]
  if [ "$4" = ec ]; then openssl ecparam -name prime256v1 -genkey -noout -out "$1.key"; else openssl genrsa -out "$1.key" 2048 2>/dev/null; fi
  openssl req -new -key "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAserial serial -out "$1.crt" -days $days -extfile ca.cnf -extensions "$3" -sha256 2>/dev/null
  rm -f "$1.csr"
}
sign server "/C=US/ST=California/L=San Francisco/O=Plume Test/OU=Web/CN=localhost" server
sign server-ec "/C=US/O=Plume Test/CN=localhost" server ec
sign client "/C=US/ST=California/O=ASF/OU=httpd-test/CN=client_ok/emailAddress=alice@example.com" client
sign revoked "/C=US/O=ASF/OU=httpd-test/CN=client_revoked" client
# A client certificate from a CA the server does not know.
openssl genrsa -out stranger.key 2048 2>/dev/null
openssl req -new -key stranger.key -subj "/C=US/O=Elsewhere/CN=stranger" 2>/dev/null | openssl x509 -req -CA other-ca.crt -CAkey other-ca.key -CAcreateserial -out stranger.crt -days $days 2>/dev/null
# The revocation list: "revoked" is on it.
cp revoked.crt revoked-copy.pem
openssl ca -config ca.cnf -keyfile ca.key -cert ca.crt -revoke revoked.crt -batch 2>/dev/null || true
# openssl ca needs the certificate in its database first: add it by hand when -revoke refused.
if ! grep -q '^R' index.txt; then
  serial=$(openssl x509 -in revoked.crt -noout -serial | cut -d= -f2)
  subj=$(openssl x509 -in revoked.crt -noout -subject -nameopt compat | sed 's/^subject=//')
  printf 'R\t491231235959Z\t240101000000Z\t%s\tunknown\t%s\n' "$serial" "$subj" > index.txt
fi
openssl ca -config ca.cnf -keyfile ca.key -cert ca.crt -gencrl -out ca.crl -batch 2>/dev/null
rm -f revoked-copy.pem
# An expired server certificate (valid 2001-2002).
openssl genrsa -out expired.key 2048 2>/dev/null
openssl req -new -key expired.key -subj "/C=US/O=Plume Test/CN=localhost" 2>/dev/null > expired.csr
echo 2000 > serial
openssl ca -config ca.cnf -keyfile ca.key -cert ca.crt -in expired.csr -out expired.crt -startdate 20010101000000Z -enddate 20020101000000Z -extensions server -batch -notext 2>/dev/null
rm -f expired.csr [0-9A-F][0-9A-F][0-9A-F][0-9A-F].pem
# An encrypted key for the server certificate (pass phrase "plume"), and a stray key.
openssl pkey -in server.key -aes256 -passout pass:plume -out server-enc.key
openssl genrsa -out stray.key 2048 2>/dev/null
# The client certificate with its key, for clients that want one file.
cat client.crt client.key > client.pem
# A 48-byte ticket key file.
head -c 48 /dev/urandom > ticket.key
rm -f index.txt* serial* ca.cnf other-ca.key other-ca.srl *.old
