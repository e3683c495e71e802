// Log levels as httpd defines them (emerg … debug, trace1 … trace8), and the LogLevel
// value: a default level plus per-module overrides ("LogLevel warn rewrite:trace3").

export const LOG_LEVEL_NAMES = [
  'emerg', 'alert', 'crit', 'error', 'warn', 'notice', 'info', 'debug',
  'trace1', 'trace2', 'trace3', 'trace4', 'trace5', 'trace6', 'trace7', 'trace8',
] as const;
export type LogLevelName = (typeof LOG_LEVEL_NAMES)[number];

export const APLOG_EMERG = 0;
export const APLOG_ALERT = 1;
export const APLOG_CRIT = 2;
export const APLOG_ERR = 3;
export const APLOG_WARNING = 4;
export const APLOG_NOTICE = 5;
export const APLOG_INFO = 6;
export const APLOG_DEBUG = 7;
export const APLOG_TRACE1 = 8;
export const APLOG_TRACE2 = 9;
export const APLOG_TRACE3 = 10;
export const APLOG_TRACE4 = 11;
export const APLOG_TRACE5 = 12;
export const APLOG_TRACE6 = 13;
export const APLOG_TRACE7 = 14;
export const APLOG_TRACE8 = 15;

export function parseLevel(name: string): number | undefined {
  const i = (LOG_LEVEL_NAMES as readonly string[]).indexOf(name.toLowerCase());
  return i < 0 ? undefined : i;
}

export function levelName(level: number): LogLevelName {
  return LOG_LEVEL_NAMES[Math.max(0, Math.min(15, level))]!;
}

export interface LogLevelConfig {
  /** The default level. */
  readonly level: number;
  /** Per-module levels keyed by the module's short name ("rewrite", "core"). */
  readonly modules: ReadonlyMap<string, number>;
}

export const DEFAULT_LOG_LEVEL: LogLevelConfig = { level: APLOG_WARNING, modules: new Map() };

/** The effective level for a module. */
export function levelFor(cfg: LogLevelConfig, module: string): number {
  if (cfg.modules.size === 0) return cfg.level;
  const m = cfg.modules.get(module);
  return m === undefined ? cfg.level : m;
}

/** Applies one LogLevel directive's arguments on top of a base; returns an error text. */
export function applyLogLevel(
  base: LogLevelConfig,
  args: readonly string[],
  knownModule: (name: string) => string | undefined,
): LogLevelConfig | string {
  let level = base.level;
  const modules = new Map(base.modules);
  const bad = 'Log level keyword must be one of emerg/alert/crit/error/warn/notice/info/debug/trace1/.../trace8';
  for (const arg of args) {
    const colon = arg.indexOf(':');
    if (colon < 0) {
      const l = parseLevel(arg);
      if (l === undefined) return bad;
      level = l;
      continue;
    }
    const mod = arg.slice(0, colon);
    const lv = parseLevel(arg.slice(colon + 1));
    if (lv === undefined) return `${arg}: ${bad}`;
    const short = knownModule(mod);
    if (short === undefined) return `Cannot find module ${mod}`;
    modules.set(short, lv);
  }
  return { level, modules };
}
