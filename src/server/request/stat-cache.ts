// stat() answers shared by the requests that arrive together.
//
// httpd stats a request's file and reads every .htaccess on its path for each request, so an
// edit is seen by the very next request. plume keeps that promise with fewer system calls: a
// stat() answer is reused only for requests whose bytes were already waiting when it was taken.
// The unit is one turn of the event loop: the sockets epoll reports ready are read in its poll
// phase, one after the other, so every stat() taken while one of them is read comes after the
// bytes of all of them arrived. A client that changes a file and then begins its request is
// read in a later turn than any answer taken before the change. So: the turn count goes up
// once per turn (in the check phase that follows the reads); an answer is kept only when taken
// between the turn's first socket read and that check phase (while a read is handled, or in the
// promise continuations and other callbacks that follow it in the same poll phase: all of it
// after epoll reported the turn's bytes), and records the turn; a request records the turn it
// was read in; an answer serves a request only when its turn is not before the request's.
// The continuations matter for the work a request does after an await: mod_include's
// `#include virtual` subrequests walk their paths there, and share those walks with the other
// requests of the turn as the main requests share theirs.
// Under concurrency the requests read in one turn share their stat() calls (the .htaccess files
// of a deep path, the file itself); one request alone costs what it did.
// (libuv asks epoll a second time within one poll phase only when 1,024 events came at once:
// then a request begun in that short window could see an answer taken at the phase's start.)

import * as fs from 'node:fs';
import { kept } from '../../engine/kept-shapes.js';

let turn = 0;
let reading = false;
let bumping = false;

const nextTurn = (): void => {
  bumping = false;
  turn++;
  // Older answers may still serve the requests of earlier turns; the maps only bound memory.
  for (const m of turnMaps) m.drop();
};

/** A socket read is being handled (the connection calls this first thing, and readDone() when
 *  the read's synchronous work is done). From the first read of a turn until the turn count
 *  goes up (the check phase), answers taken are kept for this turn's requests: the reads of the
 *  poll phase, the promise continuations they leave (which run before the next callback), and
 *  the other callbacks of the same poll phase all come after epoll reported the turn's bytes. */
export function noteRead(): void {
  reading = true;
  if (!bumping) { bumping = true; kept.immediate = setImmediate(nextTurn); }
}

export function readDone(): void {
  reading = false;
}

/** Whether answers taken now are kept for this turn's requests (a socket read was handled in
 *  this turn and the turn count has not gone up since): what is derived from them may be kept
 *  by the same rule (TurnMap). */
export function answersKept(): boolean {
  return reading || bumping;
}

/** The turn now: a request records it when it is read (Request.readSeq). */
export function readCount(): number {
  return turn;
}

interface Answer {
  readonly at: number;
  readonly st: fs.Stats | undefined;
}

/** Maps emptied when the turn count goes up. */
const turnMaps: TurnMap<unknown, unknown>[] = [];

/** A map emptied at each new turn, for what is derived from one turn's answers: an entry made
 *  while answersKept(), from answers for a request read in turn `at`, may serve the requests
 *  read in turn `at` or before, as the answers themselves may. */
export class TurnMap<K, V> {
  private m = new Map<K, V>();

  constructor() { turnMaps.push(this); }

  get(k: K): V | undefined { return this.m.get(k); }
  set(k: K, v: V): void { this.m.set(k, v); }

  /** Emptied by replacing the Map, not by clear(): V8 links a cleared table to the new one
   *  (for iterators still on it), so a table once promoted to the old generation would keep
   *  every later turn's table, and the requests' answers and walks in each, alive through
   *  scavenges until the next full collection (measured under one-request connections: half
   *  of what each scavenge promoted). A dropped Map is linked from nothing. */
  drop(): void {
    if (this.m.size !== 0) this.m = new Map<K, V>();
  }
}

const lstats = new TurnMap<string, Answer>();
const stats = new TurnMap<string, Answer>();

function cached(map: TurnMap<string, Answer>, p: string, since: number, follow: boolean): fs.Stats | undefined {
  const a = map.get(p);
  if (a !== undefined && a.at >= since) return a.st;
  // Errors other than a missing file are thrown, and not kept.
  const path = fsPath(p);
  const st = follow ? fs.statSync(path, { throwIfNoEntry: false }) : fs.lstatSync(path, { throwIfNoEntry: false });
  if (reading || bumping) map.set(p, { at: turn, st });
  if (st !== undefined) kept.stats = st;
  return st;
}

/** lstat(p) (undefined when missing), reusing an answer taken in turn `since` or later. */
export function lstatSince(p: string, since: number): fs.Stats | undefined {
  return cached(lstats, p, since, false);
}

/** stat(p) (undefined when missing), reusing an answer taken in turn `since` or later. */
export function statSince(p: string, since: number): fs.Stats | undefined {
  return cached(stats, p, since, true);
}

/** Paths are byte strings (one char per byte, as URLs decode): give the file system the bytes. */
export function fsPath(p: string): string | Buffer {
  return /^[\x00-\x7f]*$/.test(p) ? p : Buffer.from(p, 'latin1');
}

/** A file's mtime in whole microseconds, truncated as apr_finfo_t's is (httpd's ETag and
 *  Last-Modified come from it). A plain Stats only carries mtimeMs, a double that can be a
 *  fraction of a microsecond off — enough to round .355306981 s up to 355307 µs — so the exact
 *  figure is read once per file state with a bigint stat of `file` and remembered. */
export function mtimeMicrosOf(st: fs.Stats, file: string): number {
  const m = exactMtimes.get(file);
  if (m !== undefined && m.ino === st.ino && m.mtimeMs === st.mtimeMs && m.ctimeMs === st.ctimeMs) return m.us;
  let us = Math.floor(st.mtimeMs * 1000);
  try {
    const b = fs.statSync(fsPath(file), { bigint: true, throwIfNoEntry: false });
    // The same file as `st` (not replaced in between): its nanoseconds are exact.
    if (b !== undefined && Number(b.ino) === st.ino && Math.abs(Number(b.mtimeNs / 1000n) - st.mtimeMs * 1000) < 2) us = Number(b.mtimeNs / 1000n);
  } catch {
    // unreadable now: keep the estimate
  }
  if (exactMtimes.size >= 4096) exactMtimes.clear();
  exactMtimes.set(file, { ino: st.ino, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, us });
  return us;
}
const exactMtimes = new Map<string, { ino: number; mtimeMs: number; ctimeMs: number; us: number }>();
