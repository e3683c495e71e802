// mod_vhost_alias (modules/mappers/mod_vhost_alias.c): mass virtual hosting. VirtualDocumentRoot
// and VirtualScriptAlias (and their IP forms) build the path from the host name (or the local
// address) with %N.M interpolation; the result is the request's DocumentRoot.

import {
  defineModule, directive, DECLINED, OK, MODULE_API_VERSION, RSRC_CONF, type HookResult,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { getServerName, getServerPort } from '../../server/core/server-name.js';

type Mode = 'unset' | 'none' | 'name' | 'ip';

interface MvaConf {
  docRoot: string | undefined;
  cgiRoot: string | undefined;
  docRootMode: Mode;
  cgiRootMode: Mode;
}

type Cmd = CmdParms<MvaConf, undefined>;

/** Checks a format string as vhost_alias_set does. */
function checkFormat(map: string): string | undefined {
  let i = 0;
  const digit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  while (i < map.length) {
    if (map[i++] !== '%') continue;
    if (map[i] === 'p' || map[i] === '%') { i++; continue; }
    if (map[i] === '-') i++;
    if (digit(map[i])) i++; else return 'syntax error in format string';
    if (map[i] === '+') i++;
    if (map[i] !== '.') continue;
    i++;
    if (map[i] === '-') i++;
    if (digit(map[i])) i++; else return 'syntax error in format string';
    if (map[i] === '+') i++;
  }
  return undefined;
}

function setter(which: 'doc' | 'cgi', mode: Mode) {
  return (cmd: Cmd, map: string): string | undefined => {
    const c = cmd.srv;
    if (!map.startsWith('/')) {
      if (map.toLowerCase() !== 'none') return "format string must be an absolute path, or 'none'";
      if (which === 'doc') { c.docRoot = undefined; c.docRootMode = 'none'; } else { c.cgiRoot = undefined; c.cgiRootMode = 'none'; }
      return undefined;
    }
    const err = checkFormat(map);
    if (err) return err;
    if (which === 'doc') { c.docRoot = map; c.docRootMode = mode; } else { c.cgiRoot = map; c.cgiRootMode = mode; }
    return undefined;
  };
}

/** vhost_alias_interpolate: %% %p %N.M (with - and +), lower-cased, no trailing '/'. */
export function interpolate(name: string, map: string, port: number): string {
  const dots: number[] = [-1];
  for (let i = 0; i < name.length; i++) if (name[i] === '.' && dots.length < 19) dots.push(i);
  const ndots = dots.length;
  dots.push(name.length);
  let out = '';
  let i = 0;
  while (i < map.length) {
    if (map[i] !== '%') { out += map[i++]; continue; }
    i++;
    if (map[i] === '%') { i++; out += '%'; continue; }
    if (map[i] === 'p') { i++; out += String(port); continue; }
    let Nd = false, Np = false, Md = false, Mp = false, M = 0;
    if (map[i] === '-') { i++; Nd = true; }
    const N = map.charCodeAt(i++) - 48;
    if (map[i] === '+') { i++; Np = true; }
    if (map[i] === '.') {
      i++;
      if (map[i] === '-') { i++; Md = true; }
      M = map.charCodeAt(i++) - 48;
      if (map[i] === '+') { i++; Mp = true; }
    }
    let src = name;
    let start = dots[0]! + 1;
    let end = dots[ndots]!;
    if (N !== 0) {
      if (N > ndots) { src = '_'; start = 0; end = 1; }
      else if (!Nd) { start = dots[N - 1]! + 1; if (!Np) end = dots[N]!; }
      else { if (!Np) start = dots[ndots - N]! + 1; end = dots[ndots - N + 1]!; }
    }
    if (M !== 0) {
      if (M > end - start) { src = '_'; start = 0; end = 1; }
      else if (!Md) { start = start + M - 1; if (!Mp) end = start + 1; }
      else { if (!Mp) start = end - M; end = end - M + 1; }
    }
    out += src.slice(start, end).toLowerCase();
  }
  if (out.endsWith('/')) out = out.slice(0, -1);
  return out;
}

function translate(r: Request): HookResult {
  const conf = self.server(r.server);
  let cgi = -1;
  if (conf.cgiRoot !== undefined) {
    cgi = r.uri.indexOf('cgi-bin/');
    let lead = 0;
    while (r.uri[lead] === '/') lead++;
    if (cgi >= 0 && cgi !== lead) cgi = -1;
  }
  let mode: Mode;
  let map: string | undefined;
  let uri: string;
  if (cgi >= 0) {
    mode = conf.cgiRootMode; map = conf.cgiRoot; uri = r.uri.slice(cgi + 'cgi-bin'.length);
  } else if (r.uri.startsWith('/')) {
    mode = conf.docRootMode; map = conf.docRoot; uri = r.uri;
  } else {
    return DECLINED;
  }
  let name: string;
  if (mode === 'name') name = getServerName(r);
  else if (mode === 'ip') name = r.connection.localIp;
  else return DECLINED;
  const docroot = interpolate(name, map!, getServerPort(r));
  r.canonicalFilename = '';
  r.filename = docroot + uri;
  r.contextDocumentRoot = docroot;
  r.documentRoot = docroot;
  if (cgi >= 0) {
    r.handler = 'cgi-script';
    r.notes.set('alias-forced-type', 'cgi-script');
    r.contextPrefix = '/cgi-bin';
  }
  return OK;
}

const self = defineModule<MvaConf, undefined>({
  name: 'vhost_alias_module',
  source: 'mod_vhost_alias.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ docRoot: undefined, cgiRoot: undefined, docRootMode: 'unset', cgiRootMode: 'unset' }),
  mergeServerConfig: (parent, child) => ({
    docRoot: child.docRootMode === 'unset' ? parent.docRoot : child.docRoot,
    docRootMode: child.docRootMode === 'unset' ? parent.docRootMode : child.docRootMode,
    cgiRoot: child.cgiRootMode === 'unset' ? parent.cgiRoot : child.cgiRoot,
    cgiRootMode: child.cgiRootMode === 'unset' ? parent.cgiRootMode : child.cgiRootMode,
  }),
  directives: [
    directive<MvaConf, undefined, 'TAKE1'>({ name: 'VirtualScriptAlias', args: 'TAKE1', where: RSRC_CONF, help: 'how to create a ScriptAlias based on the host', handler: setter('cgi', 'name') }),
    directive<MvaConf, undefined, 'TAKE1'>({ name: 'VirtualDocumentRoot', args: 'TAKE1', where: RSRC_CONF, help: 'how to create the DocumentRoot based on the host', handler: setter('doc', 'name') }),
    directive<MvaConf, undefined, 'TAKE1'>({ name: 'VirtualScriptAliasIP', args: 'TAKE1', where: RSRC_CONF, help: 'how to create a ScriptAlias based on the host', handler: setter('cgi', 'ip') }),
    directive<MvaConf, undefined, 'TAKE1'>({ name: 'VirtualDocumentRootIP', args: 'TAKE1', where: RSRC_CONF, help: 'how to create the DocumentRoot based on the host', handler: setter('doc', 'ip') }),
  ],
  hooks: {
    translateName: { fn: translate, predecessors: ['mod_alias.c', 'mod_userdir.c'] },
  },
});

export default self;
