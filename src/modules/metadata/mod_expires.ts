// mod_expires (modules/metadata/mod_expires.c): Expires and Cache-Control: max-age on
// responses, from ExpiresByType (exact type, or major/* wildcards) or ExpiresDefault, when
// ExpiresActive is On. Codes take both syntaxes: the old "A<seconds>" / "M<seconds>" and
// "access|now|modification [plus] {<num> <type>}*". The MOD_EXPIRES filter sets the headers
// on the response's first brigade unless the handler set Expires itself; errors get none.

import {
  defineModule, directive, MODULE_API_VERSION, OR_INDEXES, HOOK_MIDDLE,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { FTYPE_CONTENT_SET, type FilterSpec } from '../../server/filters.js';
import { splitWords } from '../../server/config/lexer.js';
import { toHttpDate } from '../../server/log/time.js';
import { APLOG_ERR } from '../../server/log/levels.js';

const ACTIVE_ON = 1;
const ACTIVE_OFF = 0;
const ACTIVE_DONTCARE = 2;

export interface ExpiresDir {
  active: number;
  /** Whether this section's ExpiresByType had a major/* type (not merged, as in httpd). */
  wildcards: boolean;
  /** A normalised code: 'A' or 'M' then seconds (the old syntax is kept as written). */
  expiresDefault: string | undefined;
  /** MIME type (case-insensitive, apr_table) to code. */
  byType: Map<string, string>;
}

function createDirConfig(): ExpiresDir {
  return { active: ACTIVE_DONTCARE, wildcards: false, expiresDefault: undefined, byType: new Map() };
}

function mergeDirConfig(base: Readonly<ExpiresDir>, add: Readonly<ExpiresDir>): ExpiresDir {
  return {
    active: add.active === ACTIVE_DONTCARE ? base.active : add.active,
    expiresDefault: add.expiresDefault ?? base.expiresDefault,
    wildcards: add.wildcards,
    byType: add.byType.size === 0 ? base.byType : base.byType.size === 0 ? add.byType : new Map([...base.byType, ...add.byType]),
  };
}

/** C's atoi. */
function atoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(s);
  return m ? Number(m[1]) | 0 : 0;
}

/** check_code: the code in its normalised form, or httpd's complaint. */
export function checkCode(code: string): { code: string } | { error: string } {
  if (code[0] === 'A' || code[0] === 'M') return { code };
  const words = splitWords(code);
  let i = 0;
  const next = (): string => words[i++] ?? '';
  // strncasecmp(w, full, n) == 0: a word shorter than n differs at its end.
  const starts = (w: string, full: string, n: number): boolean => w.length >= n && w.slice(0, n).toLowerCase() === full.slice(0, n);
  let word = next();
  let base: string;
  if (starts(word, 'now', 1) || starts(word, 'access', 1)) base = 'A';
  else if (starts(word, 'modification', 1)) base = 'M';
  else return { error: `bad expires code, unrecognised <base> '${word}'` };
  word = next();
  if (starts(word, 'plus', 1)) word = next();
  let modifier = 0;
  while (word !== '') {
    if (!(word[0]! >= '0' && word[0]! <= '9')) return { error: `bad expires code, numeric value expected <num> '${word}'` };
    const num = atoi(word);
    word = next();
    if (word === '') return { error: 'bad expires code, missing <type>' };
    let factor: number;
    if (starts(word, 'years', 1)) factor = 60 * 60 * 24 * 365;
    else if (starts(word, 'months', 2)) factor = 60 * 60 * 24 * 30;
    else if (starts(word, 'weeks', 1)) factor = 60 * 60 * 24 * 7;
    else if (starts(word, 'days', 1)) factor = 60 * 60 * 24;
    else if (starts(word, 'hours', 1)) factor = 60 * 60;
    else if (starts(word, 'minutes', 2)) factor = 60;
    else if (starts(word, 'seconds', 1)) factor = 1;
    else return { error: `bad expires code, unrecognised <type>'${word}'` };
    // An int in httpd: the sum wraps.
    modifier = (modifier + Math.imul(factor, num)) | 0;
    word = next();
  }
  return { code: `${base}${modifier}` };
}

type Cmd = CmdParms<undefined, ExpiresDir>;

function setActive(cmd: Cmd, on: boolean): undefined {
  cmd.dir.active = on ? ACTIVE_ON : ACTIVE_OFF;
  return undefined;
}

function setByType(cmd: Cmd, mime: string, code: string): string | undefined {
  const slash = mime.lastIndexOf('/');
  if (slash < 0) return 'Invalid mimetype: should contain a slash';
  if (mime.slice(slash + 1) === '*') cmd.dir.wildcards = true;
  const c = checkCode(code);
  if ('error' in c) return `'ExpiresByType ${mime} ${code}': ${c.error}`;
  cmd.dir.byType.set(mime.toLowerCase(), c.code);
  return undefined;
}

function setDefault(cmd: Cmd, code: string): string | undefined {
  const c = checkCode(code);
  if ('error' in c) return `'ExpiresDefault ${code}': ${c.error}`;
  cmd.dir.expiresDefault = c.code;
  return undefined;
}

// ---- the filter ----------------------------------------------------------------------------------

function isHttpError(status: number): boolean {
  return status >= 400 && status < 600;
}

/** set_expiration_fields: Expires and max-age from the code, never before the request. */
function setExpiration(r: Request, code: string, which: 'out' | 'err'): void {
  const t = which === 'err' ? r.errHeadersOut : r.headersOut;
  const reqUs = r.startMicros > 0 ? r.startMicros : r.requestTime * 1000;
  let baseUs: number;
  if (code[0] === 'M') {
    if (r.finfo === null) return;
    baseUs = Math.floor(r.finfo.mtimeMs * 1000);
  } else if (code[0] === 'A') {
    baseUs = reqUs;
  } else {
    r.log('expires', APLOG_ERR, `AH01500: internal error: bad expires code: ${r.filename}`);
    return;
  }
  let expires = baseUs + atoi(code.slice(1)) * 1_000_000;
  if (expires < reqUs) expires = reqUs;
  t.merge('Cache-Control', `max-age=${Math.floor((expires - reqUs) / 1_000_000)}`);
  t.set('Expires', toHttpDate(Math.floor(expires / 1000)));
}

/** The type without parameters (ap_field_noparam). */
function noParam(t: string): string {
  const semi = t.indexOf(';');
  return (semi < 0 ? t : t.slice(0, semi)).replace(/[ \t]+$/, '');
}

const MOD_EXPIRES: FilterSpec<undefined> = {
  name: 'MOD_EXPIRES',
  type: FTYPE_CONTENT_SET - 2,
  filter(f, bb) {
    const r = f.r;
    f.remove();
    if (isHttpError(r.status)) return f.pass(bb);
    const conf = self.dir(r);
    let which: 'out' | 'err' = 'err';
    let expiry = r.errHeadersOut.get('Expires');
    if (expiry === undefined) { expiry = r.headersOut.get('Expires'); which = 'out'; }
    if (expiry === undefined) {
      const ct = r.contentType;
      let code = ct !== undefined ? conf.byType.get(noParam(ct).toLowerCase()) : undefined;
      if (code === undefined) {
        let useDefault = true;
        if (conf.wildcards && ct !== undefined) {
          const slash = ct.indexOf('/');
          if (slash >= 0) {
            const check = ct.slice(0, slash + 1) + '*';
            code = conf.byType.get(check.toLowerCase());
            useDefault = code === undefined;
          }
        }
        if (useDefault) code = conf.expiresDefault;
      }
      if (code !== undefined) setExpiration(r, code, which);
    }
    return f.pass(bb);
  },
};

/** expires_insert_filter (insert_filter and insert_error_filter). */
function insertFilter(r: Request): void {
  if (isHttpError(r.status) || r.main !== null) return;
  const conf = self.dir(r);
  if (conf === undefined || conf.active !== ACTIVE_ON || (conf.byType.size === 0 && conf.expiresDefault === undefined)) return;
  r.rt.addFilter(r, MOD_EXPIRES);
}

const self = defineModule<undefined, ExpiresDir>({
  name: 'expires_module',
  source: 'mod_expires.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig,
  mergeDirConfig,
  directives: [
    directive<undefined, ExpiresDir, 'FLAG'>({ name: 'ExpiresActive', args: 'FLAG', where: OR_INDEXES, help: "Limited to 'on' or 'off'", handler: setActive }),
    directive<undefined, ExpiresDir, 'TAKE2'>({ name: 'ExpiresByType', args: 'TAKE2', where: OR_INDEXES, help: 'a MIME type followed by an expiry date code', handler: setByType }),
    directive<undefined, ExpiresDir, 'TAKE1'>({ name: 'ExpiresDefault', args: 'TAKE1', where: OR_INDEXES, help: 'an expiry date code', handler: setDefault }),
  ],
  hooks: {
    insertFilter: { fn: insertFilter, order: HOOK_MIDDLE },
    insertErrorFilter: { fn: insertFilter, order: HOOK_MIDDLE },
  },
  filters: [MOD_EXPIRES as FilterSpec],
});

export default self;
