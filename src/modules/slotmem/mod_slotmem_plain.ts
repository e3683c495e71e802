// mod_slotmem_plain (modules/slotmem/mod_slotmem_plain.c): the "plain" slotmem provider,
// tables of slots in this process's memory only (httpd allocates them from the configuration
// pool): nothing is shared between worker processes and nothing persists. A table is known
// by its name (":name" as is, anything else DefaultRuntimeDir-relative, as httpd resolves
// it; no name is "anonymous" and always new); creating a name that exists returns the
// existing table whatever size was asked, and attach finds only names created in this
// process. The list lives as long as the configuration generation (httpd's pre_config takes
// the new configuration pool for it).
//
// httpd's own modules never choose this provider: mod_proxy_balancer (BalancerPersist only
// sets the "shm" table's PERSIST flag), mod_lbmethod_heartbeat and mod_heartmonitor (whose
// HeartbeatStorage chooses a file rather than a table) all look up "shm"; "plain" serves
// third-party modules, and here any module that asks the registry for it.

import * as path from 'node:path';
import { defineModule, MODULE_API_VERSION, type ModuleDecl } from '../../server/module.js';
import type { ConfigContext } from '../../server/config/context.js';
import { globals } from '../../server/core/globals.js';
import {
  SLOTMEM_TYPE_PREGRAB, type SlotmemInstance, type SlotmemProvider, type SlotmemStatus, type SlotPointer,
} from '../../server/slotmem.js';

/** A table: the slots' bytes and one in-use flag per slot. */
class PlainTable implements SlotmemInstance {
  readonly base: Buffer;
  readonly inuse: Uint8Array;
  constructor(readonly name: string, readonly size: number, readonly num: number, readonly type: number) {
    this.base = Buffer.alloc(size * num);
    this.inuse = new Uint8Array(num);
  }
  get pregrab(): boolean {
    return (this.type & SLOTMEM_TYPE_PREGRAB) !== 0;
  }
  slot(id: number): Buffer {
    return this.base.subarray(id * this.size, (id + 1) * this.size);
  }
}

/** The tables of this configuration generation, by resolved name (globallistmem). */
function tables(ctx: ConfigContext): Map<string, PlainTable> {
  return ctx.getScratch('slotmem_plain.tables', () => new Map<string, PlainTable>());
}

/** ":name" as is, anything else DefaultRuntimeDir-relative (ap_runtime_dir_relative). */
function resolveName(ctx: ConfigContext, name: string): string {
  if (name.startsWith(':')) return name;
  return path.resolve(globals(ctx).runtimeDir ?? ctx.serverRootRelative('logs'), name);
}

function tableOf(inst: SlotmemInstance): PlainTable | undefined {
  return inst instanceof PlainTable ? inst : undefined;
}

const provider: SlotmemProvider = {
  name: 'plainmem',

  doall(inst, fn) {
    const t = tableOf(inst);
    if (t === undefined) return 'enoshmavail';
    for (let i = 0; i < t.num; i++) {
      if (t.pregrab && !t.inuse[i]) continue;
      const r = fn(t.slot(i), i) ?? 'success';
      if (r !== 'success') return r;
    }
    return 'success';
  },

  create(ctx, name, size, num, type) {
    const list = tables(ctx);
    let fname = 'anonymous';
    if (name !== '') {
      fname = resolveName(ctx, name);
      const have = list.get(fname);
      if (have !== undefined) return have;
    }
    const t = new PlainTable(fname, size, num, type);
    // "anonymous" tables are never found again: keep only named ones.
    if (name !== '') list.set(fname, t);
    return t;
  },

  attach(ctx, name) {
    if (name === '') return 'enoshmavail';
    return tables(ctx).get(resolveName(ctx, name)) ?? 'enoshmavail';
  },

  dptr(inst, id): SlotPointer | SlotmemStatus {
    const t = tableOf(inst);
    if (t === undefined) return 'enoshmavail';
    if (id >= t.num || id < 0) return 'einval';
    const mem = t.slot(id);
    return {
      id,
      read: () => Buffer.from(mem),
      write: (bytes, offset = 0) => { mem.set(bytes.subarray(0, Math.max(0, t.size - offset)), offset); },
    };
  },

  get(inst, id, dest) {
    const t = tableOf(inst);
    if (t === undefined) return 'enoshmavail';
    if (id >= t.num || id < 0) return 'einval';
    if (t.pregrab && !t.inuse[id]) return 'notfound';
    t.inuse[id] = 1;
    t.slot(id).copy(dest, 0, 0, Math.min(dest.length, t.size));
    return 'success';
  },

  put(inst, id, src) {
    const t = tableOf(inst);
    if (t === undefined) return 'enoshmavail';
    if (id >= t.num || id < 0) return 'einval';
    if (t.pregrab && !t.inuse[id]) return 'notfound';
    t.inuse[id] = 1;
    t.slot(id).set(src.subarray(0, t.size));
    return 'success';
  },

  numSlots(inst) {
    return inst.num;
  },

  numFreeSlots(inst) {
    const t = tableOf(inst);
    if (t === undefined) return 0;
    let n = 0;
    for (let i = 0; i < t.num; i++) if (!t.inuse[i]) n++;
    return n;
  },

  slotSize(inst) {
    return inst.size;
  },

  grab(inst) {
    const t = tableOf(inst);
    if (t === undefined) return 'enoshmavail';
    const i = t.inuse.indexOf(0);
    if (i < 0) return 'einval';
    t.inuse[i] = 1;
    return i;
  },

  release(inst, id) {
    const t = tableOf(inst);
    if (t === undefined) return 'enoshmavail';
    if (id >= t.num || id < 0) return 'einval';
    if (!t.inuse[id]) return 'notfound';
    t.inuse[id] = 0;
    return 'success';
  },

  fgrab(inst, id) {
    const t = tableOf(inst);
    if (t === undefined) return 'enoshmavail';
    if (id >= t.num || id < 0) return 'einval';
    t.inuse[id] = 1;
    return 'success';
  },
};

const self = defineModule<undefined, undefined>({
  name: 'slotmem_plain_module',
  source: 'mod_slotmem_plain.c',
  apiVersion: MODULE_API_VERSION,
  providers: [{ group: 'slotmem', name: 'plain', version: '0', provider }],
});

export default self;
self.decl satisfies ModuleDecl<undefined, undefined>;
