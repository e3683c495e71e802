// The core module's configuration: per-directory (core_dir_config) and per-server
// (core_server_config), with httpd's merge rules.

import type { LogLevelConfig } from '../log/levels.js';
import type { Section } from './sections.js';
import { evalString, isFailure, type StringExpr } from '../../expr/index.js';
import { APLOG_ERR } from '../log/levels.js';
import type { Request } from '../request/request.js';
import type { ResourceLimit } from './rlimit.js';

// Options bits (httpd's OPT_*).
export const OPT_NONE = 0;
export const OPT_INDEXES = 1;
export const OPT_INCLUDES = 2;
export const OPT_SYM_LINKS = 4;
export const OPT_EXECCGI = 8;
export const OPT_UNSET = 16;
export const OPT_INC_WITH_EXEC = 32;
export const OPT_SYM_OWNER = 64;
export const OPT_MULTI = 128;
export const OPT_ALL = OPT_INDEXES | OPT_INCLUDES | OPT_INC_WITH_EXEC | OPT_SYM_LINKS | OPT_EXECCGI;

// FileETag bits.
export const ETAG_UNSET = 0;
export const ETAG_NONE = 1 << 0;
export const ETAG_MTIME = 1 << 1;
export const ETAG_INODE = 1 << 2;
export const ETAG_SIZE = 1 << 3;
export const ETAG_DIGEST = 1 << 4;
export const ETAG_ALL = ETAG_MTIME | ETAG_INODE | ETAG_SIZE;
/** The 2.4 default: "MTime Size" (INode is no longer included). */
export const ETAG_BACKWARD = ETAG_MTIME | ETAG_SIZE;

export type OnOff = 'on' | 'off';
export type HostnameLookups = 'on' | 'off' | 'double';
export type UseCanonicalName = 'on' | 'off' | 'dns';
export type ServerSignature = 'off' | 'on' | 'email';
export type AllowEncodedSlashes = 'off' | 'on' | 'nodecode';

export interface CoreDirConfig {
  /** Section path (undefined at server level). */
  readonly d: string | undefined;
  opts: number;
  optsAdd: number;
  optsRemove: number;
  /** AllowOverride bits (OR_*), with OR_UNSET when never set. */
  override: number;
  overrideOpts: number;
  overrideList: ReadonlySet<string> | undefined;
  hostnameLookups: HostnameLookups | undefined;
  useCanonicalName: UseCanonicalName | undefined;
  useCanonicalPhysicalPort: OnOff | undefined;
  acceptPathInfo: 'on' | 'off' | 'default' | undefined;
  /** AddDefaultCharset: undefined unset, null Off, else the charset. */
  addDefaultCharset: string | null | undefined;
  /** ForceType / SetHandler; 'none' clears an inherited value. */
  forceType: string | undefined;
  /** SetHandler: the handler name, or the string expression naming it per request. */
  handler: string | StringExpr | undefined;
  /** ErrorDocument: a string expression per status (a message starts with '"'); null is
   *  "default" (back to the built-in page). */
  errorDocuments: ReadonlyMap<number, StringExpr | null> | undefined;
  limitRequestBody: number | undefined;
  limitXmlRequestBody: number | undefined;
  /** RLimitCPU, RLimitMEM, RLimitNPROC (rlimit.ts): the limits of the processes a request starts. */
  rlimitCpu: ResourceLimit | undefined;
  rlimitMem: ResourceLimit | undefined;
  rlimitNproc: ResourceLimit | undefined;
  etagBits: number;
  etagAdd: number;
  etagRemove: number;
  enableSendfile: OnOff | undefined;
  enableMmap: OnOff | undefined;
  serverSignature: ServerSignature | undefined;
  allowEncodedSlashes: AllowEncodedSlashes | undefined;
  /** <Files> sections declared here (merged by concatenation). */
  secFile: readonly Section[];
  /** <If> sections declared here (merged by concatenation). */
  secIf: readonly Section[];
  logLevel: LogLevelConfig | undefined;
  outputFilters: readonly string[] | undefined;
  inputFilters: readonly string[] | undefined;
  maxRanges: number | undefined;
  maxOverlaps: number | undefined;
  maxReversals: number | undefined;
  cgiPassAuth: OnOff | undefined;
  /** CGIVar REQUEST_URI current-uri|original-uri (the only variable it knows). */
  cgiVarRequestUri: 'current-uri' | 'original-uri' | undefined;
  /** QualifyRedirectURL: REDIRECT_URL as a full URL. */
  qualifyRedirectUrl: OnOff | undefined;
  contentDigest: OnOff | undefined;
  /** Deprecated DefaultType: only ever 'none' (2.4 ignores other values with a warning). */
  readonly defaultTypeWarned?: boolean;
}

export function createCoreDirConfig(dir: string | undefined): CoreDirConfig {
  return {
    d: dir,
    // Server level defaults to FollowSymLinks (2.4), sections start unset.
    opts: dir === undefined ? OPT_UNSET | OPT_SYM_LINKS : OPT_UNSET,
    optsAdd: OPT_NONE,
    optsRemove: OPT_NONE,
    override: dir === undefined ? 32 /* OR_UNSET */ : 32,
    overrideOpts: OPT_UNSET | OPT_ALL | OPT_SYM_OWNER | OPT_MULTI,
    overrideList: undefined,
    hostnameLookups: undefined,
    useCanonicalName: undefined,
    useCanonicalPhysicalPort: undefined,
    acceptPathInfo: undefined,
    addDefaultCharset: undefined,
    forceType: undefined,
    handler: undefined,
    errorDocuments: undefined,
    limitRequestBody: undefined,
    limitXmlRequestBody: undefined,
    rlimitCpu: undefined,
    rlimitMem: undefined,
    rlimitNproc: undefined,
    etagBits: ETAG_UNSET,
    etagAdd: ETAG_UNSET,
    etagRemove: ETAG_UNSET,
    enableSendfile: undefined,
    enableMmap: undefined,
    serverSignature: undefined,
    allowEncodedSlashes: undefined,
    secFile: [],
    secIf: [],
    logLevel: undefined,
    outputFilters: undefined,
    inputFilters: undefined,
    maxRanges: undefined,
    maxOverlaps: undefined,
    maxReversals: undefined,
    cgiPassAuth: undefined,
    cgiVarRequestUri: undefined,
    qualifyRedirectUrl: undefined,
    contentDigest: undefined,
  };
}

/** httpd's merge_core_dir_configs, field by field; a new object, inputs untouched. */
export function mergeCoreDirConfig(base: Readonly<CoreDirConfig>, add: Readonly<CoreDirConfig>): CoreDirConfig {
  const pick = <T>(a: T | undefined, b: T | undefined): T | undefined => (a !== undefined ? a : b);
  let opts: number, optsAdd: number, optsRemove: number;
  if (add.opts & OPT_UNSET) {
    // Only +/- options here: apply them to what we inherit.
    optsAdd = (base.optsAdd & ~add.optsRemove) | add.optsAdd;
    optsRemove = (base.optsRemove & ~add.optsAdd) | add.optsRemove;
    opts = (base.opts & ~optsRemove) | optsAdd;
    // Includes with exec inherited, IncludesNOEXEC added here: exec goes (CVE-2009-1195).
    const inc = OPT_INCLUDES | OPT_INC_WITH_EXEC;
    if ((base.opts & inc) === inc && (add.opts & inc) === OPT_INCLUDES) opts &= ~OPT_INC_WITH_EXEC;
  } else {
    // Absolute options replace the inherited ones.
    opts = add.opts;
    optsAdd = add.optsAdd;
    optsRemove = add.optsRemove;
  }
  const unsetOverride = (add.override & 32) !== 0;
  let etagBits: number, etagAdd: number, etagRemove: number;
  if (add.etagBits === ETAG_UNSET) {
    etagAdd = (base.etagAdd & ~add.etagRemove) | add.etagAdd;
    etagRemove = (base.etagRemove & ~add.etagAdd) | add.etagRemove;
    etagBits = (base.etagBits & ~etagRemove) | etagAdd;
  } else {
    etagBits = add.etagBits;
    etagAdd = add.etagAdd;
    etagRemove = add.etagRemove;
  }
  // A parent's "None" gives way to anything a child adds ("FileETag None" above,
  // "FileETag +MTime" below: the child's files get an MTime ETag).
  if (etagBits !== ETAG_NONE) etagBits &= ~ETAG_NONE;
  let errorDocuments = base.errorDocuments;
  if (add.errorDocuments) {
    const m = new Map(base.errorDocuments ?? []);
    for (const [k, v] of add.errorDocuments) m.set(k, v);
    errorDocuments = m;
  }
  return {
    d: add.d,
    opts, optsAdd, optsRemove,
    override: unsetOverride ? base.override : add.override,
    overrideOpts: unsetOverride ? base.overrideOpts : add.overrideOpts,
    overrideList: add.overrideList ?? base.overrideList,
    hostnameLookups: pick(add.hostnameLookups, base.hostnameLookups),
    useCanonicalName: pick(add.useCanonicalName, base.useCanonicalName),
    useCanonicalPhysicalPort: pick(add.useCanonicalPhysicalPort, base.useCanonicalPhysicalPort),
    acceptPathInfo: pick(add.acceptPathInfo, base.acceptPathInfo),
    addDefaultCharset: add.addDefaultCharset !== undefined ? add.addDefaultCharset : base.addDefaultCharset,
    forceType: pick(add.forceType, base.forceType),
    handler: pick(add.handler, base.handler),
    errorDocuments,
    limitRequestBody: pick(add.limitRequestBody, base.limitRequestBody),
    limitXmlRequestBody: pick(add.limitXmlRequestBody, base.limitXmlRequestBody),
    rlimitCpu: pick(add.rlimitCpu, base.rlimitCpu),
    rlimitMem: pick(add.rlimitMem, base.rlimitMem),
    rlimitNproc: pick(add.rlimitNproc, base.rlimitNproc),
    etagBits, etagAdd, etagRemove,
    enableSendfile: pick(add.enableSendfile, base.enableSendfile),
    enableMmap: pick(add.enableMmap, base.enableMmap),
    serverSignature: pick(add.serverSignature, base.serverSignature),
    allowEncodedSlashes: pick(add.allowEncodedSlashes, base.allowEncodedSlashes),
    secFile: add.secFile.length ? base.secFile.concat(add.secFile) : base.secFile,
    secIf: add.secIf.length ? base.secIf.concat(add.secIf) : base.secIf,
    logLevel: pick(add.logLevel, base.logLevel),
    outputFilters: pick(add.outputFilters, base.outputFilters),
    inputFilters: pick(add.inputFilters, base.inputFilters),
    maxRanges: pick(add.maxRanges, base.maxRanges),
    maxOverlaps: pick(add.maxOverlaps, base.maxOverlaps),
    maxReversals: pick(add.maxReversals, base.maxReversals),
    cgiPassAuth: pick(add.cgiPassAuth, base.cgiPassAuth),
    cgiVarRequestUri: pick(add.cgiVarRequestUri, base.cgiVarRequestUri),
    qualifyRedirectUrl: pick(add.qualifyRedirectUrl, base.qualifyRedirectUrl),
    contentDigest: pick(add.contentDigest, base.contentDigest),
  } satisfies { [K in keyof Required<Omit<CoreDirConfig, 'defaultTypeWarned'>>]: CoreDirConfig[K] };
}

export type ServerTokens = 'Prod' | 'Major' | 'Minor' | 'Min' | 'OS' | 'Full';
export type TraceEnable = 'on' | 'off' | 'extended';

export interface CoreServerConfig {
  documentRoot: string | undefined;
  /** AccessFileName list (default .htaccess). */
  accessNames: readonly string[] | undefined;
  /** <Directory> sections (main server's first, then the vhost's; sorted after config). */
  secDir: Section[];
  /** <Location> sections in configuration order. */
  secUrl: Section[];
  traceEnable: TraceEnable | undefined;
  /** HttpProtocolOptions. */
  strictProtocol: boolean | undefined;
  allowHttp09: boolean | undefined;
  registeredMethodsOnly: boolean | undefined;
  mergeTrailers: boolean | undefined;
  /** StrictHostCheck: a Host must name the server (or a vhost on its address). */
  strictHostCheck: boolean | undefined;
  /** MergeSlashes (default on). */
  mergeSlashes: boolean | undefined;
  /** Define'd protocols (Protocols directive). */
  protocols: readonly string[] | undefined;
  /** ProtocolsHonorOrder (default on): the server's order of Protocols wins over the client's. */
  protocolsHonorOrder: boolean | undefined;
  /** ErrorLogFormat items (compiled by the log module), undefined = default format. */
  errorLogFormat: string | undefined;
  /** Absolute path of DocumentRoot as given, for the AH00112 warning. */
  gprofDir: string | undefined;
  /** LimitInternalRecursion: internal redirects and subrequest nesting (default 10 each). */
  redirectLimit: number | undefined;
  subreqLimit: number | undefined;
}

export function createCoreServerConfig(): CoreServerConfig {
  return {
    documentRoot: undefined,
    accessNames: undefined,
    secDir: [],
    secUrl: [],
    traceEnable: undefined,
    strictProtocol: undefined,
    allowHttp09: undefined,
    registeredMethodsOnly: undefined,
    mergeTrailers: undefined,
    strictHostCheck: undefined,
    mergeSlashes: undefined,
    protocols: undefined,
    protocolsHonorOrder: undefined,
    errorLogFormat: undefined,
    gprofDir: undefined,
    redirectLimit: undefined,
    subreqLimit: undefined,
  };
}

export function mergeCoreServerConfig(base: Readonly<CoreServerConfig>, add: Readonly<CoreServerConfig>): CoreServerConfig {
  const pick = <T>(a: T | undefined, b: T | undefined): T | undefined => (a !== undefined ? a : b);
  return {
    documentRoot: pick(add.documentRoot, base.documentRoot),
    accessNames: pick(add.accessNames, base.accessNames),
    // A vhost's sections come after the main server's (httpd's merge_core_server_configs).
    secDir: base.secDir.concat(add.secDir),
    secUrl: base.secUrl.concat(add.secUrl),
    traceEnable: pick(add.traceEnable, base.traceEnable),
    redirectLimit: pick(add.redirectLimit, base.redirectLimit),
    subreqLimit: pick(add.subreqLimit, base.subreqLimit),
    strictProtocol: pick(add.strictProtocol, base.strictProtocol),
    allowHttp09: pick(add.allowHttp09, base.allowHttp09),
    registeredMethodsOnly: pick(add.registeredMethodsOnly, base.registeredMethodsOnly),
    mergeTrailers: pick(add.mergeTrailers, base.mergeTrailers),
    strictHostCheck: pick(add.strictHostCheck, base.strictHostCheck),
    mergeSlashes: pick(add.mergeSlashes, base.mergeSlashes),
    protocols: pick(add.protocols, base.protocols),
    protocolsHonorOrder: pick(add.protocolsHonorOrder, base.protocolsHonorOrder),
    errorLogFormat: pick(add.errorLogFormat, base.errorLogFormat),
    gprofDir: pick(add.gprofDir, base.gprofDir),
  } satisfies { [K in keyof Required<CoreServerConfig>]: CoreServerConfig[K] };
}

/** httpd's AP_CORE_MODULE_INDEX: the core module is the first of every catalogue, so its
 *  configuration is slot 0 of every configuration vector. Code below the module layer (the
 *  walks, the HTTP layer) reads it through these two functions rather than through the core
 *  module's handle, which lives above them. The catalogue checks the slot when it registers. */
export const CORE_MODULE_INDEX = 0;

/** The core's merged per-directory configuration of a request (ap_get_core_module_config). */
export function coreDir(r: { perDirConfig: readonly unknown[] }): CoreDirConfig {
  return r.perDirConfig[CORE_MODULE_INDEX] as CoreDirConfig;
}

/** The core's per-server configuration. */
export function coreServer(s: { moduleConfig: readonly unknown[] }): CoreServerConfig {
  return s.moduleConfig[CORE_MODULE_INDEX] as CoreServerConfig;
}

/** httpd's ap_timeout_parameter_parse: a number with an optional ms/s/mi/h unit (default seconds). */
export function parseTimeout(s: string, defaultUnit: 's' | 'ms' = 's'): number | undefined {
  const m = /^(\d+)(ms|s|mi|h)?$/i.exec(s);
  if (!m) return undefined;
  const n = Number(m[1]);
  switch ((m[2] ?? defaultUnit).toLowerCase()) {
    case 'ms': return n;
    case 's': return n * 1000;
    case 'mi': return n * 60000;
    case 'h': return n * 3600000;
  }
  return undefined;
}

/** ap_response_code_string: the ErrorDocument for a status, evaluated for this request ('' for
 *  "default", undefined for none or when the expression fails: AH02841). */
/** ap_is_url: a scheme (letters, digits, '+', '-', '.') of at least one character, then ':'. */
function isUrl(s: string): boolean {
  let x = 0;
  for (; x < s.length && s[x] !== ':'; x++) {
    const c = s.charCodeAt(x);
    const alnum = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (!alnum && c !== 43 && c !== 45 && c !== 46) return false;
  }
  return x < s.length && x > 0;
}

/** ap_custom_response: the error response for `status` of this request becomes `text` (a URL
 *  or a local path is redirected to, as an ErrorDocument would be; anything else is the
 *  body). */
export function setCustomResponse(r: Request, status: number, text: string): void {
  const v = (isUrl(text) || text.startsWith('/')) && !text.startsWith('"') ? text : '"' + text;
  (r.customResponses ??= new Map()).set(status, v);
}

export function errorDocumentFor(r: Request, status: number): string | undefined {
  const own = r.customResponses?.get(status);
  if (own !== undefined) return own;
  const e = coreDir(r)?.errorDocuments?.get(status);
  if (e === undefined) return undefined;
  if (e === null) return '';
  const v = evalString(e, r);
  if (!isFailure(v)) return v;
  r.log('core', APLOG_ERR, `AH02841: core: ErrorDocument: can't evaluate require expression: ${v.error}`);
  return undefined;
}
