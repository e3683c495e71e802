// libpq's connection strings (PQconnectdb's conninfo, which apr_dbd_pgsql is handed DBDParams
// as): `keyword = value` pairs separated by white space, values optionally in single quotes
// with backslash escapes, or a postgresql:// URI. Errors are worded as libpq 15 words them
// (fe-connect.c conninfo_parse), since Apache logs that text in AH00629.

/** The keywords libpq 15 accepts (PQconninfoOptions). */
export const CONNINFO_KEYWORDS: ReadonlySet<string> = new Set([
  'service', 'user', 'password', 'passfile', 'channel_binding', 'connect_timeout', 'dbname',
  'host', 'hostaddr', 'port', 'client_encoding', 'options', 'application_name',
  'fallback_application_name', 'keepalives', 'keepalives_idle', 'keepalives_interval',
  'keepalives_count', 'tcp_user_timeout', 'sslmode', 'sslcompression', 'sslcert', 'sslkey',
  'sslpassword', 'sslrootcert', 'sslcrl', 'sslcrldir', 'sslsni', 'requirepeer',
  'ssl_min_protocol_version', 'ssl_max_protocol_version', 'gssencmode', 'krbsrvname', 'gsslib',
  'replication', 'target_session_attrs',
]);

export type ConninfoResult =
  | { readonly ok: true; readonly options: ReadonlyMap<string, string> }
  | { readonly ok: false; readonly error: string };

function isSpace(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
}

/** Parses a conninfo string; a later keyword replaces an earlier one, as in libpq. */
export function parseConninfo(s: string): ConninfoResult {
  if (/^postgres(ql)?:\/\//.test(s)) return parseUri(s);
  const options = new Map<string, string>();
  let i = 0;
  const n = s.length;
  while (i < n) {
    if (isSpace(s[i])) { i++; continue; }
    // The keyword: up to '=' or white space.
    const kStart = i;
    while (i < n && s[i] !== '=' && !isSpace(s[i])) i++;
    const keyword = s.slice(kStart, i);
    while (i < n && isSpace(s[i])) i++;
    if (s[i] !== '=') return { ok: false, error: `missing "=" after "${keyword}" in connection info string\n` };
    i++;
    while (i < n && isSpace(s[i])) i++;
    let value = '';
    if (s[i] !== '\'') {
      while (i < n && !isSpace(s[i])) {
        if (s[i] === '\\') {
          i++;
          if (i < n) value += s[i];
          i++;
          continue;
        }
        value += s[i++];
      }
    } else {
      i++;
      for (;;) {
        if (i >= n) return { ok: false, error: 'unterminated quoted string in connection info string\n' };
        if (s[i] === '\\') {
          i++;
          if (i < n) value += s[i++];
          continue;
        }
        if (s[i] === '\'') { i++; break; }
        value += s[i++];
      }
    }
    if (!CONNINFO_KEYWORDS.has(keyword)) return { ok: false, error: `invalid connection option "${keyword}"\n` };
    options.set(keyword, value);
  }
  return { ok: true, options };
}

function pctDecode(v: string): string | undefined {
  try { return decodeURIComponent(v); } catch { return undefined; }
}

/** postgresql://[user[:password]@][host][:port][/dbname][?param=value&...] (one host). */
function parseUri(s: string): ConninfoResult {
  const options = new Map<string, string>();
  let rest = s.replace(/^postgres(ql)?:\/\//, '');
  const q = rest.indexOf('?');
  const query = q < 0 ? '' : rest.slice(q + 1);
  if (q >= 0) rest = rest.slice(0, q);
  const slash = rest.indexOf('/');
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const db = slash < 0 ? '' : rest.slice(slash + 1);
  let hostport = authority;
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    const cred = authority.slice(0, at);
    hostport = authority.slice(at + 1);
    const colon = cred.indexOf(':');
    const user = pctDecode(colon < 0 ? cred : cred.slice(0, colon));
    if (user === undefined) return { ok: false, error: `invalid percent-encoded token: "${cred}"\n` };
    if (user !== '') options.set('user', user);
    if (colon >= 0) {
      const pw = pctDecode(cred.slice(colon + 1));
      if (pw === undefined) return { ok: false, error: `invalid percent-encoded token: "${cred}"\n` };
      options.set('password', pw);
    }
  }
  let host = hostport;
  let port = '';
  if (hostport.startsWith('[')) {
    const close = hostport.indexOf(']');
    if (close < 0) return { ok: false, error: `end of string reached when looking for matching "]" in IPv6 host address in URI: "${s}"\n` };
    host = hostport.slice(1, close);
    const after = hostport.slice(close + 1);
    if (after.startsWith(':')) port = after.slice(1);
    else if (after !== '') return { ok: false, error: `unexpected character "${after[0]!}" at position ${s.indexOf(after) + 1} in URI (expected ":" or "/"): "${s}"\n` };
  } else {
    const colon = hostport.lastIndexOf(':');
    if (colon >= 0) { host = hostport.slice(0, colon); port = hostport.slice(colon + 1); }
  }
  const h = pctDecode(host);
  if (h === undefined) return { ok: false, error: `invalid percent-encoded token: "${host}"\n` };
  if (h !== '') options.set('host', h);
  if (port !== '') options.set('port', port);
  if (db !== '') {
    const d = pctDecode(db);
    if (d === undefined) return { ok: false, error: `invalid percent-encoded token: "${db}"\n` };
    options.set('dbname', d);
  }
  if (query !== '') {
    for (const pair of query.split('&')) {
      const eq = pair.indexOf('=');
      if (eq < 0) return { ok: false, error: `missing key/value separator "=" in URI query parameter: "${pair}"\n` };
      const k = pctDecode(pair.slice(0, eq));
      const v = pctDecode(pair.slice(eq + 1));
      if (k === undefined || v === undefined) return { ok: false, error: `invalid percent-encoded token: "${pair}"\n` };
      const key = k === 'ssl' && v === 'true' ? 'sslmode' : k;
      if (!CONNINFO_KEYWORDS.has(key)) return { ok: false, error: `invalid URI query parameter: "${k}"\n` };
      options.set(key, key === 'sslmode' && k === 'ssl' ? 'require' : v);
    }
  }
  return { ok: true, options };
}

/** libpq's parse_int_param: an optionally signed decimal integer with optional trailing
 *  white space; the error as libpq words it. */
export function conninfoInt(value: string, keyword: string): number | string {
  const m = /^\s*([+-]?\d+)\s*$/.exec(value);
  const v = m === null ? NaN : Number(m[1]);
  if (!Number.isSafeInteger(v) || v > 2147483647 || v < -2147483648) return `invalid integer value "${value}" for connection option "${keyword}"\n`;
  return v;
}

export const SSLMODES: ReadonlySet<string> = new Set(['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full']);
