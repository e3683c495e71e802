// A server (the main server or a <VirtualHost>), as httpd's server_rec: names, addresses,
// limits, logs, and the per-module configuration vectors.

import type { ErrorLog } from './log/error-log.js';
import type { LogLevelConfig } from './log/levels.js';

export interface ServerAddr {
  /** An IP address, '*' or '_default_'. */
  readonly host: string;
  /** 0 means any port ('*'). */
  readonly port: number;
  /** The text as written, for -S. */
  readonly text: string;
  /** The host part as written, lowercase (httpd's sar->virthost: a Host naming it selects
   *  this server when no ServerName/ServerAlias matched). */
  readonly virthost: string;
}

/** Fields a <VirtualHost> inherits from the main server unless it sets them. */
export interface ServerLimits {
  timeout: number;              // seconds
  keepAlive: boolean;
  keepAliveTimeout: number;     // milliseconds
  maxKeepAliveRequests: number;
  limitRequestLine: number;
  limitRequestFieldSize: number;
  limitRequestFields: number;
}

export const DEFAULT_LIMITS: Readonly<ServerLimits> = {
  timeout: 60,
  keepAlive: true,
  keepAliveTimeout: 5000,
  maxKeepAliveRequests: 100,
  limitRequestLine: 8190,
  limitRequestFieldSize: 8190,
  limitRequestFields: 100,
};

export class ServerRec implements ServerLimits {
  serverHostname: string | undefined = undefined;
  /** Port from ServerName host:port (0 = not given). */
  port = 0;
  /** Scheme from ServerName scheme://host (undefined = http). */
  scheme: string | undefined = undefined;
  serverAdmin: string | undefined = undefined;
  /** ServerAlias names without wildcards (lowercase) and with wildcards (compiled). */
  names: string[] = [];
  wildNames: RegExp[] = [];
  addrs: ServerAddr[] = [];
  /** ServerPath: the URL-path prefix that picks this name-based vhost for a request without
   *  a host name (HTTP/1.0 without Host). Not inherited from the main server. */
  path: string | undefined = undefined;
  /** Per-module server configuration, indexed by module index. */
  moduleConfig: unknown[] = [];
  /** The server-level per-directory configuration vector (httpd's lookup_defaults). */
  lookupDefaults: unknown[] = [];
  timeout = DEFAULT_LIMITS.timeout;
  keepAlive = DEFAULT_LIMITS.keepAlive;
  keepAliveTimeout = DEFAULT_LIMITS.keepAliveTimeout;
  maxKeepAliveRequests = DEFAULT_LIMITS.maxKeepAliveRequests;
  limitRequestLine = DEFAULT_LIMITS.limitRequestLine;
  limitRequestFieldSize = DEFAULT_LIMITS.limitRequestFieldSize;
  limitRequestFields = DEFAULT_LIMITS.limitRequestFields;
  /** Which of the inheritable fields a directive set explicitly in this server. */
  readonly explicitlySet = new Set<keyof ServerLimits | 'errorLog' | 'serverAdmin' | 'serverHostname' | 'logLevel'>();
  errorLog!: ErrorLog;
  errorLogSpec: string | undefined = undefined;
  logLevel!: LogLevelConfig;

  constructor(
    readonly id: number,
    readonly isVirtual: boolean,
    readonly defnFile: string,
    readonly defnLine: number,
  ) {}

  setLimit<K extends keyof ServerLimits>(key: K, value: ServerLimits[K]): void {
    (this as ServerLimits)[key] = value;
    this.explicitlySet.add(key);
  }

  /** Does this server answer to the given (lowercase, port-less) host name? */
  matchesName(host: string): boolean {
    if (this.serverHostname !== undefined && this.serverHostname.toLowerCase() === host) return true;
    if (this.names.includes(host)) return true;
    for (const re of this.wildNames) if (re.test(host)) return true;
    return false;
  }
}
