// pako (zlib's deflate/inflate in JavaScript; README "Runtime dependencies"), loaded once, with
// the part of its interface mod_deflate uses typed here. A tree installed without it still
// builds and serves: only a configuration that loads mod_deflate is refused (checkConfig).

import { createRequire } from 'node:module';

/** A pako Deflate or Inflate stream (zlib's z_stream with pako's push loop). */
export interface PakoStream {
  /** Feeds bytes; `flush` true finishes the stream, a number is a zlib flush mode. */
  push(data: Uint8Array, flush: boolean | number): boolean;
  /** Called with each full output buffer (and the last, partial one). */
  onData: (chunk: Uint8Array) => void;
  readonly err: number;
  readonly msg: string;
  readonly ended: boolean;
  readonly strm: { readonly total_in: number; readonly avail_in: number };
}

export interface PakoOptions {
  level?: number;
  windowBits?: number;
  memLevel?: number;
  chunkSize?: number;
  raw?: boolean;
}

export interface Pako {
  Deflate: new (opts: PakoOptions) => PakoStream;
  Inflate: new (opts: PakoOptions) => PakoStream;
  constants: { readonly Z_SYNC_FLUSH: number; readonly Z_BUF_ERROR: number };
}

// Loaded with require (no top-level await), so that the module catalogue can load mod_deflate
// synchronously when LoadModule names it (src/modules/index.ts); its ES module build, the one an
// import of 'pako' gives.
function load(): Pako | null {
  try {
    const m = createRequire(import.meta.url)('pako/dist/pako.esm.mjs') as { default?: Pako } & Partial<Pako>;
    return (m.default ?? (m as Pako));
  } catch {
    return null;
  }
}

/** The library, or null when it is not installed. */
export const pako: Pako | null = load();

export const PAKO_MISSING = "mod_deflate needs the 'pako' package, which is not installed (run npm install)";
