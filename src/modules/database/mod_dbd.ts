// mod_dbd (modules/database/mod_dbd.c): pooled SQL database connections for other modules.
// DBDriver names the driver (plume has "pgsql", PostgreSQL over the pure-JavaScript `pg`
// client), DBDParams its connection string; each worker process keeps a pool per group of
// servers with the same settings (DBDMin, DBDKeep, DBDMax, DBDExptime), prepares every
// DBDPrepareSQL statement on each new connection and runs DBDInitSQL there. Modules reach it
// through the 'dbd' provider (dbd-api.ts): httpd's ap_dbd_prepare / ap_dbd_acquire.

import {
  defineModule, directive, HOOK_REALLY_LAST, MODULE_API_VERSION, OK, RSRC_CONF, type ProviderDecl,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Request } from '../../server/request/request.js';
import type { ServerRec } from '../../server/server-rec.js';
import { APLOG_CRIT, APLOG_ERR, APLOG_WARNING, levelFor } from '../../server/log/levels.js';
import { openPgsql, type DbdConnection } from '../../lib/dbd/pgsql.js';
import type { DbdApi, DbdHandle } from './dbd-api.js';

/** The drivers plume has; any other DBDriver is refused as Apache refuses a driver whose
 *  apr_dbd_NAME.so cannot be loaded. DIFFERENCE: Debian's APR also has sqlite3, mysql, odbc
 *  and freetds drivers as packages. */
const DRIVERS: Readonly<Record<string, (params: string) => Promise<{ conn: DbdConnection } | { error: string }>>> = {
  pgsql: openPgsql,
};

const DEFAULT_NMIN = 1;
const DEFAULT_NKEEP = 2;
const DEFAULT_NMAX = 10;
const DEFAULT_EXPTIME = 300;
/** APR_EGENERAL, which mod_dbd's failures carry. */
const EGENERAL = { code: 20014, text: 'Internal error (specific information not available)' };

export interface DbdServerConfig {
  /** DBDriver; undefined = "[DBDriver unset]". */
  name: string | undefined;
  /** DBDParams ("" = unset). */
  params: string;
  /** DBDPersist; undefined = unset (persistent). */
  persist: boolean | undefined;
  nmin: number | undefined;
  nkeep: number | undefined;
  nmax: number | undefined;
  exptime: number | undefined;
  /** DBDPrepareSQL and modules' statements: label → query ("" = none). */
  queries: Map<string, string>;
  /** DBDInitSQL, in order. */
  initQueries: string[];
}

function createServerConfig(): DbdServerConfig {
  return { name: undefined, params: '', persist: undefined, nmin: undefined, nkeep: undefined, nmax: undefined, exptime: undefined, queries: new Map(), initQueries: [] };
}

function mergeServerConfig(base: Readonly<DbdServerConfig>, add: Readonly<DbdServerConfig>): DbdServerConfig {
  return {
    name: add.name ?? base.name,
    params: add.params !== '' ? add.params : base.params,
    persist: add.persist ?? base.persist,
    nmin: add.nmin ?? base.nmin,
    nkeep: add.nkeep ?? base.nkeep,
    nmax: add.nmax ?? base.nmax,
    exptime: add.exptime ?? base.exptime,
    queries: new Map([...base.queries, ...add.queries]),
    initQueries: [...add.initQueries, ...base.initQueries],
  };
}

type Cmd = CmdParms<DbdServerConfig, unknown>;

function setDriver(cmd: Cmd, val: string): string | undefined {
  cmd.srv.name = val;
  if (!Object.hasOwn(DRIVERS, val)) return `Can't load driver file apr_dbd_${val}.so`;
  return undefined;
}

function setParams(cmd: Cmd, val: string): undefined {
  cmd.srv.params = val;
  return undefined;
}

function setPersist(cmd: Cmd, on: boolean): undefined {
  cmd.srv.persist = on;
  return undefined;
}

function setInt(field: 'nmin' | 'nkeep' | 'nmax' | 'exptime') {
  return (cmd: Cmd, val: string): string | undefined => {
    if (!/^\d*$/.test(val)) return 'Argument must be numeric!';
    // atoi: an empty argument is 0, a huge one wraps as C's int conversion would not be
    // relied on; plume keeps it within an int.
    cmd.srv[field] = Math.min(Number(val === '' ? '0' : val), 2147483647);
    return undefined;
  };
}

function setPrepare(cmd: Cmd, query: string, label?: string): undefined {
  if (label === undefined) prepare(cmd.server, '', query);
  else prepare(cmd.server, query, label);
  return undefined;
}

function setInitSql(cmd: Cmd, query: string): string | undefined {
  if (query === '' || query.startsWith('\n')) return 'You should specify SQL statement';
  cmd.srv.initQueries.push(query);
  return undefined;
}

/** The configuration generation being read (httpd's config_pool), for ap_dbd_prepare's
 *  warning, which goes to the startup log. */
let configCtx: ConfigContext | undefined;

function serverConfig(s: ServerRec): DbdServerConfig {
  let c = self.server(s) as DbdServerConfig | undefined;
  if (c === undefined) {
    c = createServerConfig();
    s.moduleConfig[self.index] = c;
  }
  return c;
}

/** ap_dbd_prepare. */
function prepare(s: ServerRec, query: string, label: string): void {
  const cfg = serverConfig(s);
  if (cfg.queries.has(label) && query !== '') {
    const ctx = configCtx;
    const lc = s.logLevel ?? ctx?.mainServer.logLevel;
    if (ctx !== undefined && (lc === undefined || APLOG_WARNING <= levelFor(lc, 'dbd'))) {
      ctx.startupLog.write({ module: 'dbd', level: APLOG_WARNING, message: `AH02653: conflicting SQL statements with label ${label}` });
    }
  }
  cfg.queries.set(label, query);
}

function logServer(s: ServerRec, level: number, message: string, errno?: { code: number; text: string }): void {
  if (level > levelFor(s.logLevel, 'dbd')) return;
  s.errorLog.write({ module: 'dbd', level, message, errno });
}

// ---- connections and pools -------------------------------------------------------------

/** What a group of servers shares: one driver, one connection string, one pool's limits. */
interface GroupConfig {
  readonly server: ServerRec;
  readonly name: string;
  readonly params: string;
  readonly nmin: number;
  readonly nkeep: number;
  readonly nmax: number;
  readonly exptime: number;
  readonly queries: Map<string, string>;
  readonly initQueries: readonly string[];
}

class Rec implements DbdHandle {
  readonly prepared = new Set<string>();
  idleSince = 0;
  constructor(readonly conn: DbdConnection) {}
  get driverName(): string { return this.conn.driverName; }
  pselect(label: string, args: readonly (string | null)[], random?: boolean) { return this.conn.pselect(label, args, random); }
  pquery(label: string, args: readonly (string | null)[]) { return this.conn.pquery(label, args); }
  error(): string { return this.conn.lastError(); }
}

/** dbd_construct: opens a connection, prepares the statements and runs DBDInitSQL (whose
 *  failures are not reported, as httpd ignores its post_connect hook's result). */
async function construct(cfg: GroupConfig): Promise<Rec | null> {
  const open = DRIVERS[cfg.name];
  if (open === undefined) {
    logServer(cfg.server, APLOG_ERR, `AH00626: can't find driver for ${cfg.name}`, EGENERAL);
    return null;
  }
  const r = await open(cfg.params);
  if ('error' in r) {
    logServer(cfg.server, APLOG_ERR, `AH00629: Can't connect to ${cfg.name}: ${r.error}`, EGENERAL);
    return null;
  }
  const rec = new Rec(r.conn);
  for (const [label, query] of cfg.queries) {
    if (query === '') continue;
    const err = await r.conn.prepare(query, label);
    if (err !== undefined) {
      logServer(cfg.server, APLOG_ERR, `AH00632: failed to prepare SQL statements: ${err}`, EGENERAL);
      await r.conn.close();
      return null;
    }
    rec.prepared.add(label);
  }
  for (const q of cfg.initQueries) {
    try { await r.conn.query(q); } catch { break; }
  }
  return rec;
}

/** A worker's pool for one group (apr_reslist): DBDMin opened when it is set up, up to
 *  DBDMax in use, idle ones above DBDKeep closed after DBDExptime seconds. */
class Pool {
  private readonly idle: Rec[] = [];
  private total = 0;
  private readonly waiters: ((r: Rec | null) => void)[] = [];
  private setupRun: Promise<boolean> | null = null;
  private ready = false;
  private closed = false;
  private reaper: NodeJS.Timeout | null = null;
  constructor(readonly cfg: GroupConfig) {}

  /** dbd_setup: apr_reslist_create, which opens DBDMin connections or fails as a whole. */
  setup(s: ServerRec): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    if (this.setupRun !== null) return this.setupRun;
    this.setupRun = (async () => {
      const made: Rec[] = [];
      for (let i = 0; i < this.cfg.nmin; i++) {
        const rec = await construct(this.cfg);
        if (rec === null) {
          for (const m of made) await m.conn.close();
          logServer(s, APLOG_ERR, 'AH00633: failed to initialise', EGENERAL);
          return false;
        }
        made.push(rec);
      }
      const now = Date.now();
      for (const m of made) { m.idleSince = now; this.idle.push(m); }
      this.total = made.length;
      this.ready = true;
      return true;
    })().finally(() => { this.setupRun = null; });
    return this.setupRun;
  }

  /** apr_reslist_acquire: an idle connection, a new one below DBDMax, or the next released. */
  async acquire(): Promise<Rec | null | 'failed'> {
    this.expire();
    const rec = this.idle.pop();
    if (rec !== undefined) return rec;
    if (this.total < this.cfg.nmax) {
      this.total++;
      const made = await construct(this.cfg);
      if (made === null) {
        this.total--;
        return 'failed';
      }
      return made;
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(rec: Rec): void {
    if (this.closed) {
      void rec.conn.close();
      return;
    }
    const w = this.waiters.shift();
    if (w !== undefined) {
      w(rec);
      return;
    }
    rec.idleSince = Date.now();
    this.idle.push(rec);
    this.scheduleReap();
  }

  /** apr_reslist_invalidate: a broken connection leaves the pool. */
  invalidate(rec: Rec): void {
    this.total--;
    void rec.conn.close();
  }

  /** A connection made in place of an invalidated one joins the pool's count. */
  adopt(): void {
    this.total++;
  }

  /** Closes idle connections above DBDKeep that have been idle DBDExptime seconds. */
  private expire(): void {
    if (this.cfg.exptime <= 0) return;
    const limit = Date.now() - this.cfg.exptime * 1000;
    // Oldest first: the idle list is used from its end.
    while (this.total > this.cfg.nkeep && this.idle.length > 0 && this.idle[0]!.idleSince <= limit) {
      const old = this.idle.shift()!;
      this.total--;
      void old.conn.close();
    }
  }

  private scheduleReap(): void {
    if (this.reaper !== null || this.cfg.exptime <= 0 || this.total <= this.cfg.nkeep) return;
    this.reaper = setTimeout(() => {
      this.reaper = null;
      this.expire();
      this.scheduleReap();
    }, this.cfg.exptime * 1000 + 10);
    this.reaper.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reaper !== null) clearTimeout(this.reaper);
    for (const w of this.waiters.splice(0)) w(null);
    await Promise.all(this.idle.splice(0).map((r) => r.conn.close()));
  }
}

interface Group {
  readonly cfg: GroupConfig;
  pool: Pool | null;
}

const GROUPS = 'dbd:groups';

/** Server → its group, of the generation serving now. */
let groupOf = new WeakMap<ServerRec, Group>();
let allGroups: Group[] = [];

function groupConfigOf(s: ServerRec, c: DbdServerConfig): GroupConfig {
  return {
    server: s, name: c.name!, params: c.params,
    nmin: c.nmin ?? DEFAULT_NMIN, nkeep: c.nkeep ?? DEFAULT_NKEEP, nmax: c.nmax ?? DEFAULT_NMAX, exptime: c.exptime ?? DEFAULT_EXPTIME,
    queries: new Map(c.queries), initQueries: c.initQueries,
  };
}

/** dbd_post_config: servers with the same driver, parameters and limits, whose statements do
 *  not conflict, share one group (and so one pool per worker). */
function postConfig(ctx: ConfigContext): void {
  const groups = ctx.getScratch(GROUPS, () => ({ list: [] as Group[], of: new WeakMap<ServerRec, Group>() }));
  groups.list.length = 0;
  for (const s of [ctx.mainServer, ...ctx.vhosts]) {
    const c = self.server(s) as DbdServerConfig | undefined;
    if (c === undefined || c.name === undefined || c.persist === false) continue;
    const gc = groupConfigOf(s, c);
    let found: Group | undefined;
    for (const g of groups.list) {
      const o = g.cfg;
      if (o.name !== gc.name || o.params !== gc.params || o.nmin !== gc.nmin || o.nkeep !== gc.nkeep || o.nmax !== gc.nmax || o.exptime !== gc.exptime) continue;
      const add: [string, string][] = [];
      let ok = true;
      for (const [label, q] of gc.queries) {
        const have = o.queries.get(label);
        if (have === undefined) add.push([label, q]);
        else if (have !== q) { ok = false; break; }
      }
      if (!ok) continue;
      for (const [label, q] of add) o.queries.set(label, q);
      found = g;
      break;
    }
    if (found === undefined) {
      found = { cfg: gc, pool: null };
      groups.list.push(found);
    }
    groups.of.set(s, found);
  }
  groupOf = groups.of;
  allGroups = groups.list;
}

/** dbd_child_init: each serving process sets up its pools (DBDMin connections each).
 *  DIFFERENCE: the
 *  process does not wait for them to serve (httpd's child blocks here, but its listening
 *  sockets are open in the parent already); a request that needs a pool waits for its setup. */
function childInit(ctx: ConfigContext): void {
  const setups = allGroups.map((g) => {
    g.pool = new Pool(g.cfg);
    return g.pool.setup(g.cfg.server);
  });
  if (setups.length === 0) return;
  void Promise.all(setups).then((ok) => {
    if (ok.includes(false)) logServer(ctx.mainServer, APLOG_CRIT, 'AH00636: child init failed!', EGENERAL);
  });
}

async function cleanup(): Promise<void> {
  const gs = allGroups;
  allGroups = [];
  groupOf = new WeakMap();
  await Promise.all(gs.map((g) => g.pool?.close()));
}

/** A connection given out, and where it goes back. */
const owner = new WeakMap<Rec, Pool | null>();

/** ap_dbd_open. */
async function open(s: ServerRec): Promise<Rec | null> {
  const cfg = self.server(s) as DbdServerConfig | undefined;
  if (cfg === undefined || cfg.name === undefined) {
    logServer(s, APLOG_ERR, 'AH02654: not configured');
    return null;
  }
  if (cfg.persist === false) {
    const rec = await construct(groupConfigOf(s, cfg));
    if (rec !== null) owner.set(rec, null);
    return rec;
  }
  const g = groupOf.get(s);
  if (g === undefined) return null;
  // Outside a serving process (a request run in the parent, tests): the pool starts here.
  if (g.pool === null) g.pool = new Pool(g.cfg);
  if (!(await g.pool.setup(s))) return null;
  const rec = await g.pool.acquire();
  if (rec === 'failed') {
    logServer(s, APLOG_ERR, 'AH02655: Failed to acquire DBD connection from pool!', EGENERAL);
    return null;
  }
  if (rec === null) return null;
  // dbd_check: apr_dbd_pgsql's check_conn resets a lost connection (PQreset), which is a
  // new connection to the same server; the error logged is the one that reset met.
  if (!rec.conn.check()) {
    g.pool.invalidate(rec);
    const again = await construct(g.cfg);
    if (again === null) {
      logServer(s, APLOG_ERR, `AH00639: DBD [${g.cfg.name}] Error: ${rec.conn.lastError() || '(unknown)'}`, EGENERAL);
      return null;
    }
    g.pool.adopt();
    owner.set(again, g.pool);
    return again;
  }
  owner.set(rec, g.pool);
  return rec;
}

/** ap_dbd_close. */
function close(_s: ServerRec, h: DbdHandle): void {
  const rec = h as Rec;
  const pool = owner.get(rec);
  owner.delete(rec);
  if (pool === undefined) return;
  if (pool === null) void rec.conn.close();
  else if (!rec.conn.check()) pool.invalidate(rec);
  else pool.release(rec);
}

/** The connection each initial request holds until it is logged. */
const acquired = new WeakMap<Request, Promise<Rec | null> | Rec | null>();

function initialOf(r: Request): Request {
  let q = r;
  while (!q.isInitialReq()) q = q.prev ?? q.main!;
  return q;
}

/** ap_dbd_acquire. */
function acquire(r: Request): Promise<DbdHandle | null> | DbdHandle | null {
  const ir = initialOf(r);
  const have = acquired.get(ir);
  if (have !== undefined) return have;
  const p = open(ir.server).then((rec) => {
    // A failure is not remembered: httpd tries again on the request's next call.
    if (rec === null) acquired.delete(ir);
    else acquired.set(ir, rec);
    return rec;
  });
  acquired.set(ir, p);
  return p;
}

/** The request is over: its connection goes back to the pool (httpd's pool cleanup). */
function logTransaction(r: Request): number {
  const ir = initialOf(r);
  const have = acquired.get(ir);
  if (have === undefined) return OK;
  acquired.delete(ir);
  if (have instanceof Promise) void have.then((rec) => { if (rec !== null) close(ir.server, rec); });
  else if (have !== null) close(ir.server, have);
  return OK;
}

const api: DbdApi = { prepare, acquire, open, close };

const providers: ProviderDecl[] = [{ group: 'dbd', name: 'dbd', version: '0', provider: api }];

const self = defineModule<DbdServerConfig, unknown>({
  name: 'dbd_module',
  source: 'mod_dbd.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig,
  mergeServerConfig,
  directives: [
    directive<DbdServerConfig, unknown, 'TAKE1'>({ name: 'DBDriver', args: 'TAKE1', where: RSRC_CONF, help: 'SQL Driver', handler: setDriver }),
    directive<DbdServerConfig, unknown, 'TAKE1'>({ name: 'DBDParams', args: 'TAKE1', where: RSRC_CONF, help: 'SQL Driver Params', handler: setParams }),
    directive<DbdServerConfig, unknown, 'FLAG'>({ name: 'DBDPersist', args: 'FLAG', where: RSRC_CONF, help: 'Use persistent connection/pool', handler: setPersist }),
    directive<DbdServerConfig, unknown, 'TAKE12'>({ name: 'DBDPrepareSQL', args: 'TAKE12', where: RSRC_CONF, help: 'SQL statement to prepare (or nothing, to override statement inherited from main server) and label', handler: setPrepare }),
    directive<DbdServerConfig, unknown, 'TAKE1'>({ name: 'DBDInitSQL', args: 'TAKE1', where: RSRC_CONF, help: 'SQL statement to be executed after connection is created', handler: setInitSql }),
    directive<DbdServerConfig, unknown, 'TAKE1'>({ name: 'DBDMin', args: 'TAKE1', where: RSRC_CONF, help: 'Minimum number of connections', handler: setInt('nmin') }),
    directive<DbdServerConfig, unknown, 'TAKE1'>({ name: 'DBDKeep', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum number of sustained connections', handler: setInt('nkeep') }),
    directive<DbdServerConfig, unknown, 'TAKE1'>({ name: 'DBDMax', args: 'TAKE1', where: RSRC_CONF, help: 'Maximum number of connections', handler: setInt('nmax') }),
    directive<DbdServerConfig, unknown, 'TAKE1'>({ name: 'DBDExptime', args: 'TAKE1', where: RSRC_CONF, help: 'Keepalive time for idle connections', handler: setInt('exptime') }),
  ],
  hooks: {
    logTransaction: { fn: logTransaction, order: HOOK_REALLY_LAST },
  },
  configHooks: {
    preConfig(ctx) { configCtx = ctx; },
    postConfig,
    childInit,
    cleanup,
  },
  providers,
});

export default self;
