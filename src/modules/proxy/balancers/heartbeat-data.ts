// The heartbeat data mod_heartmonitor keeps and mod_lbmethod_heartbeat reads (httpd's
// heartbeat.h): a storage file of lines `<ip> ready=N&busy=N&lastseen=S&port=P`, or a slotmem
// table "mod_heartmonitor" of hm_slot_server_t records.

import { atoi } from '../../../lib/c-numbers.js';

/** DEFAULT_HEARTBEAT_STORAGE, relative to DefaultRuntimeDir. */
export const DEFAULT_HEARTBEAT_STORAGE = 'hb.dat';
/** hm_slot_server_t on a 64-bit host: char ip[46], int busy, int ready, apr_time_t seen, int id. */
export const MAXIPSIZE = 46;
export const HM_SLOT_SIZE = 72;
const O_BUSY = 48;
const O_READY = 52;
const O_SEEN = 56;
const O_ID = 64;

/** One backend server as the heartbeats describe it. `seen`: seconds since its last beat. */
export interface HbServer {
  ip: string;
  busy: number;
  ready: number;
  port: number;
  id: number;
  seen: number;
}


function unescape(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}

/** argstr_to_table: `a=1&b=2` (a key without '=' is "1"), URL-unescaped, last one wins. */
export function argsToMap(qs: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const part of qs.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? '1' : part.slice(eq + 1);
    m.set(unescape(key), unescape(value));
  }
  return m;
}

/** readfile_heartbeats: the servers of a storage file's text, by ip. */
export function parseHeartbeatFile(text: string, servers: Map<string, HbServer> = new Map()): Map<string, HbServer> {
  for (const raw of text.split('\n')) {
    if (raw === '' || raw.startsWith('#')) continue;
    const sp = raw.indexOf(' ');
    if (sp < 0) continue;
    const ip = raw.slice(0, sp);
    let server = servers.get(ip);
    if (server === undefined) {
      server = { ip, busy: 0, ready: 0, port: 80, id: 0, seen: -1 };
      servers.set(ip, server);
    }
    const t = argsToMap(raw.slice(sp + 1));
    const busy = t.get('busy');
    if (busy !== undefined) server.busy = atoi(busy);
    const ready = t.get('ready');
    if (ready !== undefined) server.ready = atoi(ready);
    const seen = t.get('lastseen');
    if (seen !== undefined) server.seen = atoi(seen);
    const port = t.get('port');
    if (port !== undefined) server.port = atoi(port);
    // No thread busy and many ready: it has just started; a quarter of them, not to flood it.
    if (server.busy === 0 && server.ready !== 0) server.ready = Math.trunc(server.ready / 4);
  }
  return servers;
}

/** An hm_slot_server_t record. */
export interface HbSlot { ip: string; busy: number; ready: number; seenUs: number; id: number }

export function decodeHbSlot(b: Buffer): HbSlot {
  const z = b.indexOf(0);
  return {
    ip: b.toString('latin1', 0, z < 0 || z > MAXIPSIZE ? MAXIPSIZE : z),
    busy: b.readInt32LE(O_BUSY),
    ready: b.readInt32LE(O_READY),
    seenUs: Number(b.readBigInt64LE(O_SEEN)),
    id: b.readInt32LE(O_ID),
  };
}

export function encodeHbSlot(s: HbSlot): Buffer {
  const b = Buffer.alloc(HM_SLOT_SIZE);
  b.write(s.ip.slice(0, MAXIPSIZE - 1), 0, 'latin1');
  b.writeInt32LE(s.busy, O_BUSY);
  b.writeInt32LE(s.ready, O_READY);
  b.writeBigInt64LE(BigInt(s.seenUs), O_SEEN);
  b.writeInt32LE(s.id, O_ID);
  return b;
}

/** hm_read: a slot record into the servers map, as seen at `nowUs`. */
export function addHbSlot(servers: Map<string, HbServer>, slot: HbSlot, nowUs: number): void {
  let server = servers.get(slot.ip);
  if (server === undefined) {
    server = { ip: slot.ip, busy: 0, ready: 0, port: 0, id: 0, seen: -1 };
    servers.set(slot.ip, server);
  }
  server.busy = slot.busy;
  server.ready = slot.ready;
  server.seen = Math.trunc((nowUs - slot.seenUs) / 1_000_000);
  server.id = slot.id;
  if (server.busy === 0 && server.ready !== 0) server.ready = Math.trunc(server.ready / 4);
}
