// String expressions (ap_expr with AP_EXPR_FLAG_STRING_RESULT) for AuthType, AuthName and
// AuthBasicFake: literal text with backslash escapes, `$0`-`$9` back-references (empty here:
// no regex has matched), `%{VARIABLE}` and `%{function:argument}`. Compiled once when the
// configuration is read; a literal compiles to a constant.
// The variables and functions are the common subset of httpd's tables; other names are refused
// with httpd's "does not exist" wording. When plume gains the full ap_expr engine this file
// becomes a call to it.

import type { Request } from '../../server/request/request.js';

export type StringExpr = (r: Request) => string;
export type CompileResult = { readonly ok: true; readonly expr: StringExpr; readonly literal: string | undefined } | { readonly ok: false; readonly error: string };

const VARIABLES: Readonly<Record<string, (r: Request) => string>> = {
  HTTP_ACCEPT: (r) => r.headersIn.get('Accept') ?? '',
  HTTP_COOKIE: (r) => r.headersIn.get('Cookie') ?? '',
  HTTP_FORWARDED: (r) => r.headersIn.get('Forwarded') ?? '',
  HTTP_HOST: (r) => r.headersIn.get('Host') ?? '',
  HTTP_PROXY_CONNECTION: (r) => r.headersIn.get('Proxy-Connection') ?? '',
  HTTP_REFERER: (r) => r.headersIn.get('Referer') ?? '',
  HTTP_USER_AGENT: (r) => r.headersIn.get('User-Agent') ?? '',
  REQUEST_METHOD: (r) => r.method,
  REQUEST_SCHEME: (r) => r.server.scheme ?? 'http',
  REQUEST_URI: (r) => r.uri,
  REQUEST_FILENAME: (r) => r.filename,
  SCRIPT_FILENAME: (r) => r.filename,
  REMOTE_ADDR: (r) => r.connection.remoteIp,
  REMOTE_PORT: (r) => String(r.connection.remotePort),
  REMOTE_HOST: (r) => r.connection.remoteHost ?? r.connection.remoteIp,
  REMOTE_USER: (r) => r.user ?? '',
  AUTH_TYPE: (r) => r.apAuthType ?? '',
  SERVER_ADMIN: (r) => r.server.serverAdmin ?? '',
  SERVER_NAME: (r) => r.hostname !== '' ? r.hostname : (r.server.serverHostname ?? ''),
  SERVER_PORT: (r) => String(r.connection.localPort),
  SERVER_PROTOCOL: (r) => r.protocol,
  PATH_INFO: (r) => r.pathInfo,
  QUERY_STRING: (r) => r.args ?? '',
  IS_SUBREQ: (r) => (r.main ? 'true' : 'false'),
  THE_REQUEST: (r) => r.theRequest,
  CONTENT_TYPE: (r) => r.contentType ?? '',
  HANDLER: (r) => r.handler ?? '',
  DOCUMENT_URI: (r) => r.uri,
  HTTPS: () => 'off',
  IPV6: (r) => (r.connection.remoteIp.includes(':') ? 'on' : 'off'),
};

const FUNCTIONS: Readonly<Record<string, (r: Request, arg: string) => string>> = {
  req: (r, a) => r.headersIn.get(a) ?? '',
  http: (r, a) => r.headersIn.get(a) ?? '',
  resp: (r, a) => r.headersOut.get(a) ?? '',
  reqenv: (r, a) => r.subprocessEnv.get(a) ?? '',
  env: (r, a) => r.notes.get(a) ?? r.subprocessEnv.get(a) ?? process.env[a] ?? '',
  osenv: (_r, a) => process.env[a] ?? '',
  note: (r, a) => r.notes.get(a) ?? '',
  tolower: (_r, a) => a.toLowerCase(),
  toupper: (_r, a) => a.toUpperCase(),
  base64: (_r, a) => Buffer.from(a, 'latin1').toString('base64'),
  unbase64: (_r, a) => Buffer.from(a, 'base64').toString('latin1'),
};

type Part = string | ((r: Request) => string);

const PARSE_PREFIX = 'syntax error, unexpected ';

/** Reads a backslash escape at s[i] ('\\'); returns [char, next index] or an error. */
function escapeAt(s: string, i: number): [string, number] | string {
  const rest = s.slice(i + 1);
  let m = /^[0-7]{1,3}/.exec(rest);
  if (/^([4-9][0-9]{2}|[89][0-9]{0,2})/.test(rest)) return 'Bad character escape sequence';
  if (m) return [String.fromCharCode(parseInt(m[0], 8) & 0xff), i + 1 + m[0].length];
  m = /^x[0-9A-Fa-f]{1,2}/.exec(rest);
  if (m) return [String.fromCharCode(parseInt(m[0].slice(1), 16)), i + 1 + m[0].length];
  const c = rest[0];
  if (c === undefined) return '\\';
  const map: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f' };
  return [map[c] ?? c, i + 2];
}

/** Compiles a string expression. */
export function compileStringExpr(src: string): CompileResult {
  const parts: Part[] = [];
  let lit = '';
  let i = 0;
  const flush = (): void => {
    if (lit !== '') parts.push(lit);
    lit = '';
  };
  while (i < src.length) {
    const c = src[i]!;
    if (c === '\\') {
      const e = escapeAt(src, i);
      if (typeof e === 'string') {
        if (e === '\\') { lit += '\\'; i++; continue; }
        return { ok: false, error: e };
      }
      lit += e[0];
      i = e[1];
      continue;
    }
    if (c === '$' && /[0-9]/.test(src[i + 1] ?? '')) {
      flush();
      i += 2; // a back-reference with no regex matched: empty
      continue;
    }
    if (c === '%' && src[i + 1] === '{') {
      flush();
      const close = src.indexOf('}', i + 2);
      const body = close < 0 ? src.slice(i + 2) : src.slice(i + 2, close);
      if (close < 0 && !body.includes(':')) {
        const m = /^[a-zA-Z][a-zA-Z0-9_]*/.exec(body);
        if (!m) return { ok: false, error: `${PARSE_PREFIX}T_ERROR, expecting T_ID: Unterminated string or variable` };
        return { ok: false, error: 'Unterminated variable' };
      }
      if (close < 0) return { ok: false, error: 'Unterminated variable' };
      const colon = body.indexOf(':');
      const name = colon < 0 ? body : body.slice(0, colon);
      if (!/^[a-zA-Z][a-zA-Z0-9_]*$/.test(name)) {
        const bad = name[0] ?? body[0] ?? '}';
        if (bad === ':') return { ok: false, error: `${PARSE_PREFIX}':', expecting T_ID` };
        if (bad === '}') return { ok: false, error: `${PARSE_PREFIX}T_VAR_END, expecting T_ID` };
        return { ok: false, error: `${PARSE_PREFIX}T_ERROR, expecting T_ID: Unexpected variable character '${bad}'` };
      }
      if (colon < 0) {
        const v = VARIABLES[name];
        if (!v) return { ok: false, error: `Variable '${name}' does not exist` };
        parts.push(v);
      } else {
        const f = FUNCTIONS[name];
        if (!f) return { ok: false, error: `Function '${name}' does not exist` };
        const arg = body.slice(colon + 1);
        parts.push((r) => f(r, arg));
      }
      i = close + 1;
      continue;
    }
    if (c === '\n') return { ok: false, error: 'Unterminated string or variable' };
    if (c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127) {
      return { ok: false, error: `Invalid string character '\\x${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}'` };
    }
    lit += c;
    i++;
  }
  flush();
  if (parts.length === 0) return { ok: true, expr: () => '', literal: '' };
  if (parts.length === 1 && typeof parts[0] === 'string') {
    const s = parts[0];
    return { ok: true, expr: () => s, literal: s };
  }
  const compiled = parts;
  return {
    ok: true,
    literal: undefined,
    expr: (r) => {
      let out = '';
      for (const p of compiled) out += typeof p === 'string' ? p : p(r);
      return out;
    },
  };
}

/** ap_escape_quotes: a backslash before every '"' not already escaped. */
export function escapeQuotes(s: string): string {
  if (!s.includes('"')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length) {
      out += c + s[i + 1]!;
      i++;
    } else if (c === '"') {
      out += '\\"';
    } else {
      out += c;
    }
  }
  return out;
}
