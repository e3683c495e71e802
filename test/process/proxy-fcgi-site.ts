// The site behind the FastCGI/SCGI/uwsgi process tests, shared by the test (plume) and the
// recorder (Apache 2.4.71): one httpd.conf, the requests, how an answer is reduced to what is
// compared (status line, the headers that matter, body, error-log lines) and normalised
// (ports, the ServerRoot, client ports, times, the server banner).

import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { FIXTURES } from './app-backends.js';

export interface SitePorts {
  readonly http: number;
  readonly fpm: number;
  readonly scgi: number;
  readonly uwsgi: number;
  readonly echo: number;
  /** A port nothing listens on. */
  readonly dead: number;
}

export interface SiteLayout {
  readonly root: string;
  readonly fpmSock: string;
  readonly echoSock: string;
}

/** Writes htdocs and returns the httpd.conf lines (modules from Debian's paths, which plume
 *  maps to its own). `asRoot`: User/Group nobody as the tests' servers run. */
export function writeSite(l: SiteLayout, p: SitePorts, asRoot: boolean): string[] {
  const htdocs = path.join(l.root, 'htdocs');
  fs.mkdirSync(path.join(htdocs, 'sock'), { recursive: true });
  fs.mkdirSync(path.join(l.root, 'logs'), { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, 'env.php'), path.join(htdocs, 'env.php'));
  fs.copyFileSync(path.join(FIXTURES, 'env.php'), path.join(htdocs, 'sock/env.php'));
  fs.writeFileSync(path.join(htdocs, 'index.html'), 'index\n');
  fs.writeFileSync(path.join(htdocs, 'target.txt'), 'redirected here\n');
  const m = (n: string): string => `LoadModule ${n}_module /usr/lib/apache2/modules/mod_${n}.so`;
  const echo = `fcgi://127.0.0.1:${p.echo}`;
  return [
    `ServerRoot "${l.root}"`,
    `Listen 127.0.0.1:${p.http}`,
    m('mpm_event'),
    '<IfModule !unixd_module>', `  ${m('unixd')}`, '</IfModule>',
    m('authz_core'), m('mime'), m('dir'), m('env'), m('setenvif'),
    m('proxy'), m('proxy_fcgi'), m('proxy_scgi'), m('proxy_uwsgi'),
    ...(asRoot ? ['User nobody', 'Group nogroup'] : []),
    'ServerName localhost',
    `PidFile ${l.root}/logs/httpd.pid`,
    `ErrorLog ${l.root}/logs/error_log`,
    'LogLevel warn',
    'LogFormat "%h %l %u \\"%r\\" %>s %b" plume_case',
    `CustomLog ${l.root}/logs/access_log plume_case`,
    'TypesConfig /etc/mime.types',
    `DocumentRoot "${htdocs}"`,
    // PHP-FPM: by handler over TCP and over a unix socket, and by ProxyPass.
    '<FilesMatch "\\.php$">',
    `  SetHandler "proxy:fcgi://127.0.0.1:${p.fpm}"`,
    '</FilesMatch>',
    `<Directory "${htdocs}/sock">`,
    '  <FilesMatch "\\.php$">',
    `    SetHandler "proxy:unix:${l.fpmSock}|fcgi://localhost"`,
    '  </FilesMatch>',
    '</Directory>',
    `ProxyPass /pp/ fcgi://127.0.0.1:${p.fpm}${htdocs}/`,
    // The echo responder: what exactly is sent.
    `ProxyPass /echo/ ${echo}/some/where/`,
    '<Location /echoh/>', `  SetHandler "proxy:${echo}"`, '</Location>',
    '<Location /echo-unix/>', `  SetHandler "proxy:unix:${l.echoSock}|fcgi://localhost"`, '</Location>',
    '<Location /gen/>', '  ProxyFCGIBackendType GENERIC', '</Location>',
    `ProxyPass /gen/ ${echo}/base/`,
    '<Location /setenv/>',
    '  ProxyFCGISetEnvIf true QUERY_STRING replaced',
    '  ProxyFCGISetEnvIf "%{REQUEST_METHOD} == \'GET\'" FROM_EXPR "m=%{REQUEST_METHOD} %{DOCUMENT_ROOT}"',
    '  ProxyFCGISetEnvIf "reqenv(\'GATEWAY_INTERFACE\') =~ m#CGI/(.)\\.(.)#" CGI_MAJOR "v$1-$2"',
    '  ProxyFCGISetEnvIf false NEVER set',
    '  ProxyFCGISetEnvIf true EMPTY',
    '  ProxyFCGISetEnvIf true !HTTP_X_DROP',
    '</Location>',
    `ProxyPass /setenv/ ${echo}/base/`,
    ...['first-dot', 'last-dot', 'unescape', '1'].flatMap((v) => [
      `<Location /pi-${v}/>`, `  SetEnvIf Request_URI . proxy-fcgi-pathinfo=${v}`, '</Location>',
      `ProxyPass /pi-${v}/ ${echo}/base/`,
    ]),
    `ProxyPass /down/ fcgi://127.0.0.1:${p.dead}/`,
    // SCGI: the 2.4 default (no PATH_INFO), the variable that restores 2.2's, redirects.
    `ProxyPass /scgi/ scgi://127.0.0.1:${p.scgi}/app/`,
    '<Location /scgi-pi/>', '  SetEnvIf Request_URI . proxy-scgi-pathinfo', '</Location>',
    `ProxyPass /scgi-pi/ scgi://127.0.0.1:${p.scgi}/app/`,
    '<Location /scgi-noredir/>', '  ProxySCGIInternalRedirect Off', '</Location>',
    `ProxyPass /scgi-noredir/ scgi://127.0.0.1:${p.scgi}/app/`,
    '<Location /scgi-ownredir/>', '  ProxySCGIInternalRedirect X-Go', '</Location>',
    `ProxyPass /scgi-ownredir/ scgi://127.0.0.1:${p.scgi}/app/`,
    '<Location /scgi-sendfile/>', '  ProxySCGISendfile On', '</Location>',
    `ProxyPass /scgi-sendfile/ scgi://127.0.0.1:${p.scgi}/app/`,
    // uwsgi.
    `ProxyPass /uwsgi/ uwsgi://127.0.0.1:${p.uwsgi}/app/`,
    `ProxyPass /uwsgi-root/ uwsgi://127.0.0.1:${p.uwsgi}/`,
  ];
}

export interface SiteRequest {
  readonly name: string;
  readonly method?: string;
  readonly path: string;
  readonly headers?: readonly (readonly [string, string])[];
  readonly body?: string;
  /** Needs this backend (the test skips the request when it cannot start it). */
  readonly needs: 'php-fpm' | 'python3' | 'uwsgi' | 'none';
}

const reply = (s: string): [string, string] => ['X-Fcgi-Reply', s];
const scgiReply = (s: string): [string, string] => ['X-Scgi-Reply', s];

export const REQUESTS: readonly SiteRequest[] = [
  { name: 'php-handler-tcp', path: '/env.php/extra/path?a=b&c', headers: [['X-Foo', 'bar']], needs: 'php-fpm' },
  { name: 'php-handler-unix', path: '/sock/env.php?x=1', needs: 'php-fpm' },
  { name: 'php-proxypass', path: '/pp/env.php/p%20q?y', needs: 'php-fpm' },
  { name: 'php-proxypass-no-pathinfo', path: '/pp/env.php', needs: 'php-fpm' },
  { name: 'php-post', method: 'POST', path: '/env.php', headers: [['Content-Type', 'application/x-www-form-urlencoded']], body: 'k=v&w=1', needs: 'php-fpm' },
  { name: 'echo-proxypass', path: '/echo/a%20b/c.php/x?q=1', headers: [['X-Foo', 'bar']], needs: 'python3' },
  { name: 'echo-handler-post', method: 'POST', path: '/echoh/x.php/y?q=1', body: 'hello', needs: 'python3' },
  { name: 'echo-unix', path: '/echo-unix/z?1', needs: 'python3' },
  { name: 'echo-generic', path: '/gen/a.php/b?x=1', needs: 'python3' },
  { name: 'echo-setenvif', path: '/setenv/s?orig', headers: [['X-Drop', 'gone']], needs: 'python3' },
  { name: 'pathinfo-first-dot', path: '/pi-first-dot/a.b/c.d/e%20f?x', needs: 'python3' },
  { name: 'pathinfo-last-dot', path: '/pi-last-dot/a.b/c.d/e%20f?x', needs: 'python3' },
  { name: 'pathinfo-unescape', path: '/pi-unescape/a.b/c%20d?x', needs: 'python3' },
  { name: 'pathinfo-1', path: '/pi-1/a.b/c%20d?x', needs: 'python3' },
  { name: 'fcgi-status', path: '/echo/s', headers: [reply('Status: 404 Not Here|Content-Type: text/plain||nf')], needs: 'python3' },
  { name: 'fcgi-location-local', path: '/echo/l', headers: [reply('Location: /target.txt||')], needs: 'python3' },
  { name: 'fcgi-location-absolute', path: '/echo/l', headers: [reply('Location: http://x.example/y||')], needs: 'python3' },
  { name: 'fcgi-content-length-dropped', path: '/echo/c', headers: [reply('Content-Type: text/plain|Content-Length: 99||short')], needs: 'python3' },
  { name: 'fcgi-bad-header', path: '/echo/b', headers: [reply('bogus header line||')], needs: 'python3' },
  { name: 'fcgi-304', path: '/echo/n', headers: [reply('Status: 304||body')], needs: 'python3' },
  { name: 'fcgi-stderr', path: '/echo/e', headers: [['X-Fcgi-Stderr', 'PHP Warning:  oops in x.php on line 3']], needs: 'python3' },
  { name: 'fcgi-down', path: '/down/x', needs: 'none' },
  { name: 'scgi-get', path: '/scgi/a%20b/c?q=1', headers: [['X-Foo', 'bar']], needs: 'python3' },
  { name: 'scgi-post', method: 'POST', path: '/scgi/p', headers: [['Content-Type', 'text/plain']], body: 'hi there', needs: 'python3' },
  { name: 'scgi-pathinfo-env', path: '/scgi-pi/x/y', needs: 'python3' },
  { name: 'scgi-internal-redirect', path: '/scgi/r', headers: [scgiReply('Location: /target.txt||')], needs: 'python3' },
  { name: 'scgi-internal-redirect-off', path: '/scgi-noredir/r', headers: [scgiReply('Location: /target.txt||')], needs: 'python3' },
  { name: 'scgi-internal-redirect-own-header', path: '/scgi-ownredir/r', headers: [scgiReply('X-Go: /target.txt|Content-Type: text/plain||ignored')], needs: 'python3' },
  { name: 'scgi-sendfile', path: '/scgi-sendfile/f', headers: [['X-Scgi-Reply', 'X-Sendfile: @ROOT@/htdocs/target.txt|Content-Type: text/plain||']], needs: 'python3' },
  { name: 'scgi-status', path: '/scgi/s', headers: [scgiReply('Status: 403 Nope|Content-Type: text/plain||no')], needs: 'python3' },
  { name: 'uwsgi-get', path: '/uwsgi/a%20b/c?q=1', headers: [['X-Foo', 'bar'], ['Authorization', 'Basic eDp5']], needs: 'uwsgi' },
  { name: 'uwsgi-root', path: '/uwsgi-root/', needs: 'uwsgi' },
  { name: 'uwsgi-post', method: 'POST', path: '/uwsgi/p', headers: [['Content-Type', 'text/plain']], body: 'data', needs: 'uwsgi' },
];

export interface Answer {
  statusLine: string;
  /** Content-Type, Location and X-Wsgi, in that order, when present. The framing (chunked or
   *  a length) is left out: for a proxied body it depends on whether the backend's last bytes
   *  came with the first ones, for Apache as for plume. */
  headers: [string, string][];
  body: string;
  errorLog: string[];
}

const KEPT = ['content-type', 'location', 'x-wsgi'];

/** One request on its own connection; the raw response parsed leniently. */
export function send(port: number, r: SiteRequest, root: string): Promise<{ statusLine: string; headers: [string, string][]; body: string }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const body = r.body ?? '';
    let head = `${r.method ?? 'GET'} ${r.path} HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n`;
    for (const [k, v] of r.headers ?? []) head += `${k}: ${v.split('@ROOT@').join(root)}\r\n`;
    if (r.body !== undefined) head += `Content-Length: ${Buffer.byteLength(body, 'latin1')}\r\n`;
    sock.setTimeout(20000, () => sock.destroy(new Error(`timeout on ${r.name}`)));
    sock.on('data', (d: Buffer) => chunks.push(d));
    sock.on('error', reject);
    sock.on('close', () => {
      const raw = Buffer.concat(chunks).toString('latin1');
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) { reject(new Error(`${r.name}: no complete response: ${JSON.stringify(raw)}`)); return; }
      const lines = raw.slice(0, end).split('\r\n');
      const headers: [string, string][] = lines.slice(1).map((l) => {
        const c = l.indexOf(':');
        return [l.slice(0, c), l.slice(c + 1).trim()];
      });
      let rest = raw.slice(end + 4);
      if (headers.some(([k, v]) => k.toLowerCase() === 'transfer-encoding' && v === 'chunked')) rest = dechunk(rest);
      resolve({ statusLine: lines[0]!, headers, body: rest });
    });
    sock.end(head + '\r\n' + body, 'latin1');
  });
}

function dechunk(s: string): string {
  let out = '';
  let at = 0;
  for (;;) {
    const nl = s.indexOf('\r\n', at);
    if (nl < 0) return out;
    const n = parseInt(s.slice(at, nl), 16);
    if (!(n > 0)) return out;
    out += s.slice(nl + 2, nl + 2 + n);
    at = nl + 2 + n + 2;
  }
}

/** Replaces what differs between runs and servers. */
export function normalise(s: string, l: SiteLayout, p: SitePorts): string {
  const ports: [number, string][] = [[p.http, '@PORT@'], [p.fpm, '@FPM@'], [p.scgi, '@SCGI@'], [p.uwsgi, '@UWSGI@'], [p.echo, '@ECHO@'], [p.dead, '@DEAD@']];
  let out = s.split(l.fpmSock).join('@FPMSOCK@').split(l.echoSock).join('@ECHOSOCK@').split(l.root).join('@ROOT@');
  for (const [n, tag] of ports) out = out.replace(new RegExp(`(?<![0-9])${n}(?![0-9])`, 'g'), tag);
  return out
    .replace(/^REMOTE_PORT=\d+$/gm, 'REMOTE_PORT=@CLIENTPORT@')
    .replace(/^REQUEST_TIME(_FLOAT)?=[0-9.]+$/gm, 'REQUEST_TIME$1=<time>')
    .replace(/^PATH=.*$/gm, 'PATH=<path>')
    .replace(/^(SERVER_SOFTWARE)=.*$/gm, '$1=<server>')
    .replace(/^\[[^\]]+\] \[([^\]]+)\] \[pid [^\]]+\] /gm, '[$1] ')
    .replace(/\[client 127\.0\.0\.1:\d+\] /g, '[client 127.0.0.1] ');
}

/** Runs a request and reduces it to an Answer, with the error-log lines it added. */
export async function ask(port: number, r: SiteRequest, l: SiteLayout, p: SitePorts, errorLog: string): Promise<Answer> {
  const before = fs.existsSync(errorLog) ? fs.statSync(errorLog).size : 0;
  const res = await send(port, r, l.root);
  // The request's error-log lines may be written just after the response: wait until the
  // log has stopped growing (bounded), not a fixed time.
  const sizeOf = (): number => (fs.existsSync(errorLog) ? fs.statSync(errorLog).size : 0);
  for (let last = sizeOf(), still = 0, n = 0; still < 4 && n < 80; n++) {
    await new Promise((res2) => setTimeout(res2, 25));
    const now = sizeOf();
    still = now === last ? still + 1 : 0;
    last = now;
  }
  const logText = fs.existsSync(errorLog) ? fs.readFileSync(errorLog).subarray(before).toString('latin1') : '';
  const body = normalise(res.body, l, p);
  const headers: [string, string][] = [];
  for (const k of KEPT) {
    for (const [n, v] of res.headers) {
      if (n.toLowerCase() !== k) continue;
      headers.push([k, normalise(v, l, p)]);
    }
  }
  return {
    statusLine: res.statusLine,
    headers,
    body,
    errorLog: logText.split('\n').filter((x) => x !== '').map((x) => normalise(x, l, p)),
  };
}
