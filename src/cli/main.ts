// The httpd-compatible command line: -f -d -C -c -D -e -E -t -S -M -l -L -v -V -X -k,
// with httpd's output shapes. Subcommands (plume upgrade, plume htpasswd, ...) are
// dispatched by name before the flags are read.

import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { loadConfiguration, postConfigure, cleanupConfiguration } from '../server/config/build.js';
import { ConfigError, StartupError } from '../server/config/errors.js';
import { catalogue } from '../modules/index.js';
import { parseLevel } from '../server/log/levels.js';
import { startIdleGc } from '../engine/idle-gc.js';
import { readCount } from '../server/request/stat-cache.js';
import { resumeOptimisingCompiler } from '../engine/compiler.js';
import { startServer, bindListeners, openErrorLogs, closeErrorLogs, type Listeners, type RunningServer } from '../server/main-server.js';
import { shareLogTargets, beginLogGeneration, type LogSink } from '../server/log/log-writer.js';
import { Parent } from '../mpm/parent.js';
import { ParentListeners } from '../mpm/listeners.js';
import { isWorkerProcess, runWorker } from '../mpm/worker.js';
import { ConfigSnapshot } from '../mpm/config-snapshot.js';
import { processModel } from '../mpm/process-model.js';
import { StartupSink, type ConfigContext, type ConfigOptions, type IncludedFile } from '../server/config/context.js';
import type { ServerRec } from '../server/server-rec.js';
import { globals } from '../server/core/globals.js';
import { coreServer } from '../server/core/core-module.js';
import { APACHE_COMPAT_VERSION, BUILT, MMN, PLUME_VERSION } from '../server/version.js';
import { BUILT_IN } from '../modules/core/mod_so.js';
import { MODULE_API_VERSION } from '../server/module.js';
import { dropPrivileges, dumpRunConfig as unixdDumpRunConfig } from '../modules/arch/unix/mod_unixd.js';
import { serverAliasesAsWritten } from '../server/core/core-module.js';

const HTTPD_ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const SERVER_CONFIG_FILE = 'conf/httpd.conf';

/** Subcommands other issues add (plume upgrade, plume htpasswd, plume explain...), each
 *  imported when asked for: the server's processes do not load the tools. */
export const subcommands = new Map<string, (argv: string[]) => Promise<number>>();
subcommands.set('htpasswd', async (argv) => (await import('./htpasswd.js')).htpasswdMain(argv));
subcommands.set('htdbm', async (argv) => (await import('./htdbm.js')).htdbmMain(argv));
// The assistant asks the catalogue, as it stands when it runs, which modules plume has.
subcommands.set('upgrade', async (argv) => (await import('../upgrade/cli.js')).upgradeMain(argv, undefined, {
  plumeModules: new Set(catalogue.symbols),
}));
subcommands.set('explain', async (argv) => (await import('./explain.js')).explainMain(argv));

/** The short program name httpd prints in front of some messages (ap_server_argv0). */
const SHORT_NAME = 'plume';

/** What the command line asks for: httpd's ap_run_mode plus the deferred -V and -L. */
interface Parsed {
  defines: string[]; pre: string[]; post: string[];
  serverRoot: string | undefined; configFile: string | undefined;
  mode: 'normal' | 'test' | 'dump';
  showCompile: boolean; showDirectives: boolean;
  k: string | undefined; e: number | undefined; E: string | undefined;
  documentRootCheck: boolean;
}

/** An answer given by the command line alone (usage, -v, -l). */
interface Immediate { exit: number; stdout?: string; stderr?: string }

function usage(bin: string): string {
  const pad = ' '.repeat(7 + bin.length + 1);
  return `Usage: ${bin} [-D name] [-d directory] [-f file]
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

const K_ARGS = new Set(['start', 'restart', 'graceful', 'graceful-stop', 'stop']);
const DUMPS = new Set(['DUMP_VHOSTS', 'DUMP_RUN_CFG', 'DUMP_MODULES', 'DUMP_INCLUDES']);

/** httpd's option parsing (apr_getopt over "C:c:D:d:E:e:f:k:vVlLtTSMhX"): options may be
 *  grouped ("-tS"), an argument may follow its letter directly ("-Dname"). -v and -l answer
 *  as soon as they are read; everything else is collected. `bin` is argv[0] as started. */
function parseArgs(argv: readonly string[], bin: string): Parsed | Immediate {
  const p: Parsed = {
    defines: [], pre: [], post: [], serverRoot: undefined, configFile: undefined, mode: 'normal',
    showCompile: false, showDirectives: false, k: undefined, e: undefined, E: undefined, documentRootCheck: true,
  };
  const bad = (msg: string): Immediate => ({ exit: 1, stderr: msg + usage(bin) });
  const dump = (): void => { p.mode = 'dump'; };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') continue;
    if (!a.startsWith('-') || a.length < 2) return bad('');
    for (let j = 1; j < a.length; j++) {
      const c = a[j]!;
      if ('CcDdEefk'.includes(c)) {
        let val = a.slice(j + 1);
        if (val === '') {
          const next = argv[i + 1];
          if (next === undefined) return bad(c === 'k' ? `${SHORT_NAME}: illegal option -- k\n` : `${SHORT_NAME}: option requires an argument -- ${c}\n`);
          val = next;
          i++;
        }
        switch (c) {
          case 'C': p.pre.push(val); break;
          case 'c': p.post.push(val); break;
          case 'D':
            p.defines.push(val);
            if (DUMPS.has(val)) dump();
            break;
          case 'd': p.serverRoot = val; break;
          case 'f': p.configFile = val; break;
          case 'E': p.E = val; break;
          case 'e': {
            const level = parseLevel(val);
            if (level === undefined) return bad('');
            p.e = level;
            break;
          }
          case 'k':
            if (p.k !== undefined || !K_ARGS.has(val)) return bad(`${SHORT_NAME}: illegal option -- k\n`);
            p.k = val;
            break;
        }
        break;
      }
      switch (c) {
        case 'v': return { exit: 0, stdout: versionText() };
        case 'l': return { exit: 0, stdout: listBuiltIn() };
        case 'V': p.showCompile = true; dump(); break;
        case 'L': p.showDirectives = true; dump(); break;
        case 't': if (p.mode === 'normal') p.mode = 'test'; break;
        case 'T': p.documentRootCheck = false; break;
        case 'S': dump(); p.defines.push('DUMP_VHOSTS', 'DUMP_RUN_CFG'); break;
        case 'M': dump(); p.defines.push('DUMP_MODULES'); break;
        case 'X': p.defines.push('DEBUG'); break;
        case 'h': case '?': return bad('');
        default: return bad(`${SHORT_NAME}: illegal option -- ${c}\n`);
      }
    }
  }
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
  for (const m of catalogue.builtIn) if (BUILT_IN.has(m.decl.name)) s += `  ${m.decl.source}\n`;
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

/** httpd's IP hash bucket for a virtual host address (vhost.c hash_addr/hash_inaddr): the
 *  last four bytes of the address read as a little-endian word, folded to 0..255. -S lists
 *  address-specific virtual hosts in bucket order. */
function ipBucket(ip: string): number {
  const b = ipBytes(ip);
  if (b === undefined) return 0;
  const n = b.length;
  let key = (b[n - 4]! | (b[n - 3]! << 8) | (b[n - 2]! << 16) | (b[n - 1]! << 24)) >>> 0;
  key = (key ^ (key >>> 16)) >>> 0;
  return (((key >>> 8) ^ key) >>> 0) % 256;
}

function ipBytes(ip: string): number[] | undefined {
  if (net.isIPv4(ip)) return ip.split('.').map(Number);
  if (!net.isIPv6(ip)) return undefined;
  let text = ip;
  let tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) { tail = v4[1]!.split('.').map(Number); text = text.slice(0, -v4[1]!.length) + '0:0'; }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const hs = head === '' ? [] : head.split(':');
  const rs = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups = rest === undefined ? hs : [...hs, ...Array<string>(8 - hs.length - rs.length).fill('0'), ...rs];
  const out: number[] = [];
  for (const g of groups) { const v = parseInt(g, 16); out.push(v >> 8, v & 255); }
  if (tail.length) out.splice(12, 4, ...tail);
  return out;
}

/** -D DUMP_VHOSTS (ap_dump_vhost_config): one entry per address:port, address-specific ones
 *  first (in hash bucket order), then "*" and _default_ ones, each in configuration order. */
function dumpVhosts(ctx: ConfigContext): string {
  interface Chain { label: string; bucket: number; entries: { v: ServerRec; port: number }[] }
  const byIp = new Map<string, Chain>();
  const byPort = new Map<number, Chain>();
  for (const v of ctx.vhosts) {
    for (const a of v.addrs) {
      const wild = a.host === '*' || a.host === '_default_';
      let chain = wild ? byPort.get(a.port) : byIp.get(`${a.host} ${a.port}`);
      if (chain === undefined) {
        const hostText = wild ? '*' : net.isIPv6(a.host) ? `[${a.host}]` : a.host;
        chain = { label: `${hostText}:${a.port === 0 ? '*' : a.port}`, bucket: wild ? 0 : ipBucket(a.host), entries: [] };
        if (wild) byPort.set(a.port, chain); else byIp.set(`${a.host} ${a.port}`, chain);
      }
      if (!chain.entries.some((e) => e.v === v)) chain.entries.push({ v, port: a.port });
    }
  }
  const chains = [...[...byIp.values()].sort((x, y) => x.bucket - y.bucket), ...byPort.values()];
  const where = (v: ServerRec): string => `${v.serverHostname ?? ''} (${v.defnFile}:${v.defnLine})`;
  let s = 'VirtualHost configuration:\n';
  for (const c of chains) {
    const first = c.entries[0]!.v;
    if (c.entries.length === 1) { s += `${c.label.padEnd(22)} ${where(first)}\n`; continue; }
    s += `${c.label.padEnd(22)} is a NameVirtualHost\n${' '.repeat(8)} default server ${where(first)}\n`;
    for (const e of c.entries) {
      s += `${' '.repeat(8)} port ${e.port === 0 ? '*' : e.port} namevhost ${where(e.v)}\n`;
      const aliases = serverAliasesAsWritten(e.v);
      for (const n of aliases.names) s += `${' '.repeat(16)} alias ${n}\n`;
      for (const n of aliases.wild) s += `${' '.repeat(16)} wild alias ${n}\n`;
    }
  }
  return s;
}

/** -D DUMP_RUN_CFG (core's and mod_unixd's dump_config). */
function dumpRunCfg(ctx: ConfigContext): string {
  const g = globals(ctx);
  const main = ctx.mainServer;
  let s = `ServerRoot: "${ctx.serverRoot}"\n`;
  s += `Main DocumentRoot: "${coreServer(main).documentRoot ?? '/usr/local/apache2/htdocs'}"\n`;
  s += `Main ErrorLog: "${ctx.serverRootRelative(main.errorLogSpec ?? 'logs/error_log')}"\n`;
  s += 'Mutex default: dir="' + (g.runtimeDir ?? ctx.serverRootRelative('logs')) + '/" mechanism=default \n';
  // mod_watchdog (built in) registers its mutex type.
  s += 'Mutex watchdog-callback: using_defaults\n';
  s += `PidFile: "${ctx.serverRootRelative(g.pidFile ?? 'logs/httpd.pid')}"\n`;
  for (const [k, v] of ctx.defines) s += v === '' ? `Define: ${k}\n` : `Define: ${k}=${v}\n`;
  if (ctx.isLoaded('unixd_module')) for (const l of unixdDumpRunConfig(ctx)) s += l + '\n';
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
    if (!alive) {
      process.stdout.write('httpd not running, trying to start\n');
      return -1; // start instead
    }
    process.kill(pid!, k === 'restart' ? 'SIGHUP' : 'SIGUSR1');
    return 0;
  }
  if (k === 'start' && alive) { process.stdout.write(`httpd (pid ${pid}) already running\n`); return 0; }
  return -1;
}

/** The included-files list of -D DUMP_INCLUDES (printed even when reading failed). */
function dumpIncludes(includes: readonly IncludedFile[]): string {
  if (includes.length === 0) return '';
  let s = 'Included configuration files:\n';
  for (const i of includes) s += `${'  '.repeat(i.depth + 1)}(${i.line === 0 ? '*' : i.line}) ${i.file}\n`;
  return s;
}

/** Startup messages and the answers of -t go to stderr, or to the -E file. */
function errOut(sink: StartupSink, text: string): void {
  sink.write(text);
}

/** The text httpd prints for a configuration that cannot be used. */
function describeFailure(e: unknown): { text: string; exit: number } | undefined {
  if (e instanceof ConfigError) return { text: e.format(SHORT_NAME) + '\n', exit: 1 };
  if (e instanceof StartupError) return { text: e.text === '' ? '' : e.text + '\n', exit: e.exitCode };
  return undefined;
}

export async function main(argv: string[]): Promise<number> {
  const sub = argv[0] !== undefined && !argv[0].startsWith('-') ? subcommands.get(argv[0]) : undefined;
  if (sub) {
    resumeOptimisingCompiler();
    return sub(argv.slice(1));
  }
  // argv[0] as started, for the usage text (node runs bin/plume: that path).
  const bin = process.argv[1] ?? SHORT_NAME;
  const p = parseArgs(argv, bin);
  if (!('mode' in p)) {
    if (p.stderr) process.stderr.write(p.stderr);
    if (p.stdout) process.stdout.write(p.stdout);
    return p.exit;
  }
  const serverRoot = path.resolve(p.serverRoot ?? HTTPD_ROOT);
  const cf = p.configFile ?? SERVER_CONFIG_FILE;
  const configFile = path.isAbsolute(cf) ? cf : path.join(serverRoot, cf);
  const startupLogFile = p.E === undefined ? undefined : path.resolve(serverRoot, p.E);
  const err = new StartupSink(startupLogFile);
  const includeLog: IncludedFile[] = [];
  const opts: ConfigOptions = {
    argv0: SHORT_NAME, serverRoot, configFile, defines: p.defines, preDirectives: p.pre, postDirectives: p.post,
    startupLogLevel: p.e, startupLogFile, requireMpm: true, documentRootCheck: p.documentRootCheck,
    preflight: true, includeLog,
  };
  // A worker process of a running server: it reads the configuration its parent checked.
  if (isWorkerProcess()) return runWorker(opts, catalogue);
  const dumping = (name: string): boolean => p.defines.includes(name);
  let ctx: ConfigContext;
  try {
    ctx = await loadConfiguration(opts, catalogue);
  } catch (e) {
    const f = describeFailure(e);
    if (f === undefined) throw e;
    if (dumping('DUMP_INCLUDES')) process.stdout.write(dumpIncludes(includeLog));
    errOut(err, f.text);
    return f.exit;
  }
  if (dumping('DUMP_INCLUDES')) process.stdout.write(dumpIncludes(includeLog));
  if (p.mode !== 'normal') {
    if (p.showCompile) { process.stdout.write(fullVersion(ctx)); return 0; }
    if (p.showDirectives) { process.stdout.write(listDirectives(ctx)); return 0; }
    // The test_config hooks: core's dumps, then mod_so's module list.
    let out = '';
    if (dumping('DUMP_VHOSTS')) out += dumpVhosts(ctx);
    if (dumping('DUMP_RUN_CFG')) out += dumpRunCfg(ctx);
    if (dumping('DUMP_MODULES')) out += dumpModules(ctx);
    if (out) process.stdout.write(out);
    if (p.mode === 'test') errOut(err, 'Syntax OK\n');
    return 0;
  }
  if (p.k !== undefined) {
    const r = sendSignal(ctx, p.k);
    if (r >= 0) return r;
    return daemonize(argv);
  }
  if (detaches(ctx)) return daemonize(argv);
  return serve(ctx, opts, err, argv);
}

/** httpd's MPMs detach (apr_proc_detach) unless run as one process (-X, -D ONE_PROCESS) or
 *  told not to (-D FOREGROUND, -D NO_DETACH); the server started by daemonize() itself does not
 *  detach again. DIFFERENCE: with -D NO_DETACH httpd still becomes a session leader (setsid);
 *  Node cannot, so plume simply stays in the foreground. */
function detaches(ctx: ConfigContext): boolean {
  if (process.env[ENV_DAEMON] === '1') return false;
  const d = ctx.defines;
  return !(d.has('DEBUG') || d.has('ONE_PROCESS') || d.has('FOREGROUND') || d.has('NO_DETACH'));
}

/** The environment variable a daemonized server is started with (see daemonize()). */
const ENV_DAEMON = 'PLUME_DAEMON';

/**
 * Started plainly or with -k start: runs the server detached (its own session, no terminal
 * input or output), as httpd's apr_proc_detach does, and waits until it serves: what goes wrong
 * at startup (a port in use, a log that cannot be opened) is relayed here and becomes this
 * command's exit status. Once it serves, this command exits and closes its end of the server's
 * stderr, so that nothing waiting for this command's output (`$(plume ...)`, a test harness
 * reading a pipe) waits for the server too; the server's own messages go to its error log.
 */
async function daemonize(argv: readonly string[]): Promise<number> {
  const { spawn } = await import('node:child_process');
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-k') { i++; continue; }
    if (a.startsWith('-k')) continue;
    args.push(a);
  }
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...args], {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    env: { ...process.env, [ENV_DAEMON]: '1' },
  });
  const relay = child.stderr!;
  relay.on('data', (d: Buffer) => { process.stderr.write(d); });
  const relayed = new Promise<void>((res) => { relay.once('close', () => res()); relay.once('error', () => res()); });
  return new Promise<number>((resolve) => {
    child.on('message', (m: { t?: string }) => {
      if (m.t !== 'started') return;
      relay.destroy();
      child.disconnect();
      child.unref();
      resolve(0);
    });
    // A server that did not start: everything it printed, then its status.
    child.on('exit', (code) => { void relayed.then(() => resolve(code ?? 1)); });
    child.on('error', () => resolve(1));
  });
}

/** Tells the -k start command that launched this server that it serves. */
function startedAsDaemon(): void {
  if (process.env[ENV_DAEMON] !== '1' || typeof process.send !== 'function') return;
  delete process.env[ENV_DAEMON];
  // The command that started this server closes its end of our stderr once told: a late
  // write to it must not take the server down.
  process.stderr.on('error', () => { /* nobody reads it any more */ });
  process.send({ t: 'started' });
  process.disconnect();
}

/**
 * Starting as httpd does: the configuration read above (the preflight) opens the error logs
 * and runs the post-config hooks; from then on startup messages go to the main error log,
 * where the configuration is read a second time (its warnings land there, as httpd's second
 * read's do) and that second configuration serves: in worker processes under a parent
 * (src/mpm/parent.ts), or in this one process with -X or -D ONE_PROCESS.
 * DIFFERENCE: httpd binds its listeners before opening the error logs, in the preflight;
 * plume binds them once the serving configuration is read. A bind failure is reported on
 * stderr all the same, but the error log has been opened by then.
 */
async function serve(first: ConfigContext, opts: ConfigOptions, err: StartupSink, argv: readonly string[]): Promise<number> {
  const oneProcess = first.defines.has('DEBUG') || first.defines.has('ONE_PROCESS');
  if (!oneProcess) shareLogTargets();
  try {
    openErrorLogs(first);
  } catch (e) {
    const f = describeFailure(e);
    if (f === undefined) throw e;
    errOut(err, f.text);
    return f.exit;
  }
  const log = first.mainServer.errorLog?.sink ?? err;
  const opened: ConfigContext[] = [];
  const refuse = async (e: unknown, where: LogSink | StartupSink): Promise<number> => {
    const f = describeFailure(e);
    if (f === undefined) throw e;
    where.write(f.text);
    for (const c of [first, ...opened]) {
      await cleanupConfiguration(c);
      closeErrorLogs(c);
    }
    return f.exit;
  };
  const failed = await postConfigure(first);
  if (failed !== undefined) return refuse(new StartupError(failed), log);
  await cleanupConfiguration(first);
  const again: ConfigOptions = { ...opts, preflight: false, startupSink: log, includeLog: [] };
  // The parent remembers the text it serves from: its workers read that (see config-snapshot.ts).
  const snapshot = new ConfigSnapshot();
  let ctx: ConfigContext;
  try {
    ctx = await loadConfiguration(oneProcess ? again : { ...again, readConfigFile: snapshot.record }, catalogue);
  } catch (e) {
    return refuse(e, log);
  }
  log.flush();
  if (!oneProcess) {
    const listeners = new ParentListeners();
    try {
      listeners.prepare(ctx).commit();
    } catch (e) {
      return refuse(e, err);
    }
    beginLogGeneration();
    opened.push(ctx);
    try {
      openErrorLogs(ctx);
    } catch (e) {
      listeners.close();
      return refuse(e, err);
    }
    const notServing = await postConfigure(ctx);
    if (notServing !== undefined) {
      listeners.close();
      return refuse(new StartupError(notServing), log);
    }
    closeErrorLogs(first);
    const parent = new Parent({ ctx, snapshot, options: again, catalogue, listeners, argv, onStarted: startedAsDaemon });
    return parent.run();
  }
  let listeners: Listeners;
  try {
    listeners = await bindListeners(ctx);
  } catch (e) {
    return refuse(e, err);
  }
  let running: RunningServer;
  try {
    running = await startServer(ctx, { writePid: true, dropPrivileges: dropPrivilegesHook, listeners, concurrency: oneProcessConcurrency(ctx) });
  } catch (e) {
    return refuse(e, log);
  }
  closeErrorLogs(first);
  startedAsDaemon();
  startIdleGc(readCount);
  return new Promise<number>((resolve) => {
    const stop = (sig: string): void => {
      running.ctx.log('mpm_event', 5, `AH00491: caught ${sig}, shutting down`);
      // The error logs close last: a piped one's program must see its end of input, or it
      // (and this process, which waits for its children) would run on.
      void running.close().then(() => { closeErrorLogs(running.ctx); resolve(0); });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGWINCH', () => stop('SIGWINCH'));
    const reload = async (sig: string): Promise<void> => {
      try {
        const current = running.ctx.mainServer.errorLog?.sink ?? err;
        const next = await loadConfiguration({ ...again, startupSink: current }, catalogue);
        await running.close();
        running = await startServer(next, { writePid: true, dropPrivileges: dropPrivilegesHook, concurrency: oneProcessConcurrency(next) });
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

/** -X serves in this process alone: as many connections at once as httpd's one process has
 *  workers (prefork: one; event, worker: ThreadsPerChild, MaxRequestWorkers raised to it). */
function oneProcessConcurrency(ctx: ConfigContext): { limit: number; asyncIdle: boolean } {
  const model = processModel(ctx);
  return { limit: model.oneProcessLimit, asyncIdle: model.mpm === 'mpm_event' };
}

/** Set by mod_unixd when it is in the catalogue (drops root privileges after binding). */
export let dropPrivilegesHook: ((ctx: ConfigContext) => void) | undefined = (ctx) => {
  if (ctx.isLoaded('unixd_module')) dropPrivileges(ctx);
};
export function setDropPrivileges(fn: (ctx: ConfigContext) => void): void {
  dropPrivilegesHook = fn;
}
