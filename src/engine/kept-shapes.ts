// One live object of each kind the request path builds, so that its optimised code survives a
// quiet spell.
//
// V8 compiles a hot function against the hidden classes ("maps") of the objects it has met and
// embeds them in the machine code. A map that only the transition tree refers to (the maps an
// object passes through as its fields are defined) is freed by the next full collection once no
// object has it, and every piece of optimised code that embedded it is thrown away ("weak
// objects"). When a load ends, its connections, requests and stat() answers die; the collection
// that follows (V8's memory reducer, or plume's idle one: src/engine/idle-gc.ts) then discarded
// nearly all of the request path's optimised code: 184 functions in a worker after a burst of
// server-status requests and 3 s of quiet, each recompiled while the next burst was being
// served in the interpreter (event-loop turns of 40-100 ms; p99 several times the steady
// state's). Keeping the last object of each kind alive keeps its maps: 26 functions discarded
// instead, from kinds kept nowhere.
//
// A slot holds the last object stored in it: one connection, one request, one stat() answer...
// a few kilobytes, whatever the load was.

/** The kinds kept; each is written where such an object is made or finished with. */
export interface KeptShapes {
  /** The last connection closed (its socket stream and parser state with it). */
  connection: object | null;
  /** The last request served. */
  request: object | null;
  /** The last fs.Stats taken by the per-turn stat() cache. */
  stats: object | null;
  /** The last response body piece a generator put together (mod_status's page). */
  page: object | null;
  /** The last write request a connection's stream made (its fields are set after creation). */
  write: object | null;
  /** The last setImmediate() of the stat() cache's turn count (Node adds fields to each). */
  immediate: object | null;
}

export const kept: KeptShapes = { connection: null, request: null, stats: null, page: null, write: null, immediate: null };
