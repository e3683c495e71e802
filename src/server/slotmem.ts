// The slot memory provider interface (httpd's ap_slotmem.h): a table of fixed-size slots
// shared by every process serving one configuration generation, which a module (mod_proxy's
// balancers and their members, mod_heartmonitor's servers) finds by name in the provider
// registry, group "slotmem" ("shm": mod_slotmem_shm).
//
// The parent (or the single -X process) creates a table in post_config; a worker process,
// whose post_config runs after the parent's, gets the parent's table from the same `create`
// call. Slots are read and written as bytes with `get`/`put`, or through a SlotPointer
// (httpd's dptr).
//
// DIFFERENCE: httpd's dptr hands out a pointer into shared memory that the caller reads and
// writes like any struct. Node has no shared memory between processes, so a SlotPointer's
// reads and writes are explicit (`read` gives the slot's current bytes, `write` stores bytes
// into it); what another process wrote is seen at the next `read`.

import type { ConfigContext } from './config/context.js';

/** Slot table types (AP_SLOTMEM_TYPE_*), or'ed together. */
export const SLOTMEM_TYPE_PERSIST = 1 << 0;
export const SLOTMEM_TYPE_NOTMPSAFE = 1 << 1;
export const SLOTMEM_TYPE_PREGRAB = 1 << 2;
export const SLOTMEM_TYPE_CLEARINUSE = 1 << 3;

/** APR's answers: APR_SUCCESS, APR_EINVAL, APR_NOTFOUND, APR_ENOSHMAVAIL. */
export type SlotmemStatus = 'success' | 'einval' | 'notfound' | 'enoshmavail';

/** A table, as create/attach return it (ap_slotmem_instance_t). */
export interface SlotmemInstance {
  /** The file the table lives in ('none' for a table of this process only). */
  readonly name: string;
  /** Bytes per slot, slots, AP_SLOTMEM_TYPE_* bits. */
  readonly size: number;
  readonly num: number;
  readonly type: number;
}

/** One slot of a table (httpd's dptr). */
export interface SlotPointer {
  readonly id: number;
  /** The slot's bytes as they are now (a fresh copy: another process's writes show). */
  read(): Buffer;
  /** Stores `bytes` at `offset` (default 0) within the slot. */
  write(bytes: Uint8Array, offset?: number): void;
}

/** ap_slotmem_provider_t. */
export interface SlotmemProvider {
  readonly name: string;
  /** Calls `fn` with each slot's bytes (with PREGRAB, the grabbed ones only) until it answers
   *  something else than 'success'; that answer is returned. */
  doall(inst: SlotmemInstance, fn: (mem: Buffer, id: number) => SlotmemStatus | void): SlotmemStatus;
  /** A new table of `num` slots of `size` bytes named `name` (relative: in DefaultRuntimeDir;
   *  absolute: that file; '' or "none": a table of this process only). In a worker process,
   *  the table the parent created under that name. An error text when it cannot be made. */
  create(ctx: ConfigContext, name: string, size: number, num: number, type: number): SlotmemInstance | string;
  /** An existing table by name; an error text when there is none. */
  attach(ctx: ConfigContext, name: string): SlotmemInstance | string;
  dptr(inst: SlotmemInstance, id: number): SlotPointer | SlotmemStatus;
  /** Copies slot `id` into `dest` (dest.length bytes) and marks it in use. */
  get(inst: SlotmemInstance, id: number, dest: Buffer): SlotmemStatus;
  /** Copies `src` into slot `id` and marks it in use. */
  put(inst: SlotmemInstance, id: number, src: Uint8Array): SlotmemStatus;
  numSlots(inst: SlotmemInstance): number;
  numFreeSlots(inst: SlotmemInstance): number;
  slotSize(inst: SlotmemInstance): number;
  /** Takes the first free slot: its number, or 'einval' when every slot is taken. */
  grab(inst: SlotmemInstance): number | SlotmemStatus;
  release(inst: SlotmemInstance, id: number): SlotmemStatus;
  /** Takes slot `id` whether or not it was free (fgrab). */
  fgrab(inst: SlotmemInstance, id: number): SlotmemStatus;
}

declare module './module.js' {
  interface ProviderGroups {
    slotmem: SlotmemProvider;
  }
}
