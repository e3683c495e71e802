// The HTTP/1 response head a handler writes on a stream's connection itself, bypassing the
// response filters (httpd's H2_C2_CATCH_H1_OUT, h2_c2_filter.c): mod_proxy_connect's
// "HTTP/1.0 200 Connection Established" with its Proxy-agent field, or a remote proxy's answer
// to a chained CONNECT, becomes the stream's response; what follows the head is DATA.

/** One response head read: its status and fields (lower-case names, repeated names joined
 *  with ", " as apr_table_merge joins them, the fields HTTP/2 forbids left out). */
export interface H1Head {
  readonly status: number;
  readonly fields: readonly (readonly [string, string])[];
}

/** What a feed gave: the heads completed (interim ones first, the final one last), the bytes
 *  after the final head, and the error that stopped the parse (an AH-tagged message). */
export interface H1Feed {
  readonly heads: readonly H1Head[];
  /** Set once a final (>= 200) head was read: the bytes after it. */
  readonly rest: Buffer | null;
  readonly error: { readonly level: 'error' | 'warn' | 'debug'; readonly message: string } | null;
}

/** HUGE_STRING_LEN: the longest line get_line reads (its buffer, less the NUL). */
export const MAX_LINE = 8192 - 1;

/** h2_util_ignore_resp_header. */
const IGNORED: ReadonlySet<string> = new Set(['upgrade', 'connection', 'keep-alive', 'transfer-encoding']);

const NONE: H1Feed = { heads: [], rest: null, error: null };

function isDigit(c: number): boolean { return c >= 0x30 && c <= 0x39; }

/** parse_status: "HTTP/#.# ###*" or "HTTP/# ###*" (apr_date_checkmask), the status atoi'd
 *  from the three digits; undefined when the line matches neither. */
export function parseStatusLine(line: string): number | undefined {
  if (!line.startsWith('HTTP/') || !isDigit(line.charCodeAt(5))) return undefined;
  let at: number;
  if (line[6] === '.' && isDigit(line.charCodeAt(7)) && line[8] === ' ') at = 9;
  else if (line[6] === ' ') at = 7;
  else return undefined;
  if (!isDigit(line.charCodeAt(at)) || !isDigit(line.charCodeAt(at + 1)) || !isDigit(line.charCodeAt(at + 2))) return undefined;
  return Number(line.slice(at, at + 3));
}

/**
 * Reads response heads from what a handler writes, as many feeds as it takes (a line may
 * arrive in pieces). After the final head the catcher is done: `rest` is body.
 */
export class H1ResponseCatcher {
  private pending: Buffer = Buffer.alloc(0);
  private status = 0;
  private lines: string[] = [];
  private inHead = false;
  private done = false;

  constructor(private readonly id: string) {}

  feed(d: Buffer): H1Feed {
    if (this.done) return { heads: [], rest: d, error: null };
    let buf = this.pending.length === 0 ? d : Buffer.concat([this.pending, d]);
    const heads: H1Head[] = [];
    for (;;) {
      const lf = buf.indexOf(0x0a);
      if (lf < 0) {
        if (buf.length > MAX_LINE) return this.fail(heads, 'error', `AH10257: h2_c2(${this.id}): read response, line too long`);
        this.pending = buf;
        return heads.length === 0 ? NONE : { heads, rest: null, error: null };
      }
      if (lf + 1 > MAX_LINE) return this.fail(heads, 'error', `AH10257: h2_c2(${this.id}): read response, line too long`);
      // Only a CRLF ending is taken off (get_line); a bare LF stays in the line.
      let line = buf.toString('latin1', 0, lf + 1);
      if (line.endsWith('\r\n')) line = line.slice(0, -2);
      // A NUL ends the line as C reads it.
      const nul = line.indexOf('\0');
      if (nul >= 0) line = line.slice(0, nul);
      buf = buf.subarray(lf + 1);
      if (!this.inHead) {
        const status = parseStatusLine(line);
        if (status === undefined) return this.fail(heads, 'debug', `AH03467: h2_c2(${this.id}): unable to parse status line: ${line}`);
        this.status = status;
        this.inHead = true;
        continue;
      }
      if (line === '') {
        const fields = this.table();
        if (fields === null) return this.fail(heads, 'warn', this.badLine);
        heads.push({ status: this.status, fields });
        this.inHead = false;
        this.lines = [];
        if (this.status >= 200) {
          this.done = true;
          this.pending = Buffer.alloc(0);
          return { heads, rest: Buffer.from(buf), error: null };
        }
        continue;
      }
      if (line[0] === ' ' || line[0] === '\t') {
        // A continuation of the line before, joined with one space.
        const prev = this.lines.pop();
        if (prev === undefined) return this.fail(heads, 'debug', `AH03467: h2_c2(${this.id}): unable to parse status line: ${line}`);
        this.lines.push(`${prev} ${line.replace(/^[ \t]+/, '')}`);
      } else {
        this.lines.push(line);
      }
    }
  }

  private badLine = '';

  /** make_table: "name: value" lines, the value from its first non-blank character. */
  private table(): [string, string][] | null {
    const out: [string, string][] = [];
    for (let i = 0; i < this.lines.length; i++) {
      const l = this.lines[i]!;
      const colon = l.indexOf(':');
      if (colon < 0) {
        this.badLine = `AH02955: h2_c2(${this.id}): invalid header[${i}] '${l}'`;
        return null;
      }
      const name = l.slice(0, colon).toLowerCase();
      const value = l.slice(colon + 1).replace(/^[ \t]+/, '');
      if (IGNORED.has(name)) continue;
      const had = out.find((f) => f[0] === name);
      if (had !== undefined) had[1] = `${had[1]}, ${value}`;
      else out.push([name, value]);
    }
    return out;
  }

  private fail(heads: H1Head[], level: 'error' | 'warn' | 'debug', message: string): H1Feed {
    this.done = true;
    this.pending = Buffer.alloc(0);
    return { heads, rest: null, error: { level, message } };
  }
}
