#!/usr/bin/env bash
# Runs Debian's testssl.sh against Apache httpd and plume serving the same certificate with
# the same httpd.conf (only the port, PidFile and logs differ), and diffs what it reports in
# its protocols (-p), ciphers per protocol (-E) and vulnerabilities (-U) sections.
#
#   tools/testssl-compare.sh [APACHE_PORT [PLUME_PORT]]     (defaults 9110 and 9111)
#
# Prints both normalised reports' differences (a unified diff; empty when they agree) and
# leaves the reports in $KEEP (default: removed). Needs apache2-bin and testssl.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
aport=${1:-9110}
pport=${2:-9111}
mods=/usr/lib/apache2/modules
testssl=$(command -v testssl || command -v testssl.sh || true)
[ -n "$testssl" ] || { echo "testssl-compare: testssl.sh is not installed (apt-get install testssl.sh)" >&2; exit 2; }
[ -x /usr/sbin/apache2 ] || { echo "testssl-compare: /usr/sbin/apache2 is not installed" >&2; exit 2; }
[ -f "$repo/dist/src/cli/main.js" ] || [ -d "$repo/dist" ] || { echo "testssl-compare: build first (npx tsc)" >&2; exit 2; }

dir=$(mktemp -d /tmp/plume-testssl.XXXXXX)
chmod 755 "$dir"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$dir"/*.json "$dir"/*.txt "$KEEP"/ 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

mkdir -p "$dir/htdocs" "$dir/tls"
printf 'testssl comparison\n' > "$dir/htdocs/index.html"
cp "$repo/test/fixtures/tls/server.crt" "$repo/test/fixtures/tls/server.key" "$dir/tls/"
user=""
if [ "$(id -u)" = 0 ]; then user="User www-data
Group www-data"; fi
conf() { # $1 name, $2 port
  mkdir -p "$dir/$1/logs"
  [ "$(id -u)" = 0 ] && chown www-data:www-data "$dir/$1/logs"
  cat > "$dir/$1/httpd.conf" <<EOF
<IfModule !unixd_module>
    LoadModule unixd_module $mods/mod_unixd.so
</IfModule>
LoadModule mpm_event_module $mods/mod_mpm_event.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule mime_module $mods/mod_mime.so
LoadModule deflate_module $mods/mod_deflate.so
LoadModule filter_module $mods/mod_filter.so
LoadModule socache_shmcb_module $mods/mod_socache_shmcb.so
LoadModule ssl_module $mods/mod_ssl.so
ServerName localhost
Listen 127.0.0.1:$2
$user
PidFile $dir/$1/logs/httpd.pid
ErrorLog $dir/$1/logs/error_log
TypesConfig /etc/mime.types
DocumentRoot "$dir/htdocs"
<Directory "$dir/htdocs">
    Require all granted
</Directory>
AddOutputFilterByType DEFLATE text/html
SSLSessionCache shmcb:$dir/$1/logs/ssl_scache(512000)
SSLEngine on
SSLCertificateFile $dir/tls/server.crt
SSLCertificateKeyFile $dir/tls/server.key
EOF
}
conf apache "$aport"
conf plume "$pport"
/usr/sbin/apache2 -d "$dir/apache" -f "$dir/apache/httpd.conf" -D FOREGROUND > "$dir/apache.out" 2>&1 &
pids+=($!)
node "$repo/bin/plume" -d "$dir/plume" -f "$dir/plume/httpd.conf" -D FOREGROUND > "$dir/plume.out" 2>&1 &
pids+=($!)
for port in "$aport" "$pport"; do
  up=""
  for _ in $(seq 1 100); do
    if openssl s_client -connect "127.0.0.1:$port" -servername localhost </dev/null >/dev/null 2>&1; then up=1; break; fi
    sleep 0.2
  done
  if [ -z "$up" ]; then
    echo "testssl-compare: nothing answers TLS on port $port" >&2
    cat "$dir/apache.out" "$dir/plume.out" "$dir"/*/logs/error_log >&2 2>/dev/null || true
    exit 1
  fi
done

# Both scans at once: each is mostly waiting on openssl handshakes.
scan() { # $1 name, $2 port
  "$testssl" --quiet --color 0 --warnings off --sneaky --openssl-timeout 10 -p -E -U \
    --jsonfile "$dir/$1.json" "https://127.0.0.1:$2/" > "$dir/$1.log" 2>&1 || true
}
scan apache "$aport" &
s1=$!
scan plume "$pport" &
s2=$!
wait "$s1" "$s2"

# One line per finding: section, id, severity, finding (the port and address left out).
normalise() {
  node -e '
    const rows = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const meta = new Set(["scanTime", "service", "engine_problem", "clientProblem1", "optimal_proto", "pre_128cipher"]);
    const section = (id) => /^(SSLv2|SSLv3|TLS1|TLS1_1|TLS1_2|TLS1_3|NPN|ALPN|ALPN_HTTP2)$/.test(id) ? "protocols"
      : /^(cipher|supportedciphers|cipherorder)/.test(id) ? "ciphers" : "vulnerabilities";
    for (const r of rows) {
      if (meta.has(r.id)) continue;
      console.log(`${section(r.id)} | ${r.id} | ${r.severity} | ${String(r.finding).replace(/127\.0\.0\.1:\d+/g, "HOST")}`);
    }' "$1" | sort
}
normalise "$dir/apache.json" > "$dir/apache.txt"
normalise "$dir/plume.json" > "$dir/plume.txt"
echo "testssl.sh $("$testssl" --version 2>/dev/null | grep -o 'testssl  *[0-9.]*' | head -1 | awk '{print $2}'): Apache $(wc -l < "$dir/apache.txt") findings, plume $(wc -l < "$dir/plume.txt") findings"
if diff -u --label apache --label plume "$dir/apache.txt" "$dir/plume.txt"; then
  echo "testssl-compare: the protocols, ciphers and vulnerabilities sections agree"
fi
