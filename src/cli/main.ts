// The httpd-compatible command line: -f -d -C -c -D -e -E -t -S -M -l -L -v -V -X -k,
// with httpd's output shapes. Subcommands (plume upgrade, plume htpasswd, ...) are
// dispatched by name before the flags are read.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { readConfiguration } from '../server/config/build.js';
import { ConfigError, StartupError } from '../server/config/errors.js';
import { catalogue } from '../modules/index.js';
import { parseLevel } from '../server/log/levels.js';
import { startServer, type RunningServer } from '../server/main-server.js';
import type { ConfigContext, ConfigOptions } from '../server/config/context.js';
import { globals } from '../server/core/globals.js';
import { coreServer } from '../server/core/core-module.js';
import { APACHE_COMPAT_VERSION, BUILT, MMN, PLUME_VERSION } from '../server/version.js';
import { BUILT_IN } from '../modules/core/mod_so.js';
import { MODULE_API_VERSION } from '../server/module.js';
import { dropPrivileges } from '../modules/arch/unix/mod_unixd.js';

const HTTPD_ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const SERVER_CONFIG_FILE = 'conf/httpd.conf';

/** Subcommands other issues add (plume upgrade, plume htpasswd, plume explain...). */
export const subcommands = new Map<string, (argv: string[]) => Promise<number>>();

interface Parsed {
  defines: string[]; pre: string[]; post: string[];
  serverRoot: string | undefined; configFile: string | undefined;
  actions: Set<string>; k: string | undefined; e: string | undefined; E: string | undefined;
}

function usage(argv0: string): string {
  const pad = ' '.repeat(7 + argv0.length + 1);
  return `Usage: ${argv0} [-D name] [-d directory] [-f file]
${pad}[-C "directive"] [-c "directive"]
${pad}[-k start|restart|graceful|graceful-stop|stop]
${pad}[-v] [-V] [-h] [-l] [-L] [-t] [-T] [-S] [-X]
Options:
  -D name            : define a name for use in <IfDefine name> directives
  -d directory       : specify an alternate initial ServerRoot
  -f file            : specify an alternate ServerConfigFile
  -C "directive"     : process directive before reading config files
  -c "directive"     : process directive after reading config files
  -e level           : show startup errors of level (see LogLevel)
  -E file            : log startup errors to file
  -v                 : show version number
  -V                 : show compile settings
  -h                 : list available command line options (this page)
  -l                 : list compiled in modules
  -L                 : list available configuration directives
  -t -D DUMP_VHOSTS  : show parsed vhost settings
  -t -D DUMP_RUN_CFG : show parsed run settings
  -S                 : a synonym for -t -D DUMP_VHOSTS -D DUMP_RUN_CFG
  -t -D DUMP_MODULES : show all loaded modules 
  -M                 : a synonym for -t -D DUMP_MODULES
  -t -D DUMP_INCLUDES: show all included configuration files
  -t                 : run syntax check for config files
  -T                 : start without DocumentRoot(s) check
  -X                 : debug mode (only one worker, do not detach)
`;
}

function parseArgs(argv: string[], argv0: string): Parsed | string {
  const p: Parsed = { defines: [], pre: [], post: [], serverRoot: undefined, configFile: undefined, actions: new Set(), k: undefined, e: undefined, E: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('-') || a.length < 2) return usage(argv0);
    const flag = a[1]!;
    const takes = 'DdfCckeE'.includes(flag);
    let val: string | undefined;
    if (takes) {
      val = a.length > 2 ? a.slice(2) : argv[++i];
      if (val === undefined) return `${argv0}: option requires an argument -- ${flag}\n` + usage(argv0);
    }
    switch (flag) {
      case 'D': p.defines.push(val!); if (val === 'DUMP_VHOSTS' || val === 'DUMP_RUN_CFG' || val === 'DUMP_MODULES' || val === 'DUMP_INCLUDES') p.actions.add(val); break;
      case 'd': p.serverRoot = val; break;
      case 'f': p.configFile = val; break;
      case 'C': p.pre.push(val!); break;
      case 'c': p.post.push(val!); break;
      case 'e': if (parseLevel(val!) === undefined) return usage(argv0); p.e = val; break;
      case 'E': p.E = val; break;
      case 'k':
        if (!['start', 'restart', 'graceful', 'graceful-stop', 'stop'].includes(val!)) return `${argv0}: illegal option -- k\n` + usage(argv0);
        p.k = val; break;
      case 't': case 'T': case 'S': case 'M': case 'l': case 'L': case 'v': case 'V': case 'X': case 'h':
        p.actions.add(flag);
        if (a.length > 2) return `${argv0}: illegal option -- ${a[2]}\n` + usage(argv0);
        break;
      default:
        return `${argv0}: illegal option -- ${flag}\n` + usage(argv0);
    }
  }
  if (p.actions.has('S')) { p.actions.add('t'); p.actions.add('DUMP_VHOSTS'); p.actions.add('DUMP_RUN_CFG'); }
  if (p.actions.has('M')) { p.actions.add('t'); p.actions.add('DUMP_MODULES'); }
  if (p.actions.has('X')) { p.defines.push('ONE_PROCESS'); }
  return p;
}

function versionText(): string {
  return `Server version: plume/${PLUME_VERSION} Apache/${APACHE_COMPAT_VERSION} (compatible)\nServer built:   ${BUILT}\n`;
}

function fullVersion(ctx: ConfigContext | undefined): string {
  const mpm = ctx?.loaded.find((m) => m.decl.name.startsWith('mpm_'));
  const mpmName = mpm ? mpm.decl.name.replace(/^mpm_|_module$/g, '') : 'event';
  const threaded = mpmName === 'prefork' ? '  threaded:     no\n    forked:     yes (variable process count)\n' : '  threaded:     yes (fixed thread count)\n    forked:     yes (variable process count)\n';
  return versionText() +
    `Server's Module Magic Number: ${MMN}\n` +
    `Server loaded:  Node.js ${process.versions.node}, plume module API ${MODULE_API_VERSION}\n` +
    `Compiled using: TypeScript, Node.js ${process.versions.node}\n` +
    `Architecture:   ${process.arch === 'x64' || process.arch === 'arm64' ? '64' : '32'}-bit\n` +
    `Server MPM:     ${mpmName}\n` + threaded +
    'Server compiled with....\n' +
    ' -D APR_HAS_SENDFILE\n -D APR_HAVE_IPV6 (IPv4-mapped addresses enabled)\n -D AP_HAVE_RELIABLE_PIPED_LOGS\n' +
    ' -D DYNAMIC_MODULE_LIMIT=256\n' +
    ` -D HTTPD_ROOT="${HTTPD_ROOT}"\n` +
    ' -D DEFAULT_PIDLOG="logs/httpd.pid"\n -D DEFAULT_ERRORLOG="logs/error_log"\n' +
    ' -D AP_TYPES_CONFIG_FILE="conf/mime.types"\n' +
    ` -D SERVER_CONFIG_FILE="${SERVER_CONFIG_FILE}"\n` +
    ' -D PLUME_DBM_TYPES="SDBM"\n';
}

function listBuiltIn(): string {
  let s = 'Compiled in modules:\n';
  for (const m of catalogue.all) if (BUILT_IN.has(m.decl.name)) s += `  ${m.decl.source}\n`;
  return s;
}

function listDirectives(ctx: ConfigContext): string {
  let s = '';
  const where = (w: number): string => {
    const RSRC = 128, ACCESS = 64, OR_ALL = 31;
    if ((w & (ACCESS | RSRC)) === RSRC && !(w & OR_ALL)) return 'Allowed in *.conf only outside <Directory>, <Files>, <Location>, or <If>';
    if ((w & (ACCESS | RSRC)) === ACCESS && !(w & OR_ALL)) return 'Allowed in *.conf only inside <Directory>, <Files>, <Location>, or <If>';
    if (!(w & OR_ALL)) return 'Allowed in *.conf anywhere';
    const classes: string[] = [];
    if (w & 1) classes.push('"Limit"');
    if (w & 2) classes.push('"Options"');
    if (w & 4) classes.push('"FileInfo"');
    if (w & 8) classes.push('"AuthConfig"');
    if (w & 16) classes.push('"Indexes"');
    return `Allowed in *.conf anywhere and in .htaccess\n\twhen AllowOverride includes ${classes.join(' or ')}`;
  };
  for (const m of ctx.loaded) {
    for (const d of m.decl.directives ?? []) {
      s += `${d.name} (${m.decl.source})\n\t${d.help}\n\t${where(d.where)}\n`;
    }
  }
  return s;
}

function dumpModules(ctx: ConfigContext): string {
  let s = 'Loaded Modules:\n';
  for (const m of ctx.loaded) s += ` ${m.decl.name} (${BUILT_IN.has(m.decl.name) ? 'static' : 'shared'})\n`;
  return s;
}

function dumpVhosts(ctx: ConfigContext): string {
  let s = 'VirtualHost configuration:\n';
  const groups = new Map<string, typeof ctx.vhosts>();
  for (const v of ctx.vhosts) for (const a of v.addrs) {
    const key = `${a.host === '_default_' ? '*' : a.host}:${a.port || '*'}`;
    const g = groups.get(key) ?? [];
    g.push(v);
    groups.set(key, g);
  }
  for (const [key, vs] of groups) {
    if (vs.length === 1) {
      const v = vs[0]!;
      s += `${key.padEnd(22)} ${v.serverHostname ?? ''} (${v.defnFile}:${v.defnLine})\n`;
    } else {
      s += `${key.padEnd(22)} is a NameVirtualHost\n`;
      vs.forEach((v, i) => {
        const label = i === 0 ? 'default server' : 'port';
        s += i === 0
          ? `         ${label} ${v.serverHostname ?? ''} (${v.defnFile}:${v.defnLine})\n`
          : `         port ${v.port || key.split(':').pop()} namevhost ${v.serverHostname ?? ''} (${v.defnFile}:${v.defnLine})\n`;
        if (i === 0) s += `         port ${v.port || key.split(':').pop()} namevhost ${v.serverHostname ?? ''} (${v.defnFile}:${v.defnLine})\n`;
        for (const a of v.names) s += `                 alias ${a}\n`;
      });
    }
  }
  return s;
}

function dumpRunCfg(ctx: ConfigContext): string {
  const g = globals(ctx);
  const main = ctx.mainServer;
  let s = `ServerRoot: "${ctx.serverRoot}"\n`;
  s += `Main DocumentRoot: "${coreServer(main).documentRoot ?? '/usr/local/apache2/htdocs'}"\n`;
  s += `Main ErrorLog: "${ctx.serverRootRelative(main.errorLogSpec ?? 'logs/error_log')}"\n`;
  s += 'Mutex default: dir="' + (g.runtimeDir ?? ctx.serverRootRelative('logs')) + '/" mechanism=default \n';
  s += `PidFile: "${ctx.serverRootRelative(g.pidFile ?? 'logs/httpd.pid')}"\n`;
  for (const [k, v] of ctx.defines) s += v === '' ? `Define: ${k}\n` : `Define: ${k}=${v}\n`;
  return s;
}

function sendSignal(ctx: ConfigContext, k: string): number {
  const pidFile = ctx.serverRootRelative(globals(ctx).pidFile ?? 'logs/httpd.pid');
  let pid: number | undefined;
  try { pid = Number(fs.readFileSync(pidFile, 'utf8').trim()); } catch { pid = undefined; }
  const alive = pid !== undefined && (() => { try { process.kill(pid!, 0); return true; } catch { return false; } })();
  if (k === 'stop' || k === 'graceful-stop') {
    if (!alive) { process.stdout.write(`httpd (${pid === undefined ? 'no pid file' : `pid ${pid}?`}) not running\n`); return 0; }
    process.kill(pid!, k === 'stop' ? 'SIGTERM' : 'SIGWINCH');
    return 0;
  }
  if (k === 'restart' || k === 'graceful') {
    if (!alive) return -1; // start instead
    process.kill(pid!, k === 'restart' ? 'SIGHUP' : 'SIGUSR1');
    return 0;
  }
  if (k === 'start' && alive) { process.stdout.write(`httpd (pid ${pid}) already running\n`); return 0; }
  return -1;
}

export async function main(argv: string[]): Promise<number> {
  const argv0 = 'plume';
  const sub = argv[0] !== undefined && !argv[0].startsWith('-') ? subcommands.get(argv[0]) : undefined;
  if (sub) return sub(argv.slice(1));
  const p = parseArgs(argv, argv0);
  if (typeof p === 'string') { process.stderr.write(p); return 1; }
  if (p.actions.has('h')) { process.stderr.write(usage(argv0)); return 1; }
  if (p.actions.has('v')) { process.stdout.write(versionText()); return 0; }
  if (p.actions.has('l')) { process.stdout.write(listBuiltIn()); return 0; }
  const serverRoot = path.resolve(p.serverRoot ?? HTTPD_ROOT);
  const cf = p.configFile ?? SERVER_CONFIG_FILE;
  const configFile = path.isAbsolute(cf) ? cf : path.join(serverRoot, cf);
  if (p.E !== undefined) {
    try { fs.appendFileSync(path.resolve(serverRoot, p.E), ''); } catch { /* reported by httpd at open */ }
  }
  const opts: ConfigOptions = {
    argv0, serverRoot, configFile, defines: p.defines, preDirectives: p.pre, postDirectives: p.post,
    startupLogLevel: p.e !== undefined ? parseLevel(p.e) : undefined, startupLogFile: p.E,
  };
  let ctx: ConfigContext;
  try {
    ctx = await readConfiguration(opts, catalogue);
  } catch (e) {
    if (p.actions.has('V')) process.stdout.write(fullVersion(undefined));
    if (e instanceof ConfigError) { process.stderr.write(e.format(argv0) + '\n'); return 1; }
    if (e instanceof StartupError) { process.stderr.write(e.text + '\n'); return e.exitCode; }
    throw e;
  }
  if (p.actions.has('V')) { process.stdout.write(fullVersion(ctx)); return 0; }
  if (p.actions.has('L')) { process.stdout.write(listDirectives(ctx)); return 0; }
  if (p.actions.has('t')) {
    let out = '';
    if (p.actions.has('DUMP_VHOSTS')) out += dumpVhosts(ctx);
    if (p.actions.has('DUMP_RUN_CFG')) out += dumpRunCfg(ctx);
    if (p.actions.has('DUMP_MODULES')) out += dumpModules(ctx);
    if (p.actions.has('DUMP_INCLUDES')) {
      out += 'Included configuration files:\n';
      for (const i of ctx.includes) out += `${'  '.repeat(i.depth + 1)}(*) ${i.file}\n`;
    }
    if (out) process.stdout.write(out);
    if (!p.actions.has('DUMP_VHOSTS') && !p.actions.has('DUMP_MODULES') && !p.actions.has('DUMP_INCLUDES') || p.actions.has('S')) process.stderr.write('Syntax OK\n');
    return 0;
  }
  if (p.k !== undefined) {
    const r = sendSignal(ctx, p.k);
    if (r >= 0) return r;
    // start: detach a foreground copy of ourselves.
    const { spawn } = await import('node:child_process');
    const args = process.argv.slice(2).filter((a, i, all) => a !== '-k' && all[i - 1] !== '-k');
    const child = spawn(process.execPath, [process.argv[1]!, ...args, '-D', 'FOREGROUND'], { detached: true, stdio: 'ignore' });
    child.unref();
    return 0;
  }
  return serve(ctx, opts);
}

async function serve(ctx: ConfigContext, opts: ConfigOptions): Promise<number> {
  let running: RunningServer;
  try {
    running = await startServer(ctx, { writePid: true, dropPrivileges: dropPrivilegesHook });
  } catch (e) {
    if (e instanceof StartupError) { process.stderr.write(e.text + '\n'); return 1; }
    throw e;
  }
  return new Promise<number>((resolve) => {
    const stop = (sig: string): void => {
      running.ctx.log('mpm_event', 5, `AH00491: caught ${sig}, shutting down`);
      void running.close().then(() => resolve(0));
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGWINCH', () => stop('SIGWINCH'));
    const reload = async (sig: string): Promise<void> => {
      try {
        const next = await readConfiguration(opts, catalogue);
        await running.close();
        running = await startServer(next, { writePid: true, dropPrivileges: dropPrivilegesHook });
        next.log('mpm_event', 5, `AH00493: ${sig} received.  Doing graceful restart`);
      } catch (e) {
        const text = e instanceof ConfigError ? e.format(opts.argv0) : e instanceof StartupError ? e.text : String(e);
        running.ctx.log('core', 3, `AH00526: ${text.replace(/^AH00526: /, '')}`);
      }
    };
    process.on('SIGHUP', () => { void reload('SIGHUP'); });
    process.on('SIGUSR1', () => { void reload('SIGUSR1'); });
  });
}

/** Set by mod_unixd when it is in the catalogue (drops root privileges after binding). */
export let dropPrivilegesHook: ((ctx: ConfigContext) => void) | undefined = (ctx) => {
  if (ctx.isLoaded('unixd_module')) dropPrivileges(ctx);
};
export function setDropPrivileges(fn: (ctx: ConfigContext) => void): void {
  dropPrivilegesHook = fn;
}
