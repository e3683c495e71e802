// What a directive handler sees (httpd's cmd_parms): the directive, the server and section
// being configured, the module's configuration there, and the context checks.

import type { ConfigContext } from './context.js';
import type { ServerRec } from '../server-rec.js';
import type { DirectiveSpec } from '../module.js';
import type { ConfigNode, ExpandedNode } from './tree.js';
import { APLOG_WARNING, DEFAULT_LOG_LEVEL, levelFor } from '../log/levels.js';

/** Contexts a directive may forbid (httpd's ap_check_cmd_context flags). */
export const NOT_IN_VIRTUALHOST = 0x01;
export const NOT_IN_LIMIT = 0x02;
export const NOT_IN_DIRECTORY = 0x04;
export const NOT_IN_LOCATION = 0x08;
export const NOT_IN_FILES = 0x10;
export const NOT_IN_HTACCESS = 0x20;
export const NOT_IN_PROXY = 0x40;
export const NOT_IN_DIR_LOC_FILE = NOT_IN_DIRECTORY | NOT_IN_LOCATION | NOT_IN_FILES;
export const NOT_IN_DIR_CONTEXT = NOT_IN_LIMIT | NOT_IN_DIR_LOC_FILE | NOT_IN_PROXY;
export const GLOBAL_ONLY = NOT_IN_VIRTUALHOST | NOT_IN_LIMIT | NOT_IN_DIR_LOC_FILE;

/** The state of the walk at one directive: which server, which section, what is allowed. */
export interface WalkScope {
  readonly server: ServerRec;
  /** The per-directory vector being filled (a section's, .htaccess's, or lookup defaults). */
  readonly vector: unknown[];
  /** The section path (cmd->path): Directory path, Location URL, Files pattern. */
  readonly path: string | undefined;
  /** Allowed req_override bits here. */
  readonly override: number;
  /** AllowOverride Options=... for .htaccess (OPT_* bits) — Options checks it. */
  readonly overrideOpts: number;
  /** AllowOverrideList names (lowercase) permitted in this .htaccess regardless of classes. */
  readonly overrideList: ReadonlySet<string> | null;
  /** Enclosing sections, outermost first, as httpd names them: "<VirtualHost", "<Directory"... */
  readonly parents: readonly string[];
  /** Method mask of an enclosing <Limit>/<LimitExcept> (undefined outside one). */
  readonly limited: { readonly methods: ReadonlySet<string>; readonly except: boolean } | undefined;
  /** Reading a .htaccess file. */
  readonly htaccess: boolean;
}

export class CmdParms<SC = unknown, DC = unknown> {
  constructor(
    readonly ctx: ConfigContext,
    readonly node: ExpandedNode,
    readonly spec: DirectiveSpec<unknown, unknown>,
    readonly scope: WalkScope,
    /** This module's per-server configuration. */
    readonly srv: SC,
    /** This module's configuration in the current section (created on first use). */
    readonly dir: DC,
    /** Walks nested nodes in a new scope (for section directives). */
    private readonly walker: (nodes: readonly ExpandedNode[], scope: WalkScope) => void,
    /** Read phase only (EXEC_ON_READ directives): expands raw nodes in place of this one. */
    private readonly expander?: (nodes: readonly ConfigNode[]) => ExpandedNode[],
  ) {}

  /** Read phase: nodes that replace this directive in the tree (Include, <IfModule> bodies). */
  readonly emitted: ExpandedNode[] = [];

  /** Read phase: expands raw nodes (resolving variables and nested EXEC_ON_READ directives). */
  expand(nodes: readonly ConfigNode[]): ExpandedNode[] {
    if (!this.expander) throw new Error(`${this.spec.name}: expand() outside the read phase`);
    return this.expander(nodes);
  }
  emit(nodes: readonly ExpandedNode[]): void {
    this.emitted.push(...nodes);
  }

  get server(): ServerRec { return this.scope.server; }
  get path(): string | undefined { return this.scope.path; }
  get file(): string { return this.node.file; }
  get line(): number { return this.node.line; }
  /** The directive name as declared (httpd prints cmd->name in errors). */
  get name(): string { return this.spec.name; }

  /** httpd's ap_check_cmd_context: an error text if the directive is in a forbidden place,
   *  worded as httpd words it ("X cannot occur within <Location> section"). */
  checkContext(forbidden: number): string | undefined {
    const name = this.spec.name;
    const gt = name.startsWith('<') && !name.endsWith('>') ? '>' : '';
    const parents = this.scope.parents;
    if ((forbidden & NOT_IN_VIRTUALHOST) && this.server.isVirtual) {
      return `${name}${gt} cannot occur within <VirtualHost> section`;
    }
    if ((forbidden & NOT_IN_LIMIT) && this.scope.limited) {
      return `${name}${gt} cannot occur within <Limit> or <LimitExcept> section`;
    }
    if ((forbidden & NOT_IN_HTACCESS) && this.scope.htaccess) {
      return `${name}${gt} cannot occur within htaccess files`;
    }
    if ((forbidden & NOT_IN_DIR_LOC_FILE) === NOT_IN_DIR_LOC_FILE && this.scope.path !== undefined) {
      return `${name}${gt} cannot occur within directory context`;
    }
    const checks: [number, string[]][] = [
      [NOT_IN_DIRECTORY, ['<Directory', '<DirectoryMatch']],
      [NOT_IN_LOCATION, ['<Location', '<LocationMatch']],
      [NOT_IN_FILES, ['<Files', '<FilesMatch', '<If', '<ElseIf', '<Else']],
      [NOT_IN_PROXY, ['<Proxy', '<ProxyMatch']],
    ];
    for (const [flag, names] of checks) {
      if (!(forbidden & flag)) continue;
      // find_parent: each name in turn, searched through all enclosing sections.
      for (const n of names) {
        const found = parents.find((p) => p.toLowerCase() === n.toLowerCase());
        if (found !== undefined) return `${name}${gt} cannot occur within ${found}> section`;
      }
    }
    return undefined;
  }

  /** Walks a section's children in a nested scope. */
  walk(nodes: readonly ExpandedNode[], scope: WalkScope): void {
    this.walker(nodes, scope);
  }

  /** ServerRoot-relative path (ap_server_root_relative). */
  serverRootRelative(p: string): string {
    return this.ctx.serverRootRelative(p);
  }

  /** A message about the server being configured (httpd's ap_log_error with cmd->server):
   *  shown up to that server's LogLevel as set so far. */
  log(module: string, level: number, message: string, errno?: { readonly code: number; readonly text: string }): void {
    const s = this.server;
    const cfg = s.logLevel ?? (s.isVirtual ? this.ctx.mainServer.logLevel : undefined) ?? DEFAULT_LOG_LEVEL;
    if (level > levelFor(cfg, module)) return;
    this.ctx.startupLog.write(errno === undefined ? { module, level, message } : { module, level, message, errno });
  }

  /** A warning about the server being configured. */
  warn(module: string, message: string): void {
    this.log(module, APLOG_WARNING, message);
  }
}
