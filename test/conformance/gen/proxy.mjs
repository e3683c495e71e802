#!/usr/bin/env node
// Generates the mod_proxy / mod_proxy_http conformance cases (test/conformance/cases/proxy/):
// ProxyPass and ProxyPassMatch in their forms, worker parameters, ProxyPassReverse and the
// cookie rewriting, ProxyPreserveHost, ProxyAddHeaders, ProxyVia, ProxyErrorOverride,
// ProxyBadHeader, the forward proxy with <Proxy> access control, ProxyRemote/NoProxy,
// ProxySet, ProxyPassInherit, ProxyPassInterpolateEnv, the environment variables, request
// bodies, 100-continue, backend failures and configuration errors.
//
//   node test/conformance/gen/proxy.mjs          # rewrite the case files
//   node dist/test/conformance/record.js proxy/  # record them from Apache
//
// Most cases run the scripted backend (test/fixtures/proxy-http/http_backend.mjs, "backend":
// "http") on @PORT2@: /echo shows the request exactly as the proxy sent it.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, '..', 'cases', 'proxy');
const MODS = '/usr/lib/apache2/modules';
const load = (...names) => names.map((n) => `LoadModule ${n}_module ${MODS}/mod_${n}.so`);
const PROXY = load('proxy', 'proxy_http');
const B = 'http://127.0.0.1:@PORT2@';
const get = (p, headers) => (headers ? { method: 'GET', path: p, headers } : { method: 'GET', path: p });
const post = (p, body, headers) => ({ method: 'POST', path: p, body, ...(headers ? { headers } : {}) });
/** Via: and Server-version strings name the server: one token on both sides. */
const VIA_NORMALIZE = [['\\((?:Apache|plume)/[^()]*(?:\\([^()]*\\))?\\)', '(<version>)']];

const cases = {};
/** A case with the scripted backend; `conf` comes after mod_proxy and mod_proxy_http. */
const c = (name, title, conf, requests, extra = {}) => {
  cases[name] = { title, conf: [...PROXY, ...conf], backend: 'http', ...extra, requests };
};
/** A configuration that httpd refuses (no backend, no requests). */
const bad = (name, title, conf, mods = PROXY) => {
  cases[name] = { title, conf: [...mods, ...conf], requests: [] };
};

// ---- ProxyPass / ProxyPassMatch forms ----------------------------------------------------------

c('pass-basic', 'ProxyPass maps a path prefix to the backend; the request goes out with the rewritten path, the query, X-Forwarded-* and the backend\'s Host',
  [`ProxyPass /app/ ${B}/echo/`], [get('/app/a/b.txt?x=1&y=2'), get('/app'), get('/other')]);
c('pass-prefix-no-slash', 'ProxyPass /app without a trailing slash matches /app/x and /app itself but not /apple',
  [`ProxyPass /app ${B}/echo`], [get('/app/x'), get('/app'), get('/apple')],
  { files: { 'htdocs/apple': 'local apple\n' } });
c('pass-slashes-collapse', 'ProxyPass matching ignores repeated slashes in the request path (alias_match)',
  [`ProxyPass /app/sub ${B}/echo/sub`], [get('//app//sub/x'), get('/app/sub//y')]);
c('pass-exclusion', 'ProxyPass /path ! before a broader ProxyPass keeps that path local',
  ['ProxyPass /app/static !', `ProxyPass /app ${B}/echo`],
  [get('/app/static/a.txt'), get('/app/static/missing'), get('/app/dyn')],
  { files: { 'htdocs/app/static/a.txt': 'static file\n' } });
c('pass-exclusion-after', 'an exclusion after the broader ProxyPass comes too late: the first match wins',
  [`ProxyPass /app ${B}/echo`, 'ProxyPass /app/static !'], [get('/app/static/a.txt')],
  { files: { 'htdocs/app/static/a.txt': 'static file\n' } });
c('pass-ordering', 'the first ProxyPass in configuration order wins, not the longest',
  [`ProxyPass /app ${B}/echo/first`, `ProxyPass /app/sub ${B}/echo/second`], [get('/app/sub/x')]);
c('pass-location', 'ProxyPass inside <Location> takes the location as its path',
  ['<Location /loc>', `  ProxyPass ${B}/echo/loc`, '</Location>'], [get('/loc/a?q'), get('/loc'), get('/locx')]);
c('pass-location-exclusion', 'ProxyPass ! inside a nested <Location> excludes that location',
  ['<Location /loc>', `  ProxyPass ${B}/echo/loc`, '</Location>', '<Location /loc/local>', '  ProxyPass !', '</Location>'],
  [get('/loc/local/f.txt'), get('/loc/remote')], { files: { 'htdocs/loc/local/f.txt': 'local\n' } });
c('pass-location-and-server', 'a server-level ProxyPass and a <Location> ProxyPass for the same path: the <Location> one is tried first',
  [`ProxyPass /both ${B}/echo/server`, '<Location /both>', `  ProxyPass ${B}/echo/location`, '</Location>'], [get('/both/x')]);
c('passmatch-basic', 'ProxyPassMatch substitutes the regex captures into the backend URL',
  [`ProxyPassMatch "^/m/(.*)\\.php$" "${B}/echo/php/$1"`], [get('/m/a/b.php?x=1'), get('/m/other.html')]);
c('passmatch-exclusion', 'ProxyPassMatch with ! keeps the matching paths local',
  ['ProxyPassMatch "^/m/skip" !', `ProxyPassMatch "^/m/(.*)$" "${B}/echo/$1"`], [get('/m/skip/x'), get('/m/go')]);
c('passmatch-no-capture', 'ProxyPassMatch with a backend URL without $n: the matched path is not appended',
  [`ProxyPassMatch "^/nc/" "${B}/echo/fixed"`], [get('/nc/a/b?q=1')]);
c('pass-tilde', 'ProxyPass ~ regex is ProxyPassMatch',
  [`ProxyPass ~ "^/t/(.+)$" "${B}/echo/t/$1"`], [get('/t/abc')]);
c('pass-locationmatch', 'ProxyPass inside <LocationMatch> uses the regex; the whole path goes to the backend URL',
  ['<LocationMatch "^/lm/">', `  ProxyPass ${B}/echo/lm`, '</LocationMatch>'], [get('/lm/x/y')]);
c('pass-vhost', 'ProxyPass in name-based virtual hosts: each vhost its own mapping',
  ['<VirtualHost 127.0.0.1:@PORT@>', '  ServerName a.example', `  ProxyPass /app ${B}/echo/a`, '</VirtualHost>',
    '<VirtualHost 127.0.0.1:@PORT@>', '  ServerName b.example', `  ProxyPass /app ${B}/echo/b`, '</VirtualHost>'],
  [get('/app/x', [['Host', 'a.example']]), get('/app/x', [['Host', 'b.example']])]);
c('pass-vhost-and-main', 'a main-server ProxyPass and a vhost ProxyPass for the same path: which one the vhost uses',
  [`ProxyPass /app ${B}/echo/main`, '<VirtualHost 127.0.0.1:@PORT@>', '  ServerName v.example', `  ProxyPass /app ${B}/echo/vhost`, '</VirtualHost>'],
  [get('/app/x', [['Host', 'v.example']])]);
c('ppinherit-off', 'ProxyPassInherit Off in a vhost: the main server\'s ProxyPass and its own',
  [`ProxyPass /main ${B}/echo/main`, '<VirtualHost 127.0.0.1:@PORT@>', '  ServerName v.example', '  ProxyPassInherit Off',
    `  ProxyPass /own ${B}/echo/own`, '</VirtualHost>'],
  [get('/main/x', [['Host', 'v.example']]), get('/own/x', [['Host', 'v.example']])]);
c('pass-noquery', 'ProxyPass noquery: the query string is not sent to the backend',
  [`ProxyPass /app ${B}/echo noquery`], [get('/app/x?secret=1')]);
c('pass-canon', 'the path sent to the backend is re-escaped (ap_proxy_canonenc) from the decoded URI',
  [`ProxyPass /app ${B}/echo`], [get('/app/a%20b/c%7e/%41?q=%20x'), get('/app/x;p=1')]);
c('pass-nocanon', 'ProxyPass nocanon: the raw request path goes to the backend unchanged',
  [`ProxyPass /app ${B}/echo nocanon`], [get('/app/a%20b/c%7e/%41?q=%20x')]);
c('pass-encoded-slash', 'an encoded slash in the path is refused (404) unless AllowEncodedSlashes',
  [`ProxyPass /app ${B}/echo`, '<VirtualHost 127.0.0.1:@PORT@>', '  ServerName nd.example', '  AllowEncodedSlashes NoDecode', `  ProxyPass /app ${B}/echo`, '</VirtualHost>'],
  [get('/app/a%2fb'), get('/app/a%2fb', [['Host', 'nd.example']])]);
c('pass-head', 'HEAD through the proxy: the backend gets HEAD, the client headers without a body',
  [`ProxyPass /app ${B}/echo`], [{ method: 'HEAD', path: '/app/x' }]);
c('pass-options-star', 'a request for a URL that maps to the proxy with an unusual method goes through',
  [`ProxyPass /app ${B}/echo`], [{ method: 'PROPFIND', path: '/app/x' }, { method: 'DELETE', path: '/app/y' }]);

// ---- worker parameters ----------------------------------------------------------------------

c('worker-params', 'a worker with many parameters works; disablereuse=On makes the backend connection close',
  [`ProxyPass /app ${B}/echo retry=0 timeout=5 connectiontimeout=2 keepalive=On disablereuse=On ttl=10 max=5 smax=2 flushpackets=on flushwait=20 iobuffersize=16384 receivebuffersize=0`],
  [get('/app/x')]);
c('worker-enablereuse-off', 'enablereuse=Off is disablereuse=On',
  [`ProxyPass /app ${B}/echo enablereuse=Off`], [get('/app/x')]);
c('worker-shared', 'two ProxyPass lines to the same backend share one worker; parameters of the second are applied to it',
  [`ProxyPass /one ${B}/echo/one`, `ProxyPass /two ${B}/echo/one disablereuse=On`], [get('/one/x'), get('/two/y')]);
bad('worker-bad-timeout', 'timeout=abc is refused', [`ProxyPass /app ${B}/echo timeout=abc`]);
bad('worker-bad-retry', 'retry=-1 is refused', [`ProxyPass /app ${B}/echo retry=-1`]);
bad('worker-unknown-param', 'an unknown ProxyPass parameter', [`ProxyPass /app ${B}/echo colour=blue`]);
bad('worker-param-no-value', 'a ProxyPass word after the URL without =', [`ProxyPass /app ${B}/echo keepalive`]);
bad('worker-bad-status', 'status= with an unknown flag', [`ProxyPass /app ${B}/echo status=+Q`]);
bad('worker-bad-loadfactor', 'loadfactor out of range on a ProxyPass worker', [`ProxyPass /app ${B}/echo loadfactor=101`]);
bad('worker-bad-flushpackets', 'flushpackets with a bad value', [`ProxyPass /app ${B}/echo flushpackets=sometimes`]);
bad('worker-bad-iobuffersize', 'iobuffersize below 512', [`ProxyPass /app ${B}/echo iobuffersize=100`]);
bad('worker-bad-max', 'max=-1', [`ProxyPass /app ${B}/echo max=-1`]);
bad('worker-bad-ttl', 'ttl=0', [`ProxyPass /app ${B}/echo ttl=0`]);

// ---- ProxyPassReverse and cookies -------------------------------------------------------------

/** Query values keep ':' and '/' literal so that the ports in them are normalised in logs. */
const q = (v) => encodeURIComponent(v).replace(/%3A/g, ':').replace(/%2F/g, '/');
const loc = (target) => `/app/resp?status=302&h=Location:%20${q(target)}`;
c('reverse-location', 'ProxyPassReverse rewrites Location, Content-Location and URI that point into the backend',
  [`ProxyPass /app ${B}`, `ProxyPassReverse /app ${B}`],
  [get(loc('http://127.0.0.1:@PORT2@/echo/x?y=1')),
    get('/app/resp?status=200&h=Content-Location:%20http://127.0.0.1:@PORT2@/doc.en&h=URI:%20http://127.0.0.1:@PORT2@/doc')]);
c('reverse-other-host', 'a Location to another server is left alone',
  [`ProxyPass /app ${B}`, `ProxyPassReverse /app ${B}`], [get(loc('http://elsewhere.example/x'))]);
c('reverse-relative', 'a relative Location from the backend is left as it is',
  [`ProxyPass /app ${B}`, `ProxyPassReverse /app ${B}`], [get(loc('/echo/rel')), get(loc('echo/rel2'))]);
c('reverse-location-form', 'ProxyPassReverse inside <Location> takes the location as the front path',
  ['<Location /app>', `  ProxyPass ${B}`, `  ProxyPassReverse ${B}`, '</Location>'], [get(loc('http://127.0.0.1:@PORT2@/x'))]);
c('reverse-absent', 'without ProxyPassReverse the backend Location goes out unchanged',
  [`ProxyPass /app ${B}`], [get(loc('http://127.0.0.1:@PORT2@/x'))]);
c('reverse-vhost-port', 'the rewritten Location names the front server (ServerName and port as UseCanonicalName Off sees them)',
  [`ProxyPass /app ${B}`, `ProxyPassReverse /app ${B}`], [get(loc('http://127.0.0.1:@PORT2@/x'), [['Host', 'front.example:8080']])]);
c('reverse-refresh-not-rewritten', 'headers other than Location, Content-Location, URI and Destination are not rewritten',
  [`ProxyPass /app ${B}`, `ProxyPassReverse /app ${B}`],
  [get('/app/resp?status=200&h=Refresh:%200%3Burl%3Dhttp://127.0.0.1:@PORT2@/x&h=Link:%20%3Chttp://127.0.0.1:@PORT2@/s.css%3E')]);
const cookie = (...vals) => '/app/resp?status=200' + vals.map((v) => '&h=' + q('Set-Cookie: ' + v)).join('');
c('cookie-domain-path', 'ProxyPassReverseCookieDomain and ProxyPassReverseCookiePath rewrite Set-Cookie domain and path',
  [`ProxyPass /app ${B}`, 'ProxyPassReverseCookieDomain backend.example front.example', 'ProxyPassReverseCookiePath /echo /app'],
  [get(cookie('a=1; Domain=backend.example; Path=/echo/sub', 'b=2; path=/echo; domain=other.example', 'c=3; Path=/elsewhere'))]);
c('cookie-case-and-attrs', 'cookie rewriting with attribute names in other cases and other attributes around',
  [`ProxyPass /app ${B}`, 'ProxyPassReverseCookieDomain backend.example front.example', 'ProxyPassReverseCookiePath / /app/'],
  [get(cookie('s=x; HttpOnly; DOMAIN=backend.example; Secure; PATH=/; Max-Age=10'))]);
c('cookie-location-form', 'ProxyPassReverseCookiePath inside <Location>',
  ['<Location /app>', `  ProxyPass ${B}`, '  ProxyPassReverseCookiePath /echo /app', '</Location>'], [get(cookie('a=1; Path=/echo'))]);

// ---- request headers ------------------------------------------------------------------------

c('preservehost-on', 'ProxyPreserveHost On sends the client\'s Host to the backend',
  [`ProxyPass /app ${B}/echo`, 'ProxyPreserveHost On'], [get('/app/x'), get('/app/y', [['Host', 'other.example:81']])]);
c('preservehost-location', 'ProxyPreserveHost in <Location> only there',
  [`ProxyPass /app ${B}/echo`, `ProxyPass /plain ${B}/echo`, '<Location /app>', '  ProxyPreserveHost On', '</Location>'], [get('/app/x'), get('/plain/x')]);
c('addheaders-off', 'ProxyAddHeaders Off: no X-Forwarded-For/Host/Server',
  [`ProxyPass /app ${B}/echo`, 'ProxyAddHeaders Off'], [get('/app/x')]);
c('xff-append', 'an X-Forwarded-For from the client gets the client address appended; X-Forwarded-Host too',
  [`ProxyPass /app ${B}/echo`], [get('/app/x', [['X-Forwarded-For', '10.0.0.1'], ['X-Forwarded-Host', 'orig.example'], ['X-Forwarded-Server', 'p1']])]);
c('hop-by-hop', 'hop-by-hop request headers (Connection, Keep-Alive, TE, Upgrade, Proxy-Authorization, headers named by Connection) are not forwarded',
  [`ProxyPass /app ${B}/echo`],
  [get('/app/x', [['Connection', 'close, X-Drop'], ['X-Drop', '1'], ['Keep-Alive', '300'], ['TE', 'trailers'], ['Proxy-Authorization', 'Basic eDp5'], ['X-Keep', 'yes'], ['Trailer', 'X-T']])]);
c('via-on', 'ProxyVia On adds Via to the request and to the response',
  [`ProxyPass /app ${B}/echo`, 'ProxyVia On'], [get('/app/x'), get('/app/y', [['Via', '1.0 earlier']])]);
c('via-full', 'ProxyVia Full adds the server version as a comment',
  [`ProxyPass /app ${B}/echo`, 'ProxyVia Full'], [get('/app/x')], { normalize: VIA_NORMALIZE });
c('via-block', 'ProxyVia Block removes Via from the request and the response',
  [`ProxyPass /app ${B}`, 'ProxyVia Block'], [get('/app/echo', [['Via', '1.0 earlier']]), get('/app/resp?h=Via:%201.1%20backend')]);
c('via-off', 'ProxyVia Off (default): a client Via goes through untouched, none added',
  [`ProxyPass /app ${B}`], [get('/app/echo', [['Via', '1.0 earlier']]), get('/app/resp?h=Via:%201.1%20backend')]);
c('max-forwards', 'Max-Forwards from the client is decremented; ProxyMaxForwards does not add one by default',
  [`ProxyPass /app ${B}/echo`], [get('/app/x', [['Max-Forwards', '5']]), { method: 'TRACE', path: '/app/y', headers: [['Max-Forwards', '0']] }]);

// ---- environment variables and bodies ---------------------------------------------------------

c('env-nokeepalive', 'SetEnv proxy-nokeepalive 1: Connection: close to the backend',
  [...load('env'), `ProxyPass /app ${B}/echo`, 'SetEnv proxy-nokeepalive 1'], [get('/app/x')]);
c('env-force-10', 'force-proxy-request-1.0: the backend gets an HTTP/1.0 request',
  [...load('env'), `ProxyPass /app ${B}/echo`, 'SetEnv force-proxy-request-1.0 1'], [get('/app/x'), post('/app/p', 'abc')]);
c('env-sendchunked', 'proxy-sendchunked: a request body with Content-Length goes to the backend chunked',
  [...load('env'), `ProxyPass /app ${B}/echo`, 'SetEnv proxy-sendchunked 1'], [post('/app/p', 'hello body')]);
c('env-sendcl', 'proxy-sendcl: a chunked request body is spooled and sent with Content-Length',
  [...load('env'), `ProxyPass /app ${B}/echo`, 'SetEnv proxy-sendcl 1'],
  [{ raw: 'POST /app/p HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n' }]);
c('post-content-length', 'a POST body with Content-Length goes to the backend as it came',
  [`ProxyPass /app ${B}/echo`], [post('/app/p', 'a=1&b=2', [['Content-Type', 'application/x-www-form-urlencoded']])]);
c('post-chunked', 'a chunked request body: how it goes to the backend',
  [`ProxyPass /app ${B}/echo`],
  [{ raw: 'POST /app/p HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n' }]);
c('post-chunked-force10', 'a chunked request body with force-proxy-request-1.0: spooled, sent with Content-Length',
  [...load('env'), `ProxyPass /app ${B}/echo`, 'SetEnv force-proxy-request-1.0 1'],
  [{ raw: 'POST /app/p HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n' }]);
c('expect-100', 'Expect: 100-continue from the client: the interim 100 and how Expect goes to the backend',
  [`ProxyPass /app ${B}/echo`],
  [{ raw: ['POST /app/p HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n', 'hello'], gapMs: 500 }]);
c('expect-100-off', 'Proxy100Continue Off: Apache answers the 100 itself and the backend sees no Expect',
  [`ProxyPass /app ${B}/echo`, 'Proxy100Continue Off'],
  [{ raw: ['POST /app/p HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n', 'hello'], gapMs: 500 }]);
c('keepalive-client', 'several requests on one client connection through the proxy',
  [`ProxyPass /app ${B}/echo`], [get('/app/1'), get('/app/2', [['Connection', 'close']])], { keepAlive: true });

// ---- responses --------------------------------------------------------------------------------

c('resp-status', 'backend statuses and headers pass through; hop-by-hop response headers are dropped',
  [`ProxyPass /app ${B}`],
  [get('/app/resp?status=201&h=X-Custom:%20v&h=Keep-Alive:%20timeout%3D5&h=Connection:%20X-Gone&h=X-Gone:%201'), get('/app/resp?status=404'), get('/app/resp?status=204')]);
c('resp-chunked', 'a chunked backend response goes to the client chunked; trailers',
  [`ProxyPass /app ${B}`], [get('/app/chunked')]);
c('resp-http10', 'an HTTP/1.0 backend answer without Content-Length, ended by close',
  [`ProxyPass /app ${B}`], [get('/app/http10'), { method: 'GET', path: '/app/http10', version: 'HTTP/1.0' }]);
c('resp-304', 'a conditional request: the backend\'s 304 passes through without a body',
  [`ProxyPass /app ${B}`], [get('/app/resp?status=304&h=ETag:%20%22x%22', [['If-None-Match', '"x"']])]);
c('resp-server-header', 'the backend\'s Server and Date headers: which the client sees',
  [`ProxyPass /app ${B}`], [get('/app/resp?h=Server:%20BackendServer/1.0&h=X-Powered-By:%20test')]);
c('error-override-on', 'ProxyErrorOverride On with ErrorDocument: a backend 404 is replaced by the local error document; 200 passes',
  [`ProxyPass /app ${B}`, 'ProxyErrorOverride On', 'ErrorDocument 404 /err404.html'],
  [get('/app/resp?status=404&body=backend%20page'), get('/app/resp?status=200')], { files: { 'htdocs/err404.html': 'local 404 page\n' } });
c('error-override-default-page', 'ProxyErrorOverride On without ErrorDocument: Apache\'s own error page for the status',
  [`ProxyPass /app ${B}`, 'ProxyErrorOverride On'], [get('/app/resp?status=500&body=backend%20error'), get('/app/resp?status=403')]);
c('error-override-codes', 'ProxyErrorOverride On 500: only the listed statuses are overridden',
  [`ProxyPass /app ${B}`, 'ProxyErrorOverride On 500', 'ErrorDocument 404 /err404.html', 'ErrorDocument 500 "custom 500"'],
  [get('/app/resp?status=404&body=backend%20404'), get('/app/resp?status=500&body=backend%20500')], { files: { 'htdocs/err404.html': 'local 404 page\n' } });
c('error-override-off', 'ProxyErrorOverride Off (default): the backend\'s error body goes through',
  [`ProxyPass /app ${B}`, 'ErrorDocument 404 /err404.html'], [get('/app/resp?status=404&body=backend%20page')], { files: { 'htdocs/err404.html': 'local 404 page\n' } });
c('error-override-location', 'ProxyErrorOverride in <Location>',
  [`ProxyPass /app ${B}`, `ProxyPass /raw ${B}`, '<Location /app>', '  ProxyErrorOverride On', '</Location>'],
  [get('/app/resp?status=503&body=b'), get('/raw/resp?status=503&body=b')]);
c('badheader-default', 'a backend header line without a colon, ProxyBadHeader IsError (default)',
  [`ProxyPass /app ${B}`], [get('/app/bad-header')]);
c('badheader-ignore', 'ProxyBadHeader Ignore drops the bad line and keeps the rest',
  [`ProxyPass /app ${B}`, 'ProxyBadHeader Ignore'], [get('/app/bad-header')]);
c('badheader-startbody', 'ProxyBadHeader StartBody: the bad line starts the body',
  [`ProxyPass /app ${B}`, 'ProxyBadHeader StartBody'], [get('/app/bad-header')]);

// ---- backend failures -------------------------------------------------------------------------

c('backend-refused', 'a backend that refuses connections: 503 with AH00957/AH00959, then the worker is in error for retry seconds',
  [`ProxyPass /app http://127.0.0.1:1/`], [get('/app/x'), get('/app/y')], { backend: undefined });
c('backend-refused-retry0', 'retry=0: every request tries the refusing backend again',
  [`ProxyPass /app http://127.0.0.1:1/ retry=0`], [get('/app/x'), get('/app/y')], { backend: undefined });
c('backend-timeout', 'a backend that never answers, worker timeout=1: 502 with AH01102 (ProxyTimeout semantics as 2.4.71)',
  [`ProxyPass /app ${B}/hang timeout=1`], [get('/app/x')]);
c('backend-proxytimeout', 'ProxyTimeout 1 applies to workers without timeout=',
  [`ProxyPass /app ${B}/hang`, 'ProxyTimeout 1'], [get('/app/x')]);
c('backend-bad-status', 'an invalid status line from the backend',
  [`ProxyPass /app ${B}`], [get('/app/bad-status')]);
c('backend-empty', 'a backend that closes without answering',
  [`ProxyPass /app ${B}`], [get('/app/empty')]);
c('backend-mid-body', 'a backend that closes in the middle of the body: the client gets what came, the connection is cut',
  [`ProxyPass /app ${B}`], [get('/app/mid-body')]);

// ---- forward proxy ----------------------------------------------------------------------------

const abs = (url, headers = [['Host', '127.0.0.1:@PORT2@']]) => ({ method: 'GET', path: url, headers });
c('forward-basic', 'ProxyRequests On with <Proxy *> granted: an absolute-URI request is forwarded',
  ['ProxyRequests On', '<Proxy "*">', '  Require all granted', '</Proxy>'], [abs(`${B}/echo/fwd?q=1`)]);
c('forward-denied', '<Proxy *> Require all denied: 403 and AH01797 with the proxy: URL',
  ['ProxyRequests On', '<Proxy "*">', '  Require all denied', '</Proxy>'], [abs(`${B}/echo/fwd`)]);
c('forward-off', 'ProxyRequests Off: an absolute-URI request for another host is served locally',
  [], [abs(`${B}/index.html`), abs('http://localhost:@PORT@/index.html', [['Host', 'localhost:@PORT@']])],
  { files: { 'htdocs/index.html': 'local index\n' } });
c('forward-proxymatch', '<ProxyMatch> denies some URLs only',
  ['ProxyRequests On', `<ProxyMatch "^http://127\\.0\\.0\\.1:@PORT2@/echo/secret">`, '  Require all denied', '</ProxyMatch>'],
  [abs(`${B}/echo/secret/x`), abs(`${B}/echo/open`)]);
c('forward-proxy-wildcard', '<Proxy http://127.0.0.1:PORT/*> wildcard section applies to matching URLs',
  ['ProxyRequests On', '<Proxy "http://127.0.0.1:@PORT2@/echo/priv*">', '  Require all denied', '</Proxy>'],
  [abs(`${B}/echo/private`), abs(`${B}/echo/public`)]);
c('forward-proxyblock', 'ProxyBlock names a host the proxy will not connect to',
  ['ProxyRequests On', 'ProxyBlock 127.0.0.1'], [abs(`${B}/echo/x`)]);
c('proxyremote', 'ProxyRemote * sends forward-proxy requests to a remote proxy, with the absolute URI',
  ['ProxyRequests On', `ProxyRemote * ${B}`], [abs('http://far.example/path?q', [['Host', 'far.example']])]);
c('proxyremote-match', 'ProxyRemoteMatch picks the remote proxy by a regex of the URL',
  ['ProxyRequests On', `ProxyRemoteMatch "far\\.example" ${B}`, 'ProxyRemote * http://127.0.0.1:1'],
  [abs('http://far.example/x', [['Host', 'far.example']])]);
c('noproxy', 'NoProxy: hosts it names are reached directly, not through ProxyRemote',
  ['ProxyRequests On', 'ProxyRemote * http://127.0.0.1:1', 'NoProxy 127.0.0.1'], [abs(`${B}/echo/direct`)]);
c('forward-connect-refused', 'CONNECT without mod_proxy_connect: 405 or a forward attempt',
  ['ProxyRequests On'], [{ raw: 'CONNECT 127.0.0.1:@PORT2@ HTTP/1.1\r\nHost: 127.0.0.1:@PORT2@\r\nConnection: close\r\n\r\n' }]);

// ---- ProxySet, interpolation ----------------------------------------------------------------

c('proxyset-worker', 'ProxySet on a worker URL sets its parameters (disablereuse shows as Connection: close)',
  [`ProxyPass /app ${B}/echo`, `ProxySet ${B}/echo disablereuse=On`], [get('/app/x')]);
c('proxyset-section', 'ProxySet inside <Proxy url> applies to that worker',
  [`<Proxy ${B}/echo>`, '  ProxySet disablereuse=On', '</Proxy>', `ProxyPass /app ${B}/echo`], [get('/app/x')]);
bad('proxyset-no-params', 'ProxySet without parameters', [`ProxySet ${B}/echo`]);
bad('proxyset-no-url', 'ProxySet outside a section without a URL', ['ProxySet timeout=5']);
c('interpolate', 'ProxyPassInterpolateEnv On with the interpolate flag: ${VAR} taken from the environment per request, in ProxyPass and ProxyPassReverse',
  [...load('setenvif'), 'ProxyPassInterpolateEnv On', 'SetEnvIf Request_URI "." BACK=echo/int',
    `ProxyPass /app ${B}/\${BACK} interpolate`, `ProxyPassReverse /app ${B}/\${BACK} interpolate`],
  [get('/app/x'), get('/app/resp-not-here')]);
c('interpolate-off', 'without ProxyPassInterpolateEnv the ${VAR} stays literal',
  [...load('setenvif'), 'SetEnvIf Request_URI "." BACK=echo/int', `ProxyPass /app ${B}/\${BACK} interpolate`], [get('/app/x')]);

// ---- configuration errors ---------------------------------------------------------------------

bad('conf-pass-no-path', 'ProxyPass outside <Location> with only a URL', [`ProxyPass ${B}/`]);
bad('conf-pass-location-path', 'ProxyPass in <Location> with a path', ['<Location /x>', `  ProxyPass /x ${B}/`, '</Location>']);
bad('conf-pass-relative', 'ProxyPass to a relative URL', ['ProxyPass /app /somewhere']);
bad('conf-pass-directory', 'ProxyPass inside <Directory>', ['<Directory /tmp>', `  ProxyPass ${B}/`, '</Directory>']);
bad('conf-passmatch-bad-regex', 'ProxyPassMatch with a regex that does not compile', [`ProxyPassMatch "^/(x" ${B}/`]);
bad('conf-via-bad', 'ProxyVia with a bad value', ['ProxyVia Sometimes']);
bad('conf-badheader-bad', 'ProxyBadHeader with a bad value', ['ProxyBadHeader Maybe']);
bad('conf-timeout-bad', 'ProxyTimeout with a bad value', ['ProxyTimeout abc']);
bad('conf-requests-bad', 'ProxyRequests with a non-flag value', ['ProxyRequests Maybe']);
bad('conf-remote-bad', 'ProxyRemote with a bad remote URL', ['ProxyRemote * not-a-url']);
bad('conf-cookiepath-one-arg', 'ProxyPassReverseCookiePath with one argument', ['ProxyPassReverseCookiePath /a']);
bad('conf-erroroverride-bad-code', 'ProxyErrorOverride On with a status outside 400-599', ['ProxyErrorOverride On 302']);
bad('conf-proxy-section-noargs', '<Proxy> without an argument', ['<Proxy>', '</Proxy>']);
bad('conf-no-proxy-http', 'ProxyPass without mod_proxy_http loaded starts; nothing else', [`ProxyPass /app ${B}/`, 'ProxyPreserveHost Maybe'], load('proxy'));
bad('conf-receivebuffersize-bad', 'ProxyReceiveBufferSize below 512', ['ProxyReceiveBufferSize 100']);
bad('conf-maxforwards-bad', 'ProxyMaxForwards with a bad value', ['ProxyMaxForwards many']);

// ---- write ------------------------------------------------------------------------------------

fs.mkdirSync(OUT, { recursive: true });
const wanted = new Set();
for (const [name, spec] of Object.entries(cases)) {
  const out = { title: spec.title, conf: spec.conf };
  if (spec.backend !== undefined) out.backend = spec.backend;
  for (const k of ['files', 'keepAlive', 'normalize']) if (spec[k] !== undefined) out[k] = spec[k];
  out.requests = spec.requests;
  const file = path.join(OUT, `${name}.json`);
  wanted.add(file);
  fs.writeFileSync(file, JSON.stringify(out, null, 2) + '\n');
}
for (const f of fs.readdirSync(OUT)) if (!wanted.has(path.join(OUT, f))) fs.rmSync(path.join(OUT, f));
console.log(`${wanted.size} cases in ${OUT}`);
