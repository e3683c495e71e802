// The TLS 1.2 ciphers an OpenSSL cipher string names, for per-directory SSLCipherSuite: httpd
// sets the directory's list on the connection and renegotiates when it differs; plume has to
// know whether the connection's cipher is in it. Node has no way to expand a cipher string,
// so OpenSSL's own command does it (`openssl ciphers`), once per string.

import { execFileSync } from 'node:child_process';

const sets = new Map<string, ReadonlySet<string> | null>();

/** The OpenSSL names the string selects; null when it selects none or cannot be expanded. */
export function cipherSet(list: string): ReadonlySet<string> | null {
  let s = sets.get(list);
  if (s !== undefined) return s;
  try {
    const out = execFileSync('openssl', ['ciphers', list], { encoding: 'latin1', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 });
    s = new Set(out.trim().split(':').filter((n) => n !== ''));
  } catch {
    s = null;
  }
  sets.set(list, s);
  return s;
}
