// mod_unixd (modules/arch/unix/mod_unixd.c): the identity the server's workers run as.
//
//  - User and Group take a name or #number; both default to "#-1" (id 4294967295), which is
//    what Debian's apache2 uses when the configuration sets neither (its envvars set them).
//    A name is looked up when the directive is read: an unknown one stops the server at once
//    with "AHnnnnn: <argv0>: bad user name X" (ap_uname2id / ap_gname2id exit(1)). A User that
//    resolves to uid 0 is refused with httpd's long "Error:\tApache has not been designed..."
//    text (the BIG_SECURITY_HOLE guard, present in Debian's build).
//  - ChrootDir must name a directory; Suexec On needs httpd's suexec wrapper, setuid root.
//  - All four are global: only in the main server, outside sections.
//  - dropPrivileges(ctx), called by the core after the listeners are bound, does what httpd's
//    ap_unixd_setup_child does when running as root: setgid, initgroups, (chroot), setuid.
//    Not root: nothing. A failure is logged at alert level and, as in httpd (whose
//    drop_privileges hook returns -1, read as DECLINED), the server goes on as it is.

import * as fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import {
  MODULE_API_VERSION, RSRC_CONF,
  defineModule, directive,
} from '../../../server/module.js';
import type { CmdParms } from '../../../server/config/cmd.js';
import { GLOBAL_ONLY } from '../../../server/config/cmd.js';
import type { ConfigContext } from '../../../server/config/context.js';
import { StartupError } from '../../../server/config/errors.js';
import type { ServerRec } from '../../../server/server-rec.js';
import { APLOG_ALERT, levelFor, type LogLevelConfig } from '../../../server/log/levels.js';

/** httpd's DEFAULT_USER / DEFAULT_GROUP. */
export const DEFAULT_USER = '#-1';
export const DEFAULT_GROUP = '#-1';
/** Debian's SUEXEC_BIN. */
export const SUEXEC_BIN = '/usr/lib/apache2/suexec';

const ROOT_ERROR =
  'Error:\tApache has not been designed to serve pages while\n'
  + '\trunning as root.  There are known race conditions that\n'
  + '\twill allow any local user to read any file on the system.\n'
  + '\tIf you still desire to serve pages as root then\n'
  + '\tadd -DBIG_SECURITY_HOLE to the CFLAGS env variable\n'
  + '\tand then rebuild the server.\n'
  + '\tIt is strongly suggested that you instead modify the User\n'
  + '\tdirective in your httpd.conf file to list a non-root\n'
  + '\tuser.\n';

export interface UnixdConfig {
  userName: string | undefined;
  userId: number | undefined;
  groupName: string | undefined;
  groupId: number | undefined;
  chrootDir: string | undefined;
  /** Suexec Off seen. */
  suexecOff: boolean;
}

function createServerConfig(): UnixdConfig {
  return { userName: undefined, userId: undefined, groupName: undefined, groupId: undefined, chrootDir: undefined, suexecOff: false };
}

// ---- name service ------------------------------------------------------------------------------

/** C's atoi on "#..." ids, then the cast to uid_t / gid_t (so "#-1" is 4294967295). */
export function idFromNumber(text: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d*)/.exec(text)!;
  if (m[2] === '') return 0;
  let n = BigInt(m[2]!);
  if (m[1] === '-') n = -n;
  const LONG_MAX = (1n << 63n) - 1n;
  if (n > LONG_MAX) n = LONG_MAX;
  if (n < -LONG_MAX - 1n) n = -LONG_MAX - 1n;
  return Number(BigInt.asUintN(32, BigInt.asIntN(32, n)));
}

interface DbEntry {
  readonly name: string;
  readonly id: number;
}

function readDb(file: string): DbEntry[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: DbEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const f = line.split(':');
    if (f.length < 3 || !/^\d+$/.test(f[2]!)) continue;
    out.push({ name: f[0]!, id: Number(f[2]) });
  }
  return out;
}

/** getent(1) for names the files do not hold (NSS sources such as LDAP). */
function getent(db: 'passwd' | 'group', key: string): DbEntry | undefined {
  try {
    const line = execFileSync('getent', [db, key], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 });
    const f = line.split('\n')[0]!.split(':');
    if (f.length < 3 || !/^\d+$/.test(f[2]!)) return undefined;
    return { name: f[0]!, id: Number(f[2]) };
  } catch {
    return undefined;
  }
}

/** getpwnam / getgrnam. */
export function lookupName(db: 'passwd' | 'group', name: string): number | undefined {
  const e = readDb(`/etc/${db}`).find((x) => x.name === name) ?? getent(db, name);
  return e?.id;
}

/** getpwuid: the user name for a uid. */
export function lookupUid(uid: number): string | undefined {
  const e = readDb('/etc/passwd').find((x) => x.id === uid) ?? getent('passwd', String(uid));
  return e?.name;
}

// ---- directives ----------------------------------------------------------------------------------

type Cmd = CmdParms<UnixdConfig, undefined>;

function setUser(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  let uid: number;
  if (arg.startsWith('#')) {
    uid = idFromNumber(arg.slice(1));
  } else {
    const found = lookupName('passwd', arg);
    if (found === undefined) throw new StartupError(`AH00543: ${cmd.ctx.argv0}: bad user name ${arg}`, 1);
    uid = found;
  }
  cmd.srv.userName = arg;
  cmd.srv.userId = uid;
  if (uid === 0) return ROOT_ERROR;
  return undefined;
}

function setGroup(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  let gid: number;
  if (arg.startsWith('#')) {
    gid = idFromNumber(arg.slice(1));
  } else {
    const found = lookupName('group', arg);
    if (found === undefined) throw new StartupError(`AH00544: ${cmd.ctx.argv0}: bad group name ${arg}`, 1);
    gid = found;
  }
  cmd.srv.groupName = arg;
  cmd.srv.groupId = gid;
  return undefined;
}

function setChrootDir(cmd: Cmd, arg: string): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  let isDir = false;
  try {
    isDir = fs.statSync(arg).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) return 'ChrootDir must be a valid directory';
  cmd.srv.chrootDir = arg;
  return undefined;
}

/** Why suexec cannot be used, or undefined when the wrapper is usable (unixd_pre_config). */
export function suexecDisabledReason(): string | undefined {
  let st: fs.Stats;
  try {
    st = fs.statSync(SUEXEC_BIN);
  } catch {
    return `Missing suexec binary ${SUEXEC_BIN}`;
  }
  let usable = (st.mode & 0o4000) !== 0 && st.uid === 0;
  if (usable) {
    try {
      fs.accessSync(SUEXEC_BIN, fs.constants.R_OK | fs.constants.X_OK);
    } catch {
      usable = false;
    }
  }
  return usable ? undefined : `Invalid owner or file mode for ${SUEXEC_BIN}`;
}

function setSuexec(cmd: Cmd, on: boolean): string | undefined {
  const err = cmd.checkContext(GLOBAL_ONLY);
  if (err !== undefined) return err;
  if (on) {
    const why = suexecDisabledReason();
    if (why !== undefined) return `suEXEC isn't supported: ${why}`;
  } else {
    cmd.srv.suexecOff = true;
  }
  return undefined;
}

// ---- what the rest of the server reads -------------------------------------------------------------

/** The effective settings (httpd's ap_unixd_config). */
export interface UnixdRunConfig {
  readonly userName: string;
  readonly userId: number;
  readonly groupName: string;
  readonly groupId: number;
  readonly chrootDir: string | undefined;
  readonly suexecEnabled: boolean;
}

function configOf(s: ServerRec): UnixdConfig {
  return (self.index >= 0 ? (self.server(s) as UnixdConfig | undefined) : undefined) ?? createServerConfig();
}

export function unixdConfig(ctx: ConfigContext): UnixdRunConfig {
  const c = configOf(ctx.mainServer);
  return {
    userName: c.userName ?? DEFAULT_USER,
    userId: c.userId ?? idFromNumber('-1'),
    groupName: c.groupName ?? DEFAULT_GROUP,
    groupId: c.groupId ?? idFromNumber('-1'),
    chrootDir: c.chrootDir,
    suexecEnabled: !c.suexecOff && suexecDisabledReason() === undefined,
  };
}

function effectiveUid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

/** The lines `-D DUMP_RUN_CFG` prints for this module (unixd_dump_config). */
export function dumpRunConfig(ctx: ConfigContext): string[] {
  const c = unixdConfig(ctx);
  const noRoot = effectiveUid() !== 0 ? ' not_used' : '';
  const out = [
    `User: name="${c.userName}" id=${c.userId}${noRoot}`,
    `Group: name="${c.groupName}" id=${c.groupId}${noRoot}`,
  ];
  if (c.chrootDir !== undefined) out.push(`ChrootDir: "${c.chrootDir}"${noRoot}`);
  return out;
}

/** System calls dropPrivileges uses (replaceable in tests). */
export interface PrivilegeOps {
  geteuid(): number;
  setgid(gid: number): void;
  initgroups(user: string, gid: number): void;
  setuid(uid: number): void;
  getpwuid(uid: number): string | undefined;
}

const ERRNO_TEXT: Readonly<Record<string, [number, string]>> = {
  EPERM: [1, 'Operation not permitted'],
  EINVAL: [22, 'Invalid argument'],
  ENOENT: [2, 'No such file or directory'],
  ENOMEM: [12, 'Cannot allocate memory'],
};

/** errno of a failed Node credential call; Node refuses id 4294967295 ((uid_t)-1) itself,
 *  where the kernel answers EINVAL. */
function errnoOfCall(e: unknown): { code: number; text: string } {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && ERRNO_TEXT[code]) {
    const [n, t] = ERRNO_TEXT[code]!;
    return { code: n, text: t };
  }
  return { code: 22, text: 'Invalid argument' };
}

const nodeOps: PrivilegeOps = {
  geteuid: effectiveUid,
  setgid: (gid) => {
    if (gid === 0xffffffff) throw Object.assign(new Error('setgid'), { code: 'EINVAL' });
    process.setgid!(gid);
  },
  initgroups: (user, gid) => {
    // process.initgroups is in Node (POSIX) but missing from @types/node.
    const p = process as NodeJS.Process & { initgroups?: (user: string | number, extraGroup: string | number) => void };
    if (p.initgroups) p.initgroups(user, gid);
    else process.setgroups!([gid]);
  },
  setuid: (uid) => {
    if (uid === 0xffffffff) throw Object.assign(new Error('setuid'), { code: 'EINVAL' });
    process.setuid!(uid);
  },
  getpwuid: lookupUid,
};

export interface DropResult {
  /** The process now runs as User/Group, or was not root and nothing was to be done. */
  readonly ok: boolean;
  /** What was logged (alert level), for the caller's tests and diagnostics. */
  readonly messages: readonly string[];
}

function alert(ctx: ConfigContext, message: string, errno?: { code: number; text: string }): void {
  const s = ctx.mainServer;
  const lv = s.logLevel as LogLevelConfig | undefined;
  if (lv !== undefined && levelFor(lv, 'unixd') < APLOG_ALERT) return;
  const log = s.errorLog as typeof s.errorLog | undefined;
  if (log !== undefined) log.write({ module: 'unixd', level: APLOG_ALERT, message, errno: errno && errno.code !== 0 ? errno : undefined });
  else ctx.log('unixd', APLOG_ALERT, errno && errno.code !== 0 ? `(${errno.code})${errno.text}: ${message}` : message);
}

/** ap_unixd_setup_child: when running as root, become Group (setgid, then initgroups with the
 *  User's name) and User (setuid). Not root: nothing. On failure httpd logs at alert level and
 *  carries on as it is; the result says so and the caller decides.
 *  DIFFERENCE: Node has no chroot(2); a ChrootDir is reported as AH02160 and not applied. */
export function dropPrivileges(ctx: ConfigContext, ops: PrivilegeOps = nodeOps): DropResult {
  const messages: string[] = [];
  const fail = (message: string, errno?: { code: number; text: string }): DropResult => {
    alert(ctx, message, errno);
    messages.push(errno && errno.code !== 0 ? `(${errno.code})${errno.text}: ${message}` : message);
    return { ok: false, messages };
  };
  const c = unixdConfig(ctx);
  const root = ops.geteuid() === 0;
  if (root) {
    let name = c.userName;
    if (name.startsWith('#')) {
      const uid = idFromNumber(name.slice(1));
      const found = ops.getpwuid(uid);
      if (found === undefined) {
        return fail(`AH02155: getpwuid: couldn't determine user name from uid ${uid}, you probably need to modify the User directive`);
      }
      name = found;
    }
    try {
      ops.setgid(c.groupId);
    } catch (e) {
      return fail(`AH02156: setgid: unable to set group id to Group ${c.groupId}`, errnoOfCall(e));
    }
    try {
      ops.initgroups(name, c.groupId);
    } catch (e) {
      return fail(`AH02157: initgroups: unable to set groups for User ${name} and Group ${c.groupId}`, errnoOfCall(e));
    }
  }
  if (c.chrootDir !== undefined) {
    if (!root) return fail('AH02158: Cannot chroot when not started as root');
    return fail(`AH02160: Can't chroot to ${c.chrootDir}`, { code: 38, text: 'Function not implemented' });
  }
  if (root) {
    try {
      ops.setuid(c.userId);
    } catch (e) {
      return fail(`AH02162: setuid: unable to change to uid: ${c.userId}`, errnoOfCall(e));
    }
  }
  return { ok: true, messages };
}

// ---- the module ------------------------------------------------------------------------------

const self = defineModule<UnixdConfig, undefined>({
  name: 'unixd_module',
  source: 'mod_unixd.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  directives: [
    directive<UnixdConfig, undefined, 'TAKE1'>({
      name: 'User', args: 'TAKE1', where: RSRC_CONF,
      help: 'Effective user id for this server', handler: setUser,
    }),
    directive<UnixdConfig, undefined, 'TAKE1'>({
      name: 'Group', args: 'TAKE1', where: RSRC_CONF,
      help: 'Effective group id for this server', handler: setGroup,
    }),
    directive<UnixdConfig, undefined, 'TAKE1'>({
      name: 'ChrootDir', args: 'TAKE1', where: RSRC_CONF,
      help: 'The directory to chroot(2) into', handler: setChrootDir,
    }),
    directive<UnixdConfig, undefined, 'FLAG'>({
      name: 'Suexec', args: 'FLAG', where: RSRC_CONF,
      help: 'Enable or disable suEXEC support', handler: setSuexec,
    }),
  ],
});

export default self;
