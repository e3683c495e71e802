// mod_proxy_ftp (modules/proxy/mod_proxy_ftp.c, httpd 2.4.71): the ftp:// scheme of mod_proxy,
// for ProxyPass and the forward proxy. GET (and HEAD) only; login as anonymous
// ("apache-proxy@"), as the URL's user:password@, or with the request's Basic credentials; a
// refused login is 401 with a WWW-Authenticate realm made of the URL. The path is walked with
// CWD one directory at a time, the data connection is EPSV, else PASV, else active (PORT); a
// file is RETR in binary (";type=a" ASCII) with SIZE and MDTM for Content-Length and
// Last-Modified and mod_mime's Content-Type; a directory, a name the server says is not a
// file, a wildcard (ProxyFtpListOnWildcard) or ";type=d" is listed (LIST in ASCII) and
// turned into httpd's HTML by the PROXY_SEND_DIR filter. FTP errors map to httpd's statuses
// (550 → 404, the rest 502) with mod_proxy's AH00898 line. The FTP text and the page are in
// src/proxy/protocols/ftp.ts.

import * as dns from 'node:dns/promises';
import * as net from 'node:net';
import {
  ACCESS_CONF, DECLINED, MODULE_API_VERSION, OK, RSRC_CONF, defineModule, directive,
} from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { APLOG_DEBUG, APLOG_ERR, APLOG_INFO, APLOG_TRACE1, APLOG_TRACE2, APLOG_TRACE3, APLOG_TRACE4, APLOG_WARNING } from '../../server/log/levels.js';
import { EOS, FTYPE_RESOURCE, dataBucket, transformBrigade, type FilterSpec } from '../../server/filters.js';
import { httpDate } from '../../server/log/time.js';
import { signature } from '../../server/http/response.js';
import { coreDir } from '../../server/core/core-module.js';
import { noMethodsAllow } from '../../server/core/core-hooks.js';
import { proxyApi } from './scheme-call.js';
import { aprBase64Decode } from '../../lib/apr-base64.js';
import type { ProxyApi, ProxyConn, ProxySchemeProvider, ProxyServerConf, ProxyWorker } from '../../proxy/api.js';
import {
  FtpReplyParser, checkFtpString, decodeEnc, escapeGlobbing, hasGlobbing, listLineToHtml, listingFooter, listingHeader,
  parseAprUri, parseEpsvReply, parsePasvReply, replyMessage, unparseSite, type AprUri, type ListingHead,
} from '../../proxy/protocols/ftp.js';

const MOD = 'proxy_ftp';
const FTP_PORT = 21;

// ---- configuration --------------------------------------------------------------------------

/** proxy_ftp_dir_conf; undefined: not set (on by default, ISO-8859-1 for the charset). */
interface FtpDirConf {
  listOnWildcard: boolean | undefined;
  escapeWildcards: boolean | undefined;
  dirCharset: string | undefined;
}

function mergeDirConfig(base: Readonly<FtpDirConf>, add: Readonly<FtpDirConf>): FtpDirConf {
  return {
    listOnWildcard: add.listOnWildcard ?? base.listOnWildcard,
    escapeWildcards: add.escapeWildcards ?? base.escapeWildcards,
    dirCharset: add.dirCharset ?? base.dirCharset,
  };
}

type Cmd = CmdParms<undefined, FtpDirConf>;

// ---- the control connection -------------------------------------------------------------------

/** Lines from the control connection, and commands to it, with proxy_ftp_command's trace. */
class Control {
  private buf = '';
  private ended = false;
  private wake: (() => void) | null = null;
  private readonly parser = new FtpReplyParser();

  constructor(private readonly r: Request, private readonly sock: net.Socket, private readonly timeoutMs: number) {
    sock.on('data', (d: Buffer) => { this.buf += d.toString('latin1'); this.poke(); });
    const end = (): void => { this.ended = true; this.poke(); };
    sock.on('end', end);
    sock.on('close', end);
    sock.on('error', end);
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    if (w !== null) w();
  }

  /** One line with its LF; null at the end of the stream or after the timeout. */
  private async line(): Promise<string | null> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      const nl = this.buf.indexOf('\n');
      if (nl >= 0) {
        const l = this.buf.slice(0, nl + 1);
        this.buf = this.buf.slice(nl + 1);
        return l;
      }
      if (this.ended) return null;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await new Promise<void>((res) => {
        const t = setTimeout(() => { this.wake = null; res(); }, left);
        this.wake = () => { clearTimeout(t); res(); };
      });
    }
  }

  /** proxy_ftp_command: sends `cmd` (when given), reads the reply: its code (-1 when none could
   *  be read) and message. */
  async command(cmd: string | null): Promise<{ code: number; message: string }> {
    const r = this.r;
    if (cmd !== null) {
      if (!this.sock.destroyed) this.sock.write(cmd + '\r\n', 'latin1');
      if (r.wantsLog(MOD, APLOG_TRACE2)) r.log(MOD, APLOG_TRACE2, `>${cmd.startsWith('PASS ') ? 'PASS ****' : cmd}`);
    }
    let code = -1;
    let message = '';
    for (;;) {
      const l = await this.line();
      if (l === null) break;
      const reply = this.parser.push(l);
      if (reply === undefined) continue;
      code = reply.code;
      message = reply.message;
      if (code === -1) r.log(MOD, APLOG_INFO, `AH10229: Malformed FTP response '${this.parser.malformed ?? ''}'`);
      break;
    }
    message = replyMessage(code, message);
    if (r.wantsLog(MOD, APLOG_TRACE2)) r.log(MOD, APLOG_TRACE2, `<${String(code >>> 0).padStart(3, '0')} ${message}`);
    return { code, message };
  }
}

// ---- helpers ----------------------------------------------------------------------------------

/** ap_getword_conf: a quoted word (backslash-quote unescaped) or one up to white space. */
function getwordConf(s: string): string {
  let i = 0;
  while (i < s.length && /\s/.test(s[i]!)) i++;
  const q = s[i];
  if (q === '"' || q === "'") {
    let j = i + 1;
    let out = '';
    while (j < s.length && s[j] !== q) {
      if (s[j] === '\\' && (s[j + 1] === q || s[j + 1] === '\\')) j++;
      out += s[j];
      j++;
    }
    return out;
  }
  let j = i;
  while (j < s.length && !/\s/.test(s[j]!)) j++;
  return s.slice(i, j);
}

/** ap_pbase64decode: APR's decoder, the result a C string (up to a NUL). */
function base64Decode(s: string): string {
  const d = aprBase64Decode(s).toString('latin1');
  const z = d.indexOf('\0');
  return z < 0 ? d : d.slice(0, z);
}

/** The request's own URI as apr_uri_parse saw it (r->parsed_uri): the absolute URI of a forward
 *  proxy request; for another request its path (merged and decoded as r->uri). */
function parsedUri(r: Request): AprUri {
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(r.unparsedUri)) return parseAprUri(r.unparsedUri);
  const u = parseAprUri(r.unparsedUri);
  u.path = r.uri;
  return u;
}

/** MDTM's "YYYYMMDDhhmmss" read as sscanf("%4[0-9]%2[0-9]...") does, as ms since the epoch
 *  (timegm); 0 when the six fields are not there. */
export function parseMdtm(msg: string): number {
  const widths = [4, 2, 2, 2, 2, 2];
  const f: number[] = [];
  let i = 0;
  for (const w of widths) {
    const from = i;
    while (i < msg.length && i - from < w && msg[i]! >= '0' && msg[i]! <= '9') i++;
    if (i === from) return 0;
    f.push(Number(msg.slice(from, i)));
  }
  const [y, mo, d, h, mi, s] = f as [number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

/** %pI of an address and port. */
function sockaddr(ip: string, port: number): string {
  return `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
}

/** A TCP connection to ip:port, or the error; paused until read (what arrives waits). */
function connectData(ip: string, port: number, timeoutMs: number): Promise<net.Socket | Error> {
  return new Promise((resolve) => {
    const s = net.connect({ host: ip, port });
    const t = setTimeout(() => { s.destroy(); resolve(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })); }, timeoutMs);
    s.once('error', (e) => { clearTimeout(t); s.destroy(); resolve(e); });
    s.once('connect', () => {
      clearTimeout(t);
      s.removeAllListeners('error');
      s.on('error', () => { /* seen as the end of the data */ });
      s.setNoDelay(true);
      s.pause();
      resolve(s);
    });
  });
}

/** A listening socket on ip:port (SO_REUSEADDR, as httpd sets it), or the error. */
function listenData(ip: string, port: number): Promise<net.Server | Error> {
  return new Promise((resolve) => {
    const srv = net.createServer({ pauseOnConnect: true });
    srv.once('error', (e) => { srv.close(); resolve(e); });
    srv.listen({ host: ip, port, backlog: 2 }, () => { srv.removeAllListeners('error'); resolve(srv); });
  });
}

// ---- the listing filter -------------------------------------------------------------------------

interface DirState { readonly r: Request; started: boolean; partial: string }

/** The page's heading from the request (proxy_send_dir_filter's HEADER state). */
function listingHead(r: Request): ListingHead {
  const u = parsedUri(r);
  // A reverse proxy's page is the server's own URL (ap_construct_url); a forward one the
  // request's "scheme://user@host" without the password.
  const site = r.proxyreq === 2 ? r.rt.constructUrl(r, '') : unparseSite(u, true);
  return { site, path: u.path ?? '', pwd: r.notes.get('Directory-PWD'), readme: r.notes.get('Directory-README') };
}

/** PROXY_SEND_DIR: the raw LIST output in, httpd's HTML page out. */
const PROXY_SEND_DIR: FilterSpec<DirState> = {
  name: 'PROXY_SEND_DIR',
  type: FTYPE_RESOURCE,
  init: (r) => ({ r, started: false, partial: '' }),
  filter(f, bb) {
    const st = f.state;
    const start = (): string => {
      if (st.started) return '';
      st.started = true;
      return listingHeader(listingHead(st.r));
    };
    return transformBrigade(f, bb, {
      write(data) {
        let out = start();
        st.partial += data.toString('latin1');
        let nl = st.partial.indexOf('\n');
        while (nl >= 0) {
          const line = st.partial.slice(0, nl + 1);
          st.partial = st.partial.slice(nl + 1);
          const html = listLineToHtml(line);
          if (html === null) {
            st.r.log(MOD, APLOG_WARNING, `AH01034: proxy_ftp: could not parse line ${line.replace(/\r?\n$/, '')}`);
          } else out += html;
          nl = st.partial.indexOf('\n');
        }
        return out === '' ? null : Buffer.from(out, 'latin1');
      },
      end() {
        // A last line without its LF is not shown (httpd's filter drops it at EOS).
        st.partial = '';
        return Buffer.from(start() + listingFooter(signature(st.r, '')), 'latin1');
      },
    });
  },
};

// ---- canon --------------------------------------------------------------------------------------

/** proxy_ftp_canon. */
function ftpCanon(r: Request, api: ProxyApi, url: string): number {
  if (url.slice(0, 4).toLowerCase() !== 'ftp:') return DECLINED;
  const rest = url.slice(4);
  if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, `canonicalising URL ${rest}`);
  const n = api.canonNetloc(rest, FTP_PORT);
  if (typeof n === 'string') return 400;
  if (n.user !== undefined && !checkFtpString(n.user)) return 400;
  if (n.password !== undefined && !checkFtpString(n.password)) return 400;
  let p = n.rest.startsWith('/') ? n.rest.slice(1) : n.rest;
  let parms = '';
  const semi = p.indexOf(';');
  let hadParms = false;
  if (semi >= 0) {
    hadParms = true;
    const enc = api.canonenc(p.slice(semi + 1), 'url', false, r.proxyreq);
    if (enc === undefined) return 400;
    parms = enc;
    p = p.slice(0, semi);
  }
  const d = coreDir(r);
  let path = api.canonenc(p, 'path', false, r.proxyreq, d.allowEncodedSlashes === 'nodecode');
  if (path === undefined || !checkFtpString(path)) return 400;
  if (r.proxyreq !== 0 && r.args !== undefined) {
    const q = api.canonenc(r.args, hadParms ? 'url' : 'fpath', true, r.proxyreq);
    if (q === undefined) return 400;
    if (hadParms) parms += '?' + q;
    else path += '?' + q;
    r.args = undefined;
  }
  const sport = n.port !== FTP_PORT ? `:${n.port}` : '';
  const host = n.host.includes(':') ? `[${n.host}]` : n.host;
  const user = n.user !== undefined ? n.user + (n.password !== undefined ? ':' + n.password : '') + '@' : '';
  r.filename = `proxy:ftp://${user}${host}${sport}/${path}${parms !== '' ? ';' + parms : ''}`;
  return OK;
}

// ---- the handler --------------------------------------------------------------------------------

/** ftp_unauthorized: 401 with a realm of the URL without its password (proxyreq cleared). */
function unauthorized(r: Request, pu: AprUri, logIt: boolean): number {
  r.proxyreq = 0;
  if (logIt) r.log(MOD, APLOG_INFO, `AH01035: missing or failed auth to ${unparseSite(pu, false)}`);
  r.errHeadersOut.set('WWW-Authenticate', `Basic realm="${unparseSite(pu, true)}"`);
  return 401;
}

/** proxy_ftp_handler. */
async function ftpHandle(r: Request, api: ProxyApi, worker: ProxyWorker, conf: ProxyServerConf, url: string, proxyname: string | undefined): Promise<number> {
  if (proxyname !== undefined) {
    if (r.wantsLog(MOD, APLOG_TRACE3)) r.log(MOD, APLOG_TRACE3, `declining URL ${url} - proxyhost ${proxyname} specified:`);
    return DECLINED;
  }
  if (url.slice(0, 4).toLowerCase() !== 'ftp:') {
    if (r.wantsLog(MOD, APLOG_TRACE3)) r.log(MOD, APLOG_TRACE3, `declining URL ${url} - not ftp:`);
    return DECLINED;
  }
  if (r.wantsLog(MOD, APLOG_TRACE3)) r.log(MOD, APLOG_TRACE3, `serving URL ${url}`);
  if (r.method !== 'GET' && r.method !== 'HEAD') {
    // No method declared (r->allowed empty): the 501's Allow holds TRACE alone.
    r.headersOut.set('Allow', noMethodsAllow(r));
    return 501;
  }

  const fdconf = self.dir(r);
  const escapeOn = fdconf.escapeWildcards !== false;
  const pu = parsedUri(r);
  let connectName: string;
  let connectPort: number;
  let fullPath: string;
  if (pu.hostname === undefined) {
    const u = parseAprUri(url);
    connectName = u.hostname ?? '';
    connectPort = u.port;
    fullPath = u.path ?? '';
  } else {
    connectName = pu.hostname;
    connectPort = pu.port;
    fullPath = pu.path ?? '';
  }
  if (connectPort === 0) connectPort = FTP_PORT;
  let path = fullPath !== '' ? fullPath.slice(1) : '';
  let typeSuffix: string | undefined;
  const semi = path.indexOf(';');
  if (semi >= 0) { typeSuffix = path.slice(semi + 1); path = path.slice(0, semi); }
  let dirlisting = false;
  let xferType = 'A';
  if (typeSuffix !== undefined && typeSuffix.startsWith('type=') && /^[A-Za-z]/.test(typeSuffix.slice(5))) {
    dirlisting = typeSuffix[5]!.toLowerCase() === 'd';
    if (!dirlisting) xferType = typeSuffix[5]!.toUpperCase();
    if (!'AEI'.includes(xferType)) {
      return api.proxyError(r, 400, `ftp proxy supports only types 'a', 'i', or 'e': "${typeSuffix}" is invalid.`);
    }
  } else xferType = 'I';

  // Credentials: the Authorization header first, then the URL's, else anonymous.
  let user: string;
  let password: string | undefined;
  const auth = r.headersIn.get('Authorization');
  const sp = auth === undefined ? -1 : auth.indexOf(' ');
  const decoded = auth !== undefined && auth.slice(0, sp < 0 ? auth.length : sp).toLowerCase() === 'basic'
    ? base64Decode(sp < 0 ? '' : auth.slice(sp + 1).replace(/^ +/, '')) : undefined;
  if (decoded !== undefined && decoded[0] !== ':') {
    if (!checkFtpString(decoded)) return api.proxyError(r, 400, 'user credentials contained invalid character');
    const c = decoded.indexOf(':');
    user = c < 0 ? decoded : decoded.slice(0, c);
    password = c < 0 ? '' : decoded.slice(c + 1);
    r.apAuthType = 'Basic';
    r.user = user;
    pu.user = user;
  } else if (pu.user !== undefined) {
    user = decodeEnc(pu.user);
    password = pu.password !== undefined ? decodeEnc(pu.password) : undefined;
  } else {
    user = 'anonymous';
    password = 'apache-proxy@';
  }
  if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH01036: connecting ${url} to ${connectName}:${connectPort}`);

  let acq = api.acquireConnection('FTP', worker, r.server);
  if (acq instanceof Promise) acq = await acq;
  if (typeof acq === 'number') return acq;
  const backend: ProxyConn = acq;
  let data: net.Socket | null = null;
  let listener: net.Server | null = null;
  const cleanup = (): void => {
    if (data !== null) { data.destroy(); data = null; }
    if (listener !== null) { listener.close(); listener = null; }
    backend.close = true;
    api.releaseConnection('FTP', backend, r.server);
  };
  const fail = (status: number, message: string): number => {
    cleanup();
    return api.proxyError(r, status, message);
  };
  try {
    // ap_proxy_determine_address: the name must resolve before anything else.
    if (net.isIP(connectName) === 0) {
      try {
        await dns.lookup(connectName);
      } catch {
        return fail(502, 'Error resolving backend address');
      }
    }
    let st = api.determineConnection(r, conf, worker, backend, url, undefined, 0);
    if (st instanceof Promise) st = await st;
    if (st !== OK) { cleanup(); return st; }
    let cs = api.connectBackend('FTP', backend, worker, r);
    if (cs instanceof Promise) cs = await cs;
    if (cs !== OK || backend.socket === null) { cleanup(); return 503; }
    const sock = backend.socket;
    if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, 'control connection complete');
    const timeoutMs = api.backendTimeout(worker, r);
    const ctl = new Control(r, sock, timeoutMs);
    const READ_ERR = 'Error reading from remote server';
    const lost = (code: number): boolean => code === -1 || code === 421;

    // III: the greeting and the login.
    let rep = await ctl.command(null);
    if (lost(rep.code)) return fail(502, READ_ERR);
    if (rep.code === 120) {
      // DIFFERENCE: httpd's scan for the minutes never moves past the first character: a text
      // that starts with a number gives Retry-After, any other text loops for ever. plume
      // answers such a text without Retry-After.
      const m = /^\d+/.exec(rep.message);
      if (m !== null) r.headersOut.add('Retry-After', String(60 * Number(m[0])));
      return fail(503, rep.message);
    }
    if (rep.code !== 220) return fail(502, rep.message);
    rep = await ctl.command(`USER ${user}`);
    if (lost(rep.code)) return fail(502, READ_ERR);
    if (rep.code === 530) { cleanup(); return unauthorized(r, pu, true); }
    if (rep.code !== 230 && rep.code !== 331) return fail(502, rep.message);
    if (rep.code === 331) {
      if (password === undefined) { cleanup(); return unauthorized(r, pu, false); }
      rep = await ctl.command(`PASS ${password}`);
      if (lost(rep.code)) return fail(502, READ_ERR);
      if (rep.code === 332) return fail(401, `Need account for login: ${rep.message}`);
      if (rep.code === 530) { cleanup(); return unauthorized(r, pu, true); }
      if (rep.code !== 230 && rep.code !== 202) return fail(502, rep.message);
    }
    r.notes.set('Directory-README', rep.message);

    // The "%2f" hack: CWD / first, out of the login directory.
    if (path.slice(0, 3).toLowerCase() === '%2f') {
      path = path.slice(3).replace(/^\/+/, '');
      rep = await ctl.command('CWD /');
      if (lost(rep.code)) return fail(502, READ_ERR);
    }
    // Each directory of the path in turn.
    for (let slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/')) {
      const comp = decodeEnc(path.slice(0, slash));
      if (comp.includes('/')) return fail(400, 'Use of /%2f is only allowed at the base directory');
      rep = await ctl.command(`CWD ${escapeGlobbing(comp, escapeOn)}`);
      if (lost(rep.code)) return fail(502, READ_ERR);
      if (rep.code === 550) return fail(404, rep.message);
      if (rep.code !== 250) return fail(502, rep.message);
      path = path.slice(slash + 1);
    }

    // IV: the data connection: EPSV, else PASV, else PORT.
    let connected = false;
    let usePort = false;
    rep = await ctl.command('EPSV');
    if (lost(rep.code)) return fail(502, READ_ERR);
    if (rep.code !== 229 && rep.code !== 500 && rep.code !== 501 && rep.code !== 502) return fail(502, rep.message);
    if (rep.code === 229) {
      const port = parseEpsvReply(rep.message);
      if (port !== 0) {
        const ip = sock.remoteAddress ?? connectName;
        if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, `EPSV contacting remote host on port ${port}`);
        const s = await connectData(ip, port, timeoutMs);
        if (s instanceof Error) {
          r.log(MOD, APLOG_ERR, `AH01043: EPSV attempt to connect to ${sockaddr(ip, port)} failed - Firewall/NAT?`, r.rt.errno(s));
          return fail(502, `EPSV attempt to connect to ${sockaddr(ip, port)} failed - firewall/NAT?`);
        }
        if (r.wantsLog(MOD, APLOG_TRACE1)) r.log(MOD, APLOG_TRACE1, `connected data socket to ${sockaddr(ip, port)}`);
        data = s;
        connected = true;
      }
    }
    if (!connected) {
      rep = await ctl.command('PASV');
      if (lost(rep.code)) return fail(502, READ_ERR);
      if (rep.code !== 227 && rep.code !== 502) return fail(502, rep.message);
      if (rep.code === 227) {
        const a = parsePasvReply(rep.message);
        if (a !== undefined) {
          if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, `AH01044: PASV contacting host ${a.host}:${a.port}`);
          if (net.isIPv4(a.host) === false) return fail(502, `DNS lookup failure for: ${connectName}`);
          const s = await connectData(a.host, a.port, timeoutMs);
          if (s instanceof Error) {
            r.log(MOD, APLOG_ERR, `AH01048: PASV attempt to connect to ${sockaddr(a.host, a.port)} failed - Firewall/NAT?`, r.rt.errno(s));
            return fail(502, `PASV attempt to connect to ${sockaddr(a.host, a.port)} failed - firewall/NAT?`);
          }
          data = s;
          connected = true;
        }
      }
    }
    if (!connected) {
      // Active: listen on the control connection's own address and port, as httpd does.
      const localIp = sock.localAddress ?? '';
      const localPort = sock.localPort ?? 0;
      const l = await listenData(localIp, localPort);
      if (l instanceof Error) {
        r.log(MOD, APLOG_ERR, `AH01051: error binding to ftp data socket ${sockaddr(localIp, localPort)}`, r.rt.errno(l));
        cleanup();
        return 500;
      }
      listener = l;
      const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(localIp);
      if (m === null) return fail(501, 'Connect to IPV6 ftp server using EPRT not supported. Enable EPSV.');
      rep = await ctl.command(`PORT ${m[1]},${m[2]},${m[3]},${m[4]},${localPort >> 8},${localPort & 0xff}`);
      if (lost(rep.code)) return fail(502, READ_ERR);
      if (rep.code !== 200) return fail(502, rep.message);
      usePort = true;
    }

    // V: what to transfer, and the headers.
    path = decodeEnc(path);
    if (path.includes('/')) return fail(400, 'Use of /%2f is only allowed at the base directory');
    let size: string | undefined;
    let mtime = 0;
    const setType = async (t: string, keep: boolean): Promise<void> => {
      const tr = await ctl.command(`TYPE ${t}`);
      if (keep) rep = tr;
      if (lost(tr.code)) api.proxyError(r, 502, READ_ERR);
      else if (tr.code !== 200 && tr.code !== 504) api.proxyError(r, 502, 'Unable to set transfer type');
    };
    if (path === '' || (hasGlobbing(path) && fdconf.listOnWildcard !== false)) {
      dirlisting = true;
    } else {
      await setType(xferType, true);
      rep = await ctl.command(`SIZE ${escapeGlobbing(path, escapeOn)}`);
      if (lost(rep.code)) return fail(502, READ_ERR);
      if (rep.code === 213) {
        const digits = /^\d*/.exec(rep.message)![0];
        if (digits !== '') size = digits;
      } else if (rep.code === 550) {
        if (r.wantsLog(MOD, APLOG_TRACE4)) r.log(MOD, APLOG_TRACE4, 'SIZE shows this is a directory');
        dirlisting = true;
        rep = await ctl.command(`CWD ${escapeGlobbing(path, escapeOn)}`);
        if (lost(rep.code)) return fail(502, READ_ERR);
        if (rep.code === 550) return fail(404, rep.message);
        if (rep.code !== 250) return fail(502, rep.message);
        path = '';
      }
    }
    const getPwd = async (): Promise<string | undefined> => {
      const pr = await ctl.command('PWD');
      if (pr.code === -1 || pr.code === 421 || pr.code === 550) {
        api.proxyError(r, 502, 'Failed to read PWD on ftp server');
        return undefined;
      }
      return pr.code === 257 ? getwordConf(pr.message) : undefined;
    };
    let cwd = await getPwd();
    if (cwd !== undefined) r.notes.set('Directory-PWD', cwd);
    let cmd: string;
    if (dirlisting) {
      await setType('A', false);
      // A wildcard goes as it is (not escaped): "ftp://host/src/*.c".
      cmd = path !== '' ? `LIST ${path}` : cwd === undefined || cwd.includes('/') ? 'LIST -lag' : 'LIST';
    } else {
      await setType(xferType, true);
      rep = await ctl.command(`MDTM ${escapeGlobbing(path, escapeOn)}`);
      if (rep.code === 213) mtime = parseMdtm(rep.message);
      cmd = `RETR ${escapeGlobbing(path, escapeOn)}`;
    }
    rep = await ctl.command(cmd);
    if (lost(rep.code)) return fail(502, READ_ERR);
    if (rep.code === 550) {
      if (r.wantsLog(MOD, APLOG_TRACE4)) r.log(MOD, APLOG_TRACE4, 'RETR failed, trying LIST instead');
      dirlisting = true;
      await setType('A', false);
      rep = await ctl.command(`CWD ${escapeGlobbing(path, escapeOn)}`);
      if (lost(rep.code)) return fail(502, READ_ERR);
      if (rep.code === 550) return fail(404, rep.message);
      if (rep.code !== 250) return fail(502, rep.message);
      cwd = await getPwd();
      if (cwd !== undefined) r.notes.set('Directory-PWD', cwd);
      rep = await ctl.command(cwd === undefined || cwd.includes('/') ? 'LIST -lag' : 'LIST');
      if (lost(rep.code)) return fail(502, READ_ERR);
    }
    if (rep.code !== 125 && rep.code !== 150 && rep.code !== 226 && rep.code !== 250) return fail(502, rep.message);

    r.status = 200;
    r.statusLine = undefined;
    if (dirlisting) {
      r.contentType = `text/html;charset=${fdconf.dirCharset ?? 'ISO-8859-1'}`;
    } else if (xferType !== 'A' && size !== undefined) {
      r.headersOut.set('Content-Length', size);
      if (r.wantsLog(MOD, APLOG_TRACE3)) r.log(MOD, APLOG_TRACE3, `Content-Length set to ${size}`);
    }
    if (mtime !== 0) r.headersOut.set('Last-Modified', httpDate(mtime));
    if (dirlisting) r.contentEncoding = undefined;
    else if (r.contentEncoding !== undefined && r.contentEncoding !== '') r.headersOut.set('Content-Encoding', r.contentEncoding);

    if (usePort && listener !== null) {
      const srv: net.Server = listener;
      const s = await new Promise<net.Socket | Error>((resolve) => {
        const t = setTimeout(() => resolve(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })), timeoutMs);
        srv.once('connection', (c: net.Socket) => { clearTimeout(t); c.on('error', () => { /* the end of the data */ }); resolve(c); });
        srv.once('error', (e) => { clearTimeout(t); resolve(e); });
      });
      srv.close();
      listener = null;
      if (s instanceof Error) {
        r.log(MOD, APLOG_ERR, 'AH01053: failed to accept data connection', r.rt.errno(s));
        cleanup();
        return 502;
      }
      data = s;
    }

    // VI: the body.
    if (dirlisting) r.rt.addFilter(r, PROXY_SEND_DIR);
    const ds = data!;
    // DIFFERENCE: a HEAD request gets the GET's headers and no body; httpd 2.4.71 sends a Date
    // from a stack buffer that is gone by then and answers 500 (AH02430).
    if (!r.headerOnly) {
      if (r.wantsLog(MOD, APLOG_TRACE3)) r.log(MOD, APLOG_TRACE3, 'start body send');
      ds.setTimeout(timeoutMs, () => ds.destroy());
      try {
        for await (const chunk of ds) {
          if (r.connection.aborted) break;
          await r.write([dataBucket(chunk as Buffer)]);
        }
      } catch {
        /* a broken data connection ends the body */
      }
      if (r.wantsLog(MOD, APLOG_TRACE3)) r.log(MOD, APLOG_TRACE3, 'end body send');
    }
    ds.destroy();
    data = null;
    if (r.wantsLog(MOD, APLOG_DEBUG)) r.log(MOD, APLOG_DEBUG, 'AH01058: data connection closed');
    await r.write([EOS]);

    // The end of the transfer, then QUIT.
    await ctl.command(null);
    await ctl.command('QUIT');
    cleanup();
    return OK;
  } catch (e) {
    cleanup();
    throw e;
  }
}

/** proxy_hook_canon_handler and proxy_hook_scheme_handler. */
const scheme: ProxySchemeProvider = {
  schemes: ['ftp'],
  canon(r, url) {
    const api = proxyApi(r);
    return api === undefined ? DECLINED : ftpCanon(r, api, url);
  },
  handle(r, worker, conf, url, proxyname) {
    const api = proxyApi(r);
    if (api === undefined) return Promise.resolve(DECLINED);
    return ftpHandle(r, api, worker, conf, url, proxyname);
  },
};

const self = defineModule<undefined, FtpDirConf>({
  name: 'proxy_ftp_module',
  source: 'mod_proxy_ftp.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ listOnWildcard: undefined, escapeWildcards: undefined, dirCharset: undefined }),
  mergeDirConfig,
  directives: [
    directive<undefined, FtpDirConf, 'FLAG'>({
      name: 'ProxyFtpListOnWildcard', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF,
      help: 'Whether wildcard characters in a path cause mod_proxy_ftp to list the files instead of trying to get them. Defaults to on.',
      handler: (cmd: Cmd, on: boolean) => { cmd.dir.listOnWildcard = on; },
    }),
    directive<undefined, FtpDirConf, 'FLAG'>({
      name: 'ProxyFtpEscapeWildcards', args: 'FLAG', where: RSRC_CONF | ACCESS_CONF,
      help: 'Whether the proxy should escape wildcards in paths before sending them to the FTP server.  Defaults to on, but most FTP servers will need it turned off if you need to manage paths that contain wildcard characters.',
      handler: (cmd: Cmd, on: boolean) => { cmd.dir.escapeWildcards = on; },
    }),
    directive<undefined, FtpDirConf, 'TAKE1'>({
      name: 'ProxyFtpDirCharset', args: 'TAKE1', where: RSRC_CONF | ACCESS_CONF,
      help: 'Define the character set for proxied FTP listings',
      handler: (cmd: Cmd, arg: string) => { cmd.dir.dirCharset = arg; },
    }),
  ],
  filters: [PROXY_SEND_DIR as FilterSpec],
  providers: [{ group: 'proxy_scheme', name: 'ftp', version: '0', provider: scheme }],
});

export default self;
