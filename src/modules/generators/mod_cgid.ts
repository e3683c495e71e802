// mod_cgid (modules/generators/mod_cgid.c): the CGI handler for threaded MPMs, with its own
// module identity (log lines say "cgid", its own AH numbers) and directives: the ScriptLog
// set, CGIDScriptTimeout and ScriptSock. The server's first process starts the CGI daemon
// (cgid-daemon.ts) before it serves: it listens on the ScriptSock Unix socket (its name ends
// with the parent's pid; mode 0700, owned by User), runs as User/Group and runs the scripts the
// handlers describe to it (cgid-client.ts), so serving processes do not fork. A daemon that
// dies is started again (AH01239, as httpd's cgid_maint does); the socket is removed when the
// server stops. The handler's work (environment, headers, body, ScriptLog) is cgi-common.ts's.
import {
  defineModule, directive, DECLINED, MODULE_API_VERSION, RSRC_CONF,
} from '../../server/module.js';
import { GLOBAL_ONLY, type CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { globals } from '../../server/core/globals.js';
import {
  cgiHandler, isCgiRequest, createCgiServerConfig, mergeCgiServerConfig, type CgiDirConfig, type CgiFlavour, type CgiServerConfig,
} from './cgi-common.js';
import { errnoText, scriptLogDirectives, scriptTimeoutDirective } from './mod_cgi.js';
import { execElement } from './cgi-ssi-exec.js';
import { fork, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ConfigContext } from '../../server/config/context.js';
import { APLOG_CRIT, APLOG_ERR } from '../../server/log/levels.js';
import { errnoOf } from '../../server/log/error-log.js';
import { unixdConfig, lookupName, idFromNumber } from '../arch/unix/mod_unixd.js';
import { DAEMON_ENV, type CgidDaemonOptions } from './cgid-daemon.js';
import { runThroughDaemon } from './cgid-client.js';
import type { StderrSink } from './cgi-spawner.js';
import { streamStderr } from './cgi-common.js';
import { CGID_DAEMON_EXEC_ARGV } from '../../engine/flags.js';

/** httpd's DEFAULT_SCRIPTSOCK, under DefaultRuntimeDir. */
const DEFAULT_SCRIPTSOCK = 'cgisock';

/** ScriptSock as configured (with the parent's pid appended), or undefined for the default. */
let scriptSock: string | undefined;

/** The parent's pid: the name of the socket is the same in every process of the server. */
function parentPid(ctx: ConfigContext): number {
  return ctx.child ? process.ppid : process.pid;
}

/** The daemon's socket: ScriptSock, or cgisock, with the parent's pid appended, relative to
 *  DefaultRuntimeDir (ap_runtime_dir_relative). */
export function scriptSockPath(ctx: ConfigContext): string {
  if (scriptSock !== undefined) return scriptSock;
  return path.join(globals(ctx).runtimeDir ?? ctx.serverRootRelative('logs'), `${DEFAULT_SCRIPTSOCK}.${parentPid(ctx)}`);
}

function setScriptSock(cmd: CmdParms<CgiServerConfig, CgiDirConfig>, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err) return err;
  const name = `${arg}.${parentPid(cmd.ctx)}`;
  if (name.startsWith('/')) { scriptSock = name; return undefined; }
  const rt = globals(cmd.ctx).runtimeDir;
  scriptSock = rt !== undefined ? `${rt.replace(/\/$/, '')}/${name}` : cmd.serverRootRelative(name);
  return undefined;
}

// ---- the daemon, seen from the parent ------------------------------------------------------------

/** The running daemon, its socket and the configuration generation that started it. */
let daemon: { child: ChildProcess; sock: string; ctx: ConfigContext } | null = null;

const DAEMON_JS = new URL('./cgid-daemon.js', import.meta.url);

/** cgid_init / cgid_start: forks the daemon and waits until it listens. A daemon that cannot
 *  bind is logged (AH01243, then AH01238 at crit) and the server goes on without it, as httpd's. */
async function startDaemon(ctx: ConfigContext): Promise<void> {
  const sock = scriptSockPath(ctx);
  const u = unixdConfig(ctx);
  const uid = u.userName.startsWith('#') ? idFromNumber(u.userName.slice(1)) : lookupName('passwd', u.userName) ?? u.userId;
  const opts: CgidDaemonOptions = {
    sock,
    user: u.userName.startsWith('#') ? null : u.userName,
    uid: uid === 0xffffffff ? null : uid,
    gid: u.groupId === 0xffffffff ? null : u.groupId,
  };
  const child = fork(DAEMON_JS, [], {
    env: { ...process.env, [DAEMON_ENV]: JSON.stringify(opts) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    // Its own process group: a terminal's ^C reaches the server, which stops the daemon itself
    // (the daemon also goes when the parent's IPC channel closes).
    detached: true,
    execArgv: [...CGID_DAEMON_EXEC_ARGV],
  });
  const result = await new Promise<{ error: string; errno: number } | null>((resolve) => {
    child.once('message', (m: unknown) => resolve(m === 'ready' ? null : (m as { error: string; errno: number })));
    child.once('exit', () => resolve({ error: 'EIO', errno: -5 }));
  });
  const log = ctx.mainServer.errorLog;
  if (result !== null) {
    const e = errnoOf(Object.assign(new Error(result.error), { code: result.error, errno: result.errno }));
    log.write({ module: 'cgid', level: APLOG_ERR, message: `AH01243: Couldn't bind unix domain socket ${sock}`, errno: e });
    log.write({ module: 'cgid', level: APLOG_CRIT, message: 'AH01238: cgid daemon failed to initialize' });
    return;
  }
  child.unref();
  child.channel?.unref();
  const d = { child, sock, ctx };
  daemon = d;
  // cgid_maint: a daemon that dies while the server runs is started again.
  child.once('exit', () => {
    if (daemon !== d) return;
    daemon = null;
    log.write({ module: 'cgid', level: APLOG_ERR, message: 'AH01239: cgid daemon process died, restarting' });
    void startDaemon(ctx);
  });
}

/** Stops the daemon and waits for it; its socket is removed (by the daemon, or here when the
 *  daemon, running as User, may not). */
async function stopDaemon(): Promise<void> {
  const d = daemon;
  daemon = null;
  if (d === null) return;
  const c = d.child;
  if (c.exitCode === null && c.signalCode === null) {
    // Referenced again, so that the process waits for it.
    c.ref();
    c.channel?.ref();
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
    });
  }
  try { fs.unlinkSync(d.sock); } catch { /* removed by the daemon */ }
}

/** httpd's connect_to_daemon tries DEFAULT_CONNECT_ATTEMPTS times, waiting longer each time.
 *  DIFFERENCE: five attempts over about 1.5 s rather than fifteen over half a minute. */
const CONNECT_ATTEMPTS = 5;

async function startScript(r: Request, argv: string[], env: Record<string, string>, cwd: string) {
  try {
    const s = await runThroughDaemon(scriptSockPath(r.rt.ctx), { file: argv[0] ?? r.filename, argv, cwd, env }, CONNECT_ATTEMPTS);
    s.ready.catch(() => { /* the body loop sees it */ });
    return {
      stdin: s.stdin, stdout: s.stdout, stderr: (sink: StderrSink) => { streamStderr(s.stderr, sink); },
      ready: s.ready, onExecError: s.onExecError, reap: () => { s.close(); },
    };
  } catch (e) {
    r.log('cgid', APLOG_ERR, `AH01257: stderr from ${r.filename}: unable to connect to cgi daemon after multiple tries`, r.rt.errno(e));
    return 503;
  }
}

const flavour: CgiFlavour = {
  module: 'cgid',
  tags: { execOff: 'AH01262: ', nphIncluded: 'AH01263: ', notFound: 'AH01264: ', isDir: 'AH01265: ', pathInfo: 'AH01266: ' },
  // What the daemon's child writes to the passed stderr when exec fails (cgid_child_errfn).
  execFailure: (file, err) => `AH01241: error spawning CGI child: exec of '${file}' failed (${errnoText(err).replace(/^\(\d+\)/, '')})`,
  timeoutWarning: true,
  server: (r) => self.server(r.server),
  dir: (r) => self.dir(r),
  start: startScript,
};

const self = defineModule<CgiServerConfig, CgiDirConfig>({
  name: 'cgid_module',
  source: 'mod_cgid.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: createCgiServerConfig,
  mergeServerConfig: mergeCgiServerConfig,
  createDirConfig: () => ({ timeout: undefined }),
  directives: [
    ...scriptLogDirectives<CgiDirConfig>(),
    directive<CgiServerConfig, CgiDirConfig, 'TAKE1'>({
      name: 'ScriptSock', args: 'TAKE1', where: RSRC_CONF,
      help: 'the name of the socket to use for communication with the cgi daemon.', handler: setScriptSock,
    }),
    scriptTimeoutDirective('CGIDScriptTimeout'),
  ],
  hooks: {
    handler: (r: Request) => (isCgiRequest(r) ? cgiHandler(flavour, r) : DECLINED),
  },
  // <!--#exec --> for mod_include (httpd's cgi_optfns_retrieve).
  providers: [{ group: 'ssi_element', name: 'exec', version: '0', provider: execElement('cgid') }],
  configHooks: {
    preConfig: () => { scriptSock = undefined; },
    // The daemon belongs to the server's first process (the parent, or the -X process).
    postConfig: async (ctx) => {
      // Not in the first read at startup (httpd's cgid_init waits for the second pass).
      if (ctx.child || ctx.preflight) return;
      await stopDaemon();
      await startDaemon(ctx);
    },
    // A restart's new generation has started its own daemon already (post_config runs first).
    cleanup: async (ctx) => {
      if (daemon !== null && daemon.ctx === ctx) await stopDaemon();
    },
  },
});

export default self;
