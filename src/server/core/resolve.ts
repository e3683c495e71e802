// Host name resolution at configuration time, which must be synchronous: addresses are
// used as they are, names are looked up in /etc/hosts (httpd asks the resolver; plume's
// configuration reader cannot wait for DNS — names not in /etc/hosts are reported).

import * as fs from 'node:fs';
import * as net from 'node:net';

let hosts: Map<string, string> | undefined;

function loadHosts(): Map<string, string> {
  const m = new Map<string, string>();
  let text = '';
  try { text = fs.readFileSync('/etc/hosts', 'utf8'); } catch { /* none */ }
  for (const line of text.split('\n')) {
    const t = line.replace(/#.*/, '').trim();
    if (!t) continue;
    const [addr, ...names] = t.split(/\s+/);
    if (!addr || !net.isIP(addr)) continue;
    for (const n of names) if (!m.has(n.toLowerCase())) m.set(n.toLowerCase(), addr);
  }
  if (!m.has('localhost')) m.set('localhost', '127.0.0.1');
  return m;
}

/** An IP for a host name or address, or undefined when it cannot be resolved here. */
export function resolveHostSync(host: string): string | undefined {
  if (net.isIP(host)) return host;
  hosts ??= loadHosts();
  return hosts.get(host.toLowerCase());
}

let names: Map<string, string> | undefined;

/** The canonical name of an address (the first name /etc/hosts gives it), or undefined. */
export function reverseLookupSync(ip: string): string | undefined {
  if (names === undefined) {
    names = new Map();
    let text = '';
    try { text = fs.readFileSync('/etc/hosts', 'utf8'); } catch { /* none */ }
    for (const line of text.split('\n')) {
      const [addr, first] = line.replace(/#.*/, '').trim().split(/\s+/);
      if (addr && first && net.isIP(addr) && !names.has(addr)) names.set(addr, first);
    }
  }
  return names.get(ip);
}
