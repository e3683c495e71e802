// mod_version (built in): <IfVersion [[!]operator] version>, compared with the Apache
// version plume is compatible with (2.4.71).

import { CmdParms } from '../../server/config/cmd.js';
import { ArgCursor } from '../../server/config/lexer.js';
import { defineModule, directive, MODULE_API_VERSION, EXEC_ON_READ, RSRC_CONF, ACCESS_CONF, OR_ALL } from '../../server/module.js';
import { APACHE_MAJOR, APACHE_MINOR, APACHE_PATCH, APACHE_COMPAT_VERSION } from '../../server/version.js';

type Cmd = CmdParms<undefined, undefined>;

function cmpVersion(a: number[], b: number[]): number {
  for (let i = 0; i < 3; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d) return d;
  }
  return 0;
}

const BAD_VERSION = 'Version appears to be invalid. It must have the format major[.minor[.patch]] where major, minor and patch are numbers.';

/** -1, 0 or 1 comparing 2.4.71 with a "major[.minor[.patch]]" text (missing parts are 0). */
function compareWith(text: string): number | string {
  const m = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(text);
  if (!m) return BAD_VERSION;
  const c = cmpVersion([APACHE_MAJOR, APACHE_MINOR, APACHE_PATCH], [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)]);
  return Math.sign(c);
}

function matchRegex(src: string): boolean | string {
  try { return new RegExp(src).test(APACHE_COMPAT_VERSION); } catch { return 'Unable to compile regular expression'; }
}

/** start_ifversion: the arguments as httpd sees them (the section's text up to and including
 *  its closing '>'), one to three words: [operator] version, the '>' possibly apart. */
function ifVersion(cmd: Cmd, raw: string): string | undefined {
  const c = new ArgCursor(raw + '>');
  let arg1 = c.word();
  let arg2: string | undefined = c.atEnd() ? undefined : c.word();
  let arg3: string | undefined = c.atEnd() ? undefined : c.word();
  if (!c.atEnd()) return '<IfVersion takes one, two or three arguments, a comparison operator, a version (and a delimiter)';
  if (arg2 === undefined) { arg2 = arg1; arg1 = '='; }
  if (arg3 === undefined && arg2 === '>') { arg3 = '>'; arg2 = arg1; arg1 = '='; }
  const closedApart = arg3 === '>';
  if (arg2 === '' || (!closedApart && !arg2.endsWith('>'))) return `<IfVersion> directive missing closing '>'`;
  const version = closedApart ? arg2 : arg2.slice(0, -1);
  let op = arg1;
  let reverse = false;
  if (op.startsWith('!')) { reverse = true; if (op.length > 1) op = op.slice(1); }
  let match: boolean;
  switch (op) {
    case '=': case '==': {
      if (!version.startsWith('/')) {
        const r = compareWith(version);
        if (typeof r === 'string') return r;
        match = r === 0;
        break;
      }
      if (version.length < 2 || !version.endsWith('/')) return 'Missing delimiting / of regular expression.';
      const r = matchRegex(version.slice(1, -1));
      if (typeof r === 'string') return r;
      match = r;
      break;
    }
    case '~': {
      const r = matchRegex(version);
      if (typeof r === 'string') return r;
      match = r;
      break;
    }
    case '<': case '<=': case '>': case '>=': {
      const r = compareWith(version);
      if (typeof r === 'string') return r;
      const orEqual = op.length === 2 && r === 0;
      match = (op[0] === '<' ? r === -1 : r === 1) || orEqual;
      break;
    }
    default:
      return `unrecognized operator '${arg1}'`;
  }
  if (match !== reverse) cmd.emit(cmd.expand(cmd.node.source.children ?? []));
  return undefined;
}

export default defineModule<undefined, undefined>({
  name: 'version_module',
  source: 'mod_version.c',
  apiVersion: MODULE_API_VERSION,
  directives: [
    directive({ name: '<IfVersion', args: 'RAW_ARGS', where: EXEC_ON_READ | RSRC_CONF | ACCESS_CONF | OR_ALL, help: 'a comparison operator, a version (and a delimiter)', handler: ifVersion, section: true }),
  ],
});
