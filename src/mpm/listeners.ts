// The parent's listening sockets (httpd's ap_setup_listeners): every Listen address is bound
// once by the parent, before any worker exists, and kept for the parent's whole life (across
// restarts, while Listen still names it). The parent never accepts: each worker gets its own
// descriptor of every socket and listens and accepts on it, so connections wait in the kernel's
// listen queue whenever no worker is accepting — during a restart, or while every worker is at
// its share of MaxRequestWorkers.

import * as net from 'node:net';
import * as util from 'node:util';
import type { ChildProcess } from 'node:child_process';
import type { ConfigContext } from '../server/config/context.js';
import { globals, type ListenSpec } from '../server/core/globals.js';
import { StartupError } from '../server/config/errors.js';
import { resolveHostSync } from '../server/core/resolve.js';

/** A bound TCP socket that is not listening yet (Node's TCP handle). */
export interface TcpHandle {
  readonly fd: number;
  /** listen(2); 0 or a negative errno. */
  listen(backlog: number): number;
  close(callback?: () => void): void;
}

type CreateServerHandle = (address: string | null, port: number, addressType?: number) => TcpHandle | number;

/**
 * Binds a TCP socket without listening on it (having checked that it could):
 * net._createServerHandle, the function cluster's primary binds the sockets it shares with its
 * workers with. It is not in Node's documented API (nor in @types/node) but has kept its
 * shape since Node 0.x; this is the one place plume calls it. A null address binds [::] (dual-stack) or, failing that, 0.0.0.0, as listen() does.
 * Returns the handle, or the negative errno bind() or listen() failed with.
 */
function createBoundHandle(address: string | null, port: number): TcpHandle | number {
  const create = (net as unknown as { _createServerHandle: CreateServerHandle })._createServerHandle;
  const family = address === null ? undefined : net.isIPv6(address) ? 6 : 4;
  // bind() alone succeeds beside a socket already listening there (both SO_REUSEADDR); only
  // listen() tells. So listen on a first socket and close it in the same turn of the event
  // loop (nothing is accepted meanwhile), then bind the socket that is kept.
  const probe = create(address, port, family);
  if (typeof probe === 'number') return probe;
  const err = probe.listen(1);
  probe.close();
  if (err !== 0) return err;
  return create(address, port, family);
}

/** errno as httpd prints it in front of AH00072. */
function bindErrno(err: number): string {
  const code = util.getSystemErrorName(err);
  switch (code) {
    case 'EADDRINUSE': return '(98)Address already in use';
    case 'EACCES': return '(13)Permission denied';
    case 'EADDRNOTAVAIL': return '(99)Cannot assign requested address';
    default: return `(${-err})${code}`;
  }
}

function keyOf(l: ListenSpec): string {
  return `${l.host ?? '*'} ${l.port}`;
}

interface Bound {
  readonly spec: ListenSpec;
  readonly handle: TcpHandle;
}

export class ParentListeners {
  private bound = new Map<string, Bound>();

  /** The sockets of the configuration serving now, in Listen order. */
  get handles(): TcpHandle[] {
    return [...this.bound.values()].map((b) => b.handle);
  }

  /**
   * Binds the Listen addresses of `ctx` that are not bound yet. On failure nothing changes and
   * a StartupError with httpd's wording is thrown. commit() makes the new set the one handed to
   * workers and closes the sockets `ctx` no longer names (workers that have copies keep them);
   * rollback() closes what was bound for it.
   */
  prepare(ctx: ConfigContext): { commit(): void; rollback(): void } {
    const specs = globals(ctx).listeners;
    if (specs.length === 0) {
      throw new StartupError('AH00526: Syntax error: no listening sockets available, shutting down\nAH00015: Unable to open logs');
    }
    const added: Bound[] = [];
    const next = new Map<string, Bound>();
    for (const spec of specs) {
      const key = keyOf(spec);
      const had = this.bound.get(key);
      if (had) { next.set(key, had); continue; }
      const address = spec.host === undefined ? null : resolveHostSync(spec.host) ?? spec.host;
      const h = createBoundHandle(address, spec.port);
      if (typeof h === 'number') {
        for (const b of added) b.handle.close();
        throw new StartupError(`${bindErrno(h)}: AH00072: make_sock: could not bind to address ${spec.host ?? '0.0.0.0'}:${spec.port}\nno listening sockets available, shutting down\nAH00015: Unable to open logs`);
      }
      const b = { spec, handle: h };
      added.push(b);
      next.set(key, b);
    }
    return {
      commit: () => {
        for (const [k, b] of this.bound) if (!next.has(k)) b.handle.close();
        this.bound = next;
      },
      rollback: () => { for (const b of added) b.handle.close(); },
    };
  }

  /** Hands a copy of every socket to a worker (one IPC message each). */
  sendTo(child: ChildProcess): void {
    for (const b of this.bound.values()) sendHandle(child, { t: 'listener', key: keyOf(b.spec) }, b.handle);
  }

  close(): void {
    for (const b of this.bound.values()) b.handle.close();
    this.bound.clear();
  }
}

/** child.send with a raw TCP handle: Node passes it as it passes the net.Server it would wrap
 *  (its IPC layer sends any handle); the types only know the wrapped kinds. */
function sendHandle(child: ChildProcess, msg: { t: string; key: string }, handle: TcpHandle): void {
  if (!child.connected) return;
  child.send(msg, handle as unknown as net.Server, (err) => { if (err) { /* the worker went away */ } });
}
