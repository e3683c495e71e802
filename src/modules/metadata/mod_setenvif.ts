// mod_setenvif (modules/metadata/mod_setenvif.c): SetEnvIf, SetEnvIfNoCase, BrowserMatch,
// BrowserMatchNoCase and SetEnvIfExpr set or unset request environment variables from request
// attributes matched against regular expressions.
//
//  - Rules written at server level (main server or <VirtualHost>) live in the per-server
//    configuration and run in post_read_request; rules in sections and .htaccess live in the
//    per-directory configuration and run in header_parser. httpd tells the two calls apart by
//    a flag in the request's request_config: the first call of a request uses the server rules,
//    every later one the per-directory rules (so a subrequest, whose header_parser is skipped,
//    runs none).
//  - The attribute is a request header (a name made of [-A-Za-z0-9_] only), a regular
//    expression over request header names (the last matching header wins), one of Remote_Host,
//    Remote_Addr, Server_Addr, Request_Method, Request_Protocol, Request_URI, or else the
//    value of an environment variable set earlier. A missing value matches as "".
//  - A pattern without regex metacharacters is a plain substring search, and then its values
//    are literal; a regex's values get $0..$9 substituted (ap_pregsub).
//  - Consecutive rules on the same attribute with the same pattern and case flag share one
//    entry (their variables are merged, a later "var" replacing an earlier one); consecutive
//    entries on the same attribute reuse the value looked up for the first (httpd compares the
//    shared name pointer), so a variable set by one rule is not seen by the next rule on it.
//  - Each variable is "var" (set to 1), "!var" (unset), "var=value"; a value starting with '!'
//    unsets too, and "var=" sets 1, as httpd's parsing has it.

import {
  DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OR_FILEINFO,
  defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import { ArgCursor } from '../../server/config/lexer.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_CRIT, APLOG_TRACE2 } from '../../server/log/levels.js';
import { lowerAscii, tableGet, tableSet, tableUnset } from '../../server/apr-table.js';
import { evalBool, isFailure, parseExprCmd, pcreQuantifierTooBig, type BoolExpr, type ExprMatch } from '../../expr/index.js';
import type { MaybePromise } from '../../server/module.js';
import { compileApacheRegex, pregsub } from '../../server/util-pcre.js';

// ---- configuration ---------------------------------------------------------------------------

type Special = 'none' | 'remote_addr' | 'remote_host' | 'request_uri' | 'request_method' | 'request_protocol' | 'server_addr';

const SPECIALS: readonly Special[] = ['remote_addr', 'remote_host', 'request_uri', 'request_method', 'request_protocol', 'server_addr'];

/** The attribute name shared by the entries that name it alike (httpd shares the char* and
 *  compares pointers); its identity decides whether a value is looked up again. */
export interface AttributeName {
  readonly name: string;
}


/** One rule (httpd's sei_entry). Its variable table grows while the configuration is read. */
export interface SetEnvIfEntry {
  /** undefined for SetEnvIfExpr. */
  readonly name: AttributeName | undefined;
  readonly regexText: string | undefined;
  /** The compiled regex, when the pattern uses regex syntax. */
  readonly preg: RegExp | undefined;
  /** The literal to search for, when it does not (backslash escapes removed). */
  readonly pattern: string | undefined;
  /** SetEnvIfExpr: the condition, parsed once. */
  readonly expr: BoolExpr | undefined;
  readonly special: Special;
  /** A regex over request header names, when the attribute is one. */
  readonly nameRegex: RegExp | undefined;
  readonly icase: boolean;
  /** Variables in table order: name → value ("!" means unset). */
  readonly features: [string, string][];
}

export interface SetEnvIfConfig {
  readonly conditionals: SetEnvIfEntry[];
}

function createConfig(): SetEnvIfConfig {
  return { conditionals: [] };
}

function mergeConfig(base: Readonly<SetEnvIfConfig>, add: Readonly<SetEnvIfConfig>): SetEnvIfConfig {
  return { conditionals: base.conditionals.concat(add.conditionals) };
}

const HEADER_NAME = /^[-A-Za-z0-9_]*$/;

/** httpd's non_regex_pattern: the literal a pattern stands for, or undefined if it needs a regex. */
export function nonRegexPattern(s: string): string | undefined {
  let escapes = false;
  let inEscape = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    switch (c) {
      case '^': case '.': case '$': case '|': case '(': case ')': case '[': case ']':
      case '*': case '+': case '?': case '{': case '}':
        if (!inEscape) return undefined;
        inEscape = false;
        break;
      case '\\':
        if (!inEscape) { inEscape = true; escapes = true; }
        else inEscape = false;
        break;
      default:
        if (inEscape) return undefined;
    }
  }
  if (!escapes) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\') i++;
    if (i < s.length) out += s[i];
  }
  return out;
}

/** apr_table_setn on the variable table: replace the value of the same name in place. */
function setFeature(features: [string, string][], name: string, value: string): void {
  const k = lowerAscii(name);
  for (const f of features) {
    if (lowerAscii(f[0]) === k) { f[1] = value; return; }
  }
  features.push([name, value]);
}

/** add_envvars: reads "var", "!var" and "var=value" words until the first empty one. */
function addEnvVars(cmd: CmdParms<SetEnvIfConfig, SetEnvIfConfig>, args: ArgCursor, entry: SetEnvIfEntry): string | undefined {
  let seen = 0;
  for (;;) {
    const feature = args.atEnd() ? '' : args.word();
    if (feature === '') break;
    seen++;
    // ap_getword(&feature, '='): the name ends at the first '=', and every '=' after it is skipped.
    const eq = feature.indexOf('=');
    const name = eq < 0 ? feature : feature.slice(0, eq);
    let vstart = eq < 0 ? feature.length : eq;
    while (feature[vstart] === '=') vstart++;
    const value = feature.slice(vstart);
    if (value !== '') setFeature(entry.features, name, value);
    else if (name.startsWith('!')) setFeature(entry.features, name.slice(1), '!');
    else setFeature(entry.features, name, '1');
  }
  if (seen === 0) return `Missing envariable expression for ${cmd.name}`;
  return undefined;
}

/** The rule list a directive adds to: the server's at server level, else the section's. */
function targetConfig(cmd: CmdParms<SetEnvIfConfig, SetEnvIfConfig>): SetEnvIfConfig {
  return cmd.path !== undefined ? cmd.dir : cmd.srv;
}

function addSetEnvIfCore(cmd: CmdParms<SetEnvIfConfig, SetEnvIfConfig>, fname: string, args: ArgCursor, icase: boolean): string | undefined {
  const conf = targetConfig(cmd);
  const entries = conf.conditionals;
  const regex = args.atEnd() ? '' : args.word();
  if (regex === '') return `Missing regular expression for ${cmd.name}`;

  // Share the name of an earlier entry spelled alike, so the request-time value cache works
  // as httpd's pointer comparison does.
  let name: AttributeName | undefined;
  const lname = lowerAscii(fname);
  for (const e of entries) {
    if (e.name !== undefined && lowerAscii(e.name.name) === lname) { name = e.name; break; }
  }
  name ??= { name: fname };

  const last = entries[entries.length - 1];
  let entry: SetEnvIfEntry;
  if (last === undefined || last.name !== name || last.icase !== icase || last.regexText !== regex) {
    const simple = nonRegexPattern(regex);
    let preg: RegExp | undefined;
    if (simple === undefined) {
      preg = compileApacheRegex(regex, icase);
      if (preg === undefined) return `${cmd.name} regex could not be compiled.`;
    }
    const lower = lowerAscii(fname);
    const special: Special = (SPECIALS as readonly string[]).includes(lower) ? lower as Special : 'none';
    let nameRegex: RegExp | undefined;
    if (special === 'none' && !HEADER_NAME.test(fname)) {
      nameRegex = compileApacheRegex(fname, icase);
      // httpd's message lacks the space: "SetEnvIfHeader name regex could not be compiled."
      if (nameRegex === undefined) return `${cmd.name}Header name regex could not be compiled.`;
    }
    entry = {
      name, regexText: regex, preg,
      pattern: simple !== undefined ? (icase ? lowerAscii(simple) : simple) : undefined,
      expr: undefined, special, nameRegex, icase, features: [],
    };
    entries.push(entry);
  } else {
    entry = last;
  }
  return addEnvVars(cmd, args, entry);
}

function setEnvIf(cmd: CmdParms<SetEnvIfConfig, SetEnvIfConfig>, raw: string, icase: boolean): string | undefined {
  const args = new ArgCursor(raw);
  const fname = args.atEnd() ? '' : args.word();
  if (fname === '') return `Missing header-field name for ${cmd.name}`;
  return addSetEnvIfCore(cmd, fname, args, icase);
}

function browserMatch(cmd: CmdParms<SetEnvIfConfig, SetEnvIfConfig>, raw: string, icase: boolean): string | undefined {
  return addSetEnvIfCore(cmd, 'User-Agent', new ArgCursor(raw), icase);
}

function setEnvIfExpr(cmd: CmdParms<SetEnvIfConfig, SetEnvIfConfig>, raw: string): string | undefined {
  const conf = targetConfig(cmd);
  const args = new ArgCursor(raw);
  const text = args.atEnd() ? '' : args.word();
  if (text === '') return `Missing expression for ${cmd.name}`;
  const res = parseExprCmd(cmd, text, 0, 'setenvif');
  if (!res.ok) return `Could not parse expression "${text}": ${res.error}`;
  const entry: SetEnvIfEntry = {
    name: undefined, regexText: undefined, preg: undefined, pattern: undefined,
    expr: res.expr, special: 'none', nameRegex: undefined, icase: false, features: [],
  };
  conf.conditionals.push(entry);
  return addEnvVars(cmd, args, entry);
}

// ---- request time ------------------------------------------------------------------------------

/** Requests whose first match_headers call (the server rules) has happened. */
const serverRulesDone = new WeakSet<Request>();

function attributeValue(r: Request, e: SetEnvIfEntry): string | undefined {
  switch (e.special) {
    case 'remote_addr': return r.useragentIp;
    case 'server_addr': return r.connection.localIp;
    // ap_get_remote_host(REMOTE_NAME): the looked-up name when there is one, else the address.
    case 'remote_host': return r.connection.remoteHost || r.connection.remoteIp;
    case 'request_uri': return r.uri;
    case 'request_method': return r.method;
    case 'request_protocol': return r.protocol;
    case 'none': {
      if (e.nameRegex !== undefined) {
        let v: string | undefined;
        const re = e.nameRegex;
        r.headersIn.forEach((n, val) => { if (re.test(n)) v = val; });
        return v;
      }
      const name = e.name!.name;
      return r.headersIn.get(name) ?? tableGet(r.subprocessEnv, name);
    }
  }
}

function containsAsciiCi(hay: string, needleLower: string): boolean {
  if (needleLower.length === 0) return true;
  return lowerAscii(hay).includes(needleLower);
}

/** Where match_headers is in its rule list: the attribute last looked up, the value tested
 *  and the groups of the last match ($1... in the values set). */
interface MatchState {
  lastName: AttributeName | undefined;
  val: string | undefined;
  groups: RegExpExecArray | null;
}

/** httpd's match_headers, run from post_read_request and from header_parser. */
function matchHeaders(r: Request): MaybePromise<number> {
  let conf: SetEnvIfConfig | undefined;
  if (!serverRulesDone.has(r)) {
    serverRulesDone.add(r);
    conf = self.server(r.server);
  } else {
    conf = self.dir(r);
  }
  if (conf === undefined || conf.conditionals.length === 0) return DECLINED;
  return matchFrom(r, conf.conditionals, 0, { lastName: undefined, val: undefined, groups: null });
}

function matchFrom(r: Request, rules: readonly SetEnvIfEntry[], start: number, st: MatchState): MaybePromise<number> {
  for (let i = start; i < rules.length; i++) {
    const b = rules[i]!;
    if (b.expr === undefined && b.name !== st.lastName) {
      st.lastName = b.name;
      st.val = attributeValue(r, b);
    }
    if (st.val === undefined) st.val = '';

    let matched = false;
    if (b.pattern !== undefined) {
      matched = b.icase ? containsAsciiCi(st.val, b.pattern) : st.val.includes(b.pattern);
    } else if (b.preg !== undefined) {
      st.groups = b.preg.exec(st.val);
      matched = st.groups !== null;
    } else if (b.expr !== undefined) {
      // ap_expr_exec_re: a regex with groups in the expression replaces the value and the
      // groups ($1... in the values), or leaves no value when it did not match.
      const re: ExprMatch = { source: st.val, match: st.groups };
      const v = evalBool(b.expr, r, re);
      if (v instanceof Promise) {
        return v.then((res) => {
          const st2 = exprOutcome(st, re);
          if (res !== true) return matchFrom(r, rules, i + 1, st2);
          const rc = applyFeatures(r, b, st2);
          return rc !== DECLINED ? rc : matchFrom(r, rules, i + 1, st2);
        });
      }
      exprOutcome(st, re);
      matched = v === true;
      if (isFailure(v)) matched = false;
    }
    if (!matched) continue;
    const rc = applyFeatures(r, b, st);
    if (rc !== DECLINED) return rc;
  }
  return DECLINED;
}

function exprOutcome(st: MatchState, re: ExprMatch): MatchState {
  st.val = re.source;
  st.groups = re.match;
  return st;
}

function applyFeatures(r: Request, b: SetEnvIfEntry, st: MatchState): number {
  for (const [key, value] of b.features) {
    if (value.startsWith('!')) {
      tableUnset(r.subprocessEnv, key);
    } else if (b.pattern === undefined && (st.val !== undefined || b.expr === undefined)) {
      const replaced = pregsub(value, st.groups);
      if (replaced === undefined) {
        r.log('setenvif', APLOG_CRIT, `AH01505: Regular expression replacement failed for '${key}', value too long?`);
        return 500;
      }
      tableSet(r.subprocessEnv, key, replaced);
    } else {
      tableSet(r.subprocessEnv, key, value);
    }
    if (r.wantsLog('setenvif', APLOG_TRACE2)) r.log('setenvif', APLOG_TRACE2, `Setting ${key}`);
  }
  return DECLINED;
}

// ---- the module ------------------------------------------------------------------------------

type Cmd = CmdParms<SetEnvIfConfig, SetEnvIfConfig>;

const self = defineModule<SetEnvIfConfig, SetEnvIfConfig>({
  name: 'setenvif_module',
  source: 'mod_setenvif.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: createConfig,
  mergeDirConfig: mergeConfig,
  createServerConfig: createConfig,
  mergeServerConfig: mergeConfig,
  directives: [
    directive<SetEnvIfConfig, SetEnvIfConfig, 'RAW_ARGS'>({
      name: 'SetEnvIf', args: 'RAW_ARGS', where: OR_FILEINFO,
      help: 'A header-name, regex and a list of variables.',
      handler: (cmd: Cmd, raw: string) => setEnvIf(cmd, raw, false),
    }),
    directive<SetEnvIfConfig, SetEnvIfConfig, 'RAW_ARGS'>({
      name: 'SetEnvIfNoCase', args: 'RAW_ARGS', where: OR_FILEINFO,
      help: 'a header-name, regex and a list of variables.',
      handler: (cmd: Cmd, raw: string) => setEnvIf(cmd, raw, true),
    }),
    directive<SetEnvIfConfig, SetEnvIfConfig, 'RAW_ARGS'>({
      name: 'SetEnvIfExpr', args: 'RAW_ARGS', where: OR_FILEINFO,
      help: 'an expression and a list of variables.',
      handler: setEnvIfExpr,
    }),
    directive<SetEnvIfConfig, SetEnvIfConfig, 'RAW_ARGS'>({
      name: 'BrowserMatch', args: 'RAW_ARGS', where: OR_FILEINFO,
      help: 'A browser regex and a list of variables.',
      handler: (cmd: Cmd, raw: string) => browserMatch(cmd, raw, false),
    }),
    directive<SetEnvIfConfig, SetEnvIfConfig, 'RAW_ARGS'>({
      name: 'BrowserMatchNoCase', args: 'RAW_ARGS', where: OR_FILEINFO,
      help: 'A browser regex and a list of variables.',
      handler: (cmd: Cmd, raw: string) => browserMatch(cmd, raw, true),
    }),
  ],
  hooks: {
    headerParser: { fn: matchHeaders, order: HOOK_MIDDLE },
    postReadRequest: { fn: matchHeaders, order: HOOK_MIDDLE },
  },
});

export default self;
