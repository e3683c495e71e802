// mod_version (built in): <IfVersion [[!]operator] version>, compared with the Apache
// version plume is compatible with (2.4.71).

import { CmdParms } from '../../server/config/cmd.js';
import { splitWords } from '../../server/config/lexer.js';
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

function ifVersion(cmd: Cmd, raw: string): string | undefined {
  const words = splitWords(raw);
  if (words.length === 0) return '<IfVersion> directive requires additional arguments';
  let op = '=';
  let ver: string;
  if (words.length === 1) ver = words[0]!;
  else if (words.length === 2) { op = words[0]!; ver = words[1]!; }
  else return 'too many arguments';
  let not = false;
  if (op.startsWith('!')) { not = true; op = op.slice(1); }
  const mine = [APACHE_MAJOR, APACHE_MINOR, APACHE_PATCH];
  let match: boolean;
  if (op === '~' || (op === '=' && ver.startsWith('/') && ver.endsWith('/') && ver.length > 1)) {
    const src = op === '~' ? ver : ver.slice(1, -1);
    let re: RegExp;
    try { re = new RegExp(src); } catch { return 'Cannot compile regular expression'; }
    match = re.test(APACHE_COMPAT_VERSION);
  } else {
    const m = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(ver);
    if (!m) return 'Version appears to be invalid. It must have the format major[.minor[.patch]]';
    // Missing parts count as 0 for the comparison: "2.4" means 2.4.0 (so "= 2.4" is false on 2.4.71).
    const want = [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
    const c = cmpVersion(mine, want);
    switch (op) {
      case '=': case '==': match = c === 0; break;
      case '>': match = c > 0; break;
      case '>=': match = c >= 0; break;
      case '<': match = c < 0; break;
      case '<=': match = c <= 0; break;
      default: return `unknown comparison operator '${op}'`;
    }
  }
  if (match !== not) cmd.emit(cmd.expand(cmd.node.source.children ?? []));
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
