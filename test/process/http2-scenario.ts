// The HTTP/2 site both bin/plume (http2.test.ts) and Apache 2.4.71 (http2-record.ts, which
// writes test/fixtures/http2/apache.json) serve: h2c on the plain port (Upgrade and the
// preface), h2 over TLS by ALPN, and requests through a static file, SSI, CGI, DEFLATE,
// a mod_rewrite redirect and a request body. The clients are Node's HTTP/2 client and, for
// the Upgrade (which Node's client does not do), nghttp.

import * as fs from 'node:fs';
import * as http2 from 'node:http2';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { REPO } from './process-lib.js';

export const FIX = path.join(REPO, 'test/fixtures/tls');
export const RECORDED = path.join(REPO, 'test/fixtures/http2/apache.json');

const SSI = 'proto=<!--#echo var="SERVER_PROTOCOL" --> http2=<!--#echo var="HTTP2" --> id=<!--#echo var="H2_STREAM_ID" -->\n';
const CGI = '#!/bin/sh\necho "Content-Type: text/plain"\necho\necho "method=$REQUEST_METHOD proto=$SERVER_PROTOCOL length=$CONTENT_LENGTH http2=$HTTP2"\ncat\n';

/** The site's files under `dir` (htdocs/index.html is the process library's). */
export function writeFiles(dir: string): void {
  fs.writeFileSync(path.join(dir, 'htdocs/page.shtml'), SSI);
  fs.writeFileSync(path.join(dir, 'htdocs/text.html'), '<html><body>' + 'compress me '.repeat(200) + '</body></html>\n');
  fs.mkdirSync(path.join(dir, 'cgi-bin'), { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'cgi-bin/echo.cgi'), CGI, { mode: 0o755 });
  fs.mkdirSync(path.join(dir, 'tls'));
  for (const f of ['server.crt', 'server.key', 'ca.crt']) fs.copyFileSync(path.join(FIX, f), path.join(dir, 'tls', f));
}

/** The configuration after the process library's base directives. */
export function siteConfig(dir: string, tlsPort: number): string[] {
  return [
    'LoadModule http2_module /usr/lib/apache2/modules/mod_http2.so',
    'LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so',
    'LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so',
    'LoadModule cgid_module /usr/lib/apache2/modules/mod_cgid.so',
    'LoadModule include_module /usr/lib/apache2/modules/mod_include.so',
    'LoadModule filter_module /usr/lib/apache2/modules/mod_filter.so',
    'LoadModule deflate_module /usr/lib/apache2/modules/mod_deflate.so',
    'LoadModule rewrite_module /usr/lib/apache2/modules/mod_rewrite.so',
    'LoadModule alias_module /usr/lib/apache2/modules/mod_alias.so',
    `ScriptSock ${dir}/logs/cgid.sock`,
    'LogFormat "%H|%r|%>s" h2',
    `CustomLog ${dir}/logs/h2_log h2`,
    'Protocols h2c http/1.1',
    `ScriptAlias /cgi-bin/ ${dir}/cgi-bin/`,
    `<Directory ${dir}/htdocs>`,
    '  Options +Includes',
    '  AddType text/html .shtml',
    '  AddOutputFilter INCLUDES .shtml',
    '</Directory>',
    '<Location /text.html>',
    '  SetOutputFilter DEFLATE',
    '</Location>',
    'RewriteEngine on',
    'RewriteRule ^/old$ /index.html [R=301]',
    `Listen 127.0.0.1:${tlsPort}`,
    `<VirtualHost 127.0.0.1:${tlsPort}>`,
    '  ServerName localhost',
    '  Protocols h2 http/1.1',
    '  SSLEngine on',
    `  SSLCertificateFile ${dir}/tls/server.crt`,
    `  SSLCertificateKeyFile ${dir}/tls/server.key`,
    `  SSLCACertificateFile ${dir}/tls/ca.crt`,
    '  <Location /secure>',
    '    SSLVerifyClient require',
    '  </Location>',
    '  RewriteEngine on',
    '  RewriteRule ^/old$ /index.html [R=301]',
    `  CustomLog ${dir}/logs/h2_log h2`,
    '</VirtualHost>',
  ];
}

export interface H2Request {
  readonly id: string;
  readonly path: string;
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

/** The requests; each is made over h2c (preface) and h2 (ALPN). */
export const REQUESTS: readonly H2Request[] = [
  { id: 'static', path: '/index.html' },
  { id: 'ssi', path: '/page.shtml' },
  { id: 'deflate', path: '/text.html', headers: { 'accept-encoding': 'gzip' } },
  { id: 'redirect', path: '/old' },
  { id: 'post', path: '/cgi-bin/echo.cgi', method: 'POST', body: 'hello=world', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
  { id: 'head', path: '/index.html', method: 'HEAD' },
  // HEADERS with END_STREAM and a Content-Type: mod_http2 adds "Content-Length: 0" (CGI sees it).
  { id: 'headers-only-typed', path: '/cgi-bin/echo.cgi', method: 'DELETE', headers: { 'content-type': 'text/plain' } },
  { id: 'missing', path: '/nowhere' },
  // LimitRequestFieldSize (8190) and LimitRequestFields (100) on HTTP/2: 431.
  { id: 'big-field', path: '/index.html', headers: { 'x-big': 'a'.repeat(9000) } },
  { id: 'many-fields', path: '/index.html', headers: Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`x-h${i}`, 'v'])) },
];

export interface H2Answer {
  readonly status: number;
  /** Response fields in order, values of those that differ per run or server as "*". */
  readonly fields: readonly (readonly [string, string])[];
  readonly body: Buffer;
  /** The body as latin1 text, the port as "PORT". */
  readonly text: string;
}

const VARYING: ReadonlySet<string> = new Set(['date', 'server', 'etag', 'last-modified']);

function normalise(headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader, port: number): (readonly [string, string])[] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(headers)) {
    if (k.startsWith(':')) continue;
    const value = Array.isArray(v) ? v.join(', ') : String(v);
    out.push([k, VARYING.has(k) ? '*' : value.replaceAll(String(port), 'PORT')]);
  }
  return out;
}

/** One request on a session. */
export function h2Request(session: http2.ClientHttp2Session, req: H2Request, port: number): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const s = session.request({ ':method': req.method ?? 'GET', ':path': req.path, ...(req.headers ?? {}) }, { endStream: req.body === undefined });
    const parts: Buffer[] = [];
    let head: (http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader) | undefined;
    s.on('response', (h) => { head = h; });
    s.on('data', (d: Buffer) => parts.push(d));
    s.on('end', () => {
      if (head === undefined) { reject(new Error(`${req.id}: no response head`)); return; }
      const body = Buffer.concat(parts);
      resolve({ status: Number(head[':status']), fields: normalise(head, port), body, text: body.toString('latin1').replaceAll(String(port), 'PORT') });
    });
    s.on('error', reject);
    s.setTimeout(15000, () => s.close(http2.constants.NGHTTP2_CANCEL));
    if (req.body !== undefined) s.end(req.body);
  });
}

/** A request whose stream the server resets: the reset's code (0: answered). */
export function h2Reset(session: http2.ClientHttp2Session, urlPath: string): Promise<number> {
  return new Promise((resolve) => {
    const s = session.request({ ':path': urlPath });
    s.on('error', () => undefined);
    s.on('close', () => resolve(s.rstCode ?? 0));
    s.resume();
  });
}

export function connectH2c(port: number): Promise<http2.ClientHttp2Session> {
  return connected(http2.connect(`http://127.0.0.1:${port}`));
}

export function connectTls(port: number): Promise<http2.ClientHttp2Session> {
  return connected(http2.connect(`https://127.0.0.1:${port}`, { rejectUnauthorized: false, servername: 'localhost' }));
}

function connected(s: http2.ClientHttp2Session): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** An h2c Upgrade with nghttp: the status and fields of stream 1, or null without nghttp. */
export function upgradeWithNghttp(port: number, urlPath: string): { status: number; fields: [string, string][]; upgraded: boolean } | null {
  const r = spawnSync('nghttp', ['-nuv', `http://127.0.0.1:${port}${urlPath}`], { encoding: 'utf8', timeout: 15000 });
  if (r.error !== undefined) return null;
  const fields: [string, string][] = [];
  let status = 0;
  for (const m of r.stdout.matchAll(/recv \(stream_id=1\) ([^:\s][^:]*|:status): (.*)/g)) {
    if (m[1] === ':status') status = Number(m[2]);
    else fields.push([m[1]!, VARYING.has(m[1]!) ? '*' : m[2]!.replaceAll(String(port), 'PORT')]);
  }
  return { status, fields, upgraded: r.stdout.includes('HTTP Upgrade success') };
}
