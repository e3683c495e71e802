// What `npm run bench` serves: the scenarios, the generated site (htdocs,
// password file, .htaccess files) and the configurations of Apache/plume
// (one shared httpd.conf) and nginx. bench/run.ts starts and measures.

import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const APACHE_MODULES = '/usr/lib/apache2/modules';
const APACHE_HTPASSWD = '/usr/bin/htpasswd';

// ---------------------------------------------------------------- servers and scenarios

export type ServerName = 'apache' | 'plume' | 'plume-workers' | 'nginx' | 'bare';
export type ScenarioName = '1k' | '100k' | '404' | 'auth' | 'htaccess3' | 'rewrite-htaccess' | 'if-header' | 'server-status' | 'conn-per-request' | 'gzip-100k' | 'ssi' | 'cgi' | 'proxy-1k' | 'proxy-balancer' | 'php-fpm';

export const ALL_SERVERS: readonly ServerName[] = ['apache', 'plume', 'plume-workers', 'nginx', 'bare'];

/** The servers plume is compared with, in the order of the ratio table. */
export const REFERENCES: readonly ServerName[] = ['apache', 'nginx', 'bare'];
/** The plume columns ratios are given for. */
export const SUBJECTS: readonly ServerName[] = ['plume', 'plume-workers'];

/** The Basic-auth user of the `auth` scenario (password file made with `plume htpasswd -m`). */
export const AUTH_USER = 'bench';
export const AUTH_PASSWORD = 'plume-bench-pw';
export const AUTH_REALM = 'plume bench';
const AUTH_HEADER = `Basic ${Buffer.from(`${AUTH_USER}:${AUTH_PASSWORD}`).toString('base64')}`;

/** WordPress's .htaccess for an install in /wp/ (wordpress.org's "Basic WP" block). */
export const WORDPRESS_HTACCESS = `# BEGIN WordPress
<IfModule mod_rewrite.c>
RewriteEngine On
RewriteRule .* - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]
RewriteBase /wp/
RewriteRule ^index\\.php$ - [L]
RewriteCond %{REQUEST_FILENAME} !-f
RewriteCond %{REQUEST_FILENAME} !-d
RewriteRule . /wp/index.php [L]
</IfModule>
# END WordPress
`;

/** The `ssi` scenario's page: three `#include virtual` and an `#if expr` (mod_include). */
export const SSI_PAGE = `<!DOCTYPE html>
<title>plume bench ssi</title>
<!--#include virtual="/ssi/part1.html" -->
<!--#if expr="%{REQUEST_URI} =~ m#^/ssi/# && -n %{HTTP_HOST}" -->
<p>if-expr-true</p>
<!--#else -->
<p>if-expr-false</p>
<!--#endif -->
<!--#include virtual="/ssi/part2.html" -->
<!--#include virtual="/ssi/part3.html" -->
`;
/** What each included part says. */
export const SSI_PARTS = ['ssi-part-one', 'ssi-part-two', 'ssi-part-three'];
/** What the `php-fpm` scenario's PHP script prints. */
export const PHP_BODY = 'hello from PHP-FPM';

/** What the `cgi` scenario's script prints. */
export const CGI_BODY = 'hello from a CGI script';

/** Headers the .htaccess files of the `htaccess3` scenario add, one per level. */
export const HTACCESS_HEADERS = ['x-bench-htaccess-1', 'x-bench-htaccess-2', 'x-bench-htaccess-3'];

export interface Scenario {
  name: ScenarioName;
  /** the request path */
  urlPath: string;
  /** the status every response must have */
  status: number;
  /** the file under htdocs whose bytes are the expected body; null: no fixed body (404) */
  file: string | null;
  /** expected Content-Type prefix; null: not checked */
  contentType: string | null;
  /** request headers sent by wrk (-H) and by the check before timing */
  headers: Record<string, string>;
  /** servers that have no equivalent of this scenario: not run, no ratio */
  skip: readonly ServerName[];
  /** servers that serve the same bytes without the feature measured: run, flagged in the tables */
  notEquivalent: Partial<Record<ServerName, string>>;
  /** plume's body must have as many bytes and the same Content-Type as Apache's (a fixed page) */
  sameAsApache: boolean;
  /** text every server's body must contain (per server; others: not checked) */
  bodyHas: Partial<Record<ServerName, string[]>>;
  /** the file under htdocs the gzip-coded body must decompress to (Content-Encoding: gzip) */
  gzipOf?: string;
  /** one line for the start of the run */
  description: string;
}

export const SCENARIOS: Record<ScenarioName, Scenario> = {
  '1k': {
    name: '1k',
    urlPath: '/1k.html',
    status: 200,
    file: '1k.html',
    contentType: 'text/html',
    headers: {},
    skip: [],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {},
    description: '1 KB static file, keep-alive',
  },
  '100k': {
    name: '100k',
    urlPath: '/100k.bin',
    status: 200,
    file: '100k.bin',
    contentType: 'application/octet-stream',
    headers: {},
    skip: [],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {},
    description: '100 KB static file, keep-alive',
  },
  '404': {
    name: '404',
    urlPath: '/missing.html',
    status: 404,
    file: null,
    contentType: null,
    headers: {},
    skip: [],
    notEquivalent: {},
    sameAsApache: true,
    bodyHas: {},
    description: 'a missing file (each server sends its own 404 page), keep-alive',
  },
  auth: {
    name: 'auth',
    urlPath: '/auth/1k.html',
    status: 200,
    file: 'auth/1k.html',
    contentType: 'text/html',
    headers: { Authorization: AUTH_HEADER },
    skip: ['bare'],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {},
    description: '1 KB file under Basic auth, apr1 (MD5) htpasswd entry checked on every request, keep-alive',
  },
  htaccess3: {
    name: 'htaccess3',
    urlPath: '/d1/d2/d3/1k.html',
    status: 200,
    file: 'd1/d2/d3/1k.html',
    contentType: 'text/html',
    headers: {},
    skip: [],
    notEquivalent: { nginx: 'no .htaccess', bare: 'no .htaccess' },
    sameAsApache: false,
    bodyHas: {},
    description: '1 KB file three directories deep, AllowOverride All, a .htaccess at each level, keep-alive',
  },
  'rewrite-htaccess': {
    name: 'rewrite-htaccess',
    urlPath: '/wp/2024/01/hello-world/',
    status: 200,
    file: 'wp/index.php',
    contentType: null,
    headers: {},
    skip: ['nginx', 'bare'],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {},
    description: "WordPress's standard .htaccess block (mod_rewrite, AllowOverride All): a pretty URL served by the front-controller file, keep-alive",
  },
  'if-header': {
    name: 'if-header',
    urlPath: '/ifh/1k.html',
    status: 200,
    file: 'ifh/1k.html',
    contentType: 'text/html',
    headers: { 'X-Bench': 'on' },
    skip: ['nginx', 'bare'],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {},
    description: "1 KB file in a <Directory> whose <If> (a request header and a regex on the URI) sets a response header with mod_headers, keep-alive",
  },
  'server-status': {
    name: 'server-status',
    urlPath: '/server-status?auto',
    status: 200,
    file: null,
    contentType: 'text/plain',
    headers: {},
    skip: ['bare'],
    notEquivalent: { nginx: 'stub_status, not mod_status' },
    sameAsApache: false,
    bodyHas: {
      apache: ['Total Accesses: ', 'Scoreboard: '],
      plume: ['Total Accesses: ', 'Scoreboard: '],
      'plume-workers': ['Total Accesses: ', 'Scoreboard: '],
      nginx: ['Active connections: '],
    },
    description: 'mod_status machine-readable page (SetHandler server-status, ExtendedStatus at its default), keep-alive',
  },
  'conn-per-request': {
    name: 'conn-per-request',
    urlPath: '/1k.html',
    status: 200,
    file: '1k.html',
    contentType: 'text/html',
    headers: { Connection: 'close' },
    skip: [],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {},
    description: "1 KB file, a new connection for every request ('Connection: close')",
  },
  'gzip-100k': {
    name: 'gzip-100k',
    urlPath: '/gzip/100k.html',
    status: 200,
    file: null,
    contentType: 'text/html',
    headers: { 'Accept-Encoding': 'gzip' },
    skip: ['bare'],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {},
    gzipOf: 'gzip/100k.html',
    description: '100 KB HTML page gzip-compressed on the way out (mod_deflate via AddOutputFilterByType; nginx gzip on), Accept-Encoding: gzip, keep-alive',
  },
  ssi: {
    name: 'ssi',
    urlPath: '/ssi/page.shtml',
    status: 200,
    file: null,
    contentType: 'text/html',
    headers: {},
    skip: ['nginx', 'bare'],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {
      apache: [...SSI_PARTS, 'if-expr-true'],
      plume: [...SSI_PARTS, 'if-expr-true'],
      'plume-workers': [...SSI_PARTS, 'if-expr-true'],
    },
    description: 'a server-parsed page (mod_include: the INCLUDES filter) with three #include virtual subrequests and an #if expr, keep-alive',
  },
  cgi: {
    name: 'cgi',
    urlPath: '/cgi-bin/hello.cgi',
    status: 200,
    file: null,
    contentType: 'text/plain',
    headers: {},
    skip: ['nginx', 'bare'],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: { apache: [CGI_BODY], plume: [CGI_BODY], 'plume-workers': [CGI_BODY] },
    description: 'a tiny /bin/sh CGI script under ScriptAlias (mod_cgi: a process per request), keep-alive',
  },
  'proxy-1k': {
    name: 'proxy-1k',
    urlPath: '/proxied/1k.html',
    status: 200,
    file: '1k.html',
    contentType: 'text/html',
    headers: {},
    skip: ['nginx', 'bare'],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {},
    description: 'reverse proxy (mod_proxy_http, ProxyPass) to one backend port serving the 1 KB file (nginx, or a bare Node server with --proxy-backends node; the same backend for every server), keep-alive',
  },
  'proxy-balancer': {
    name: 'proxy-balancer',
    urlPath: '/balanced/1k.html',
    status: 200,
    file: '1k.html',
    contentType: 'text/html',
    headers: {},
    skip: ['nginx', 'bare'],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: {},
    description: 'reverse proxy through balancer://bench (mod_proxy_balancer, byrequests) to three backend ports serving the same 1 KB file (one nginx process, or three bare Node servers with --proxy-backends node), keep-alive',
  },
  'php-fpm': {
    name: 'php-fpm',
    urlPath: '/php/hello.php',
    status: 200,
    file: null,
    contentType: 'text/html',
    headers: {},
    skip: ['nginx', 'bare'],
    notEquivalent: {},
    sameAsApache: false,
    bodyHas: { apache: [PHP_BODY], plume: [PHP_BODY], 'plume-workers': [PHP_BODY] },
    description: "a tiny PHP script through Debian's PHP-FPM (mod_proxy_fcgi, SetHandler proxy:fcgi://; one pool, started by the run, for every server), keep-alive",
  },
};

/** In the order of the report (not Object.keys: '404' would sort first as an integer key). */
export const ALL_SCENARIOS: readonly ScenarioName[] = ['1k', '100k', '404', 'auth', 'htaccess3', 'rewrite-htaccess', 'if-header', 'server-status', 'conn-per-request', 'gzip-100k', 'ssi', 'cgi', 'proxy-1k', 'proxy-balancer', 'php-fpm'];

/** Whether `server` takes part in `sc`. */
export function runsScenario(sc: Scenario, server: ServerName): boolean {
  return !sc.skip.includes(server);
}

// ---------------------------------------------------------------- the site

function fixedBytes(size: number): Buffer {
  const b = Buffer.alloc(size);
  let x = 0x2545f491; // xorshift32, fixed seed: same bytes on every run
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

function fixedHtml(size: number): Buffer {
  const head = '<!DOCTYPE html>\n<html><head><title>plume bench</title></head><body>\n<p>';
  const tail = '</p>\n</body></html>\n';
  const filler = 'The quick brown fox jumps over the lazy dog. ';
  let middle = '';
  while (head.length + middle.length + tail.length < size) middle += filler;
  middle = middle.slice(0, size - head.length - tail.length);
  const b = Buffer.from(head + middle + tail, 'latin1');
  if (b.length !== size) throw new Error('internal: html size');
  return b;
}

/** An HTML page of made-up words (fixed seed): text that compresses about as well as prose
 *  does (a repeated phrase would cost a compressor almost nothing). */
function wordyHtml(size: number): Buffer {
  let x = 0x1b873593;
  const rand = (n: number): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
  const letters = 'etaoinshrdlcumwfgypbvkjxqz';
  const words: string[] = [];
  for (let i = 0; i < 2000; i++) {
    let w = '';
    const len = 2 + rand(8);
    for (let j = 0; j < len; j++) w += letters[Math.min(rand(26), rand(26))];
    words.push(w);
  }
  const head = '<!DOCTYPE html>\n<html><head><title>plume bench</title></head><body>\n';
  const tail = '</body></html>\n';
  let body = '';
  while (head.length + body.length + tail.length < size) {
    let p = '<p>';
    const n = 20 + rand(60);
    for (let i = 0; i < n; i++) p += (i ? ' ' : '') + words[rand(words.length)];
    body += p + '.</p>\n';
  }
  body = body.slice(0, size - head.length - tail.length - 1) + '\n';
  const b = Buffer.from(head + body + tail, 'latin1');
  if (b.length !== size) throw new Error('internal: wordy html size');
  return b;
}

export interface Site {
  root: string;
  htdocs: string;
  mimeTypes: string;
  /** the password file of the `auth` scenario; null when it could not be made */
  htpasswd: string | null;
  /** how the password file was made, or why it could not be */
  htpasswdNote: string;
  /** the three backends of the `proxy-balancer` scenario (`proxy-1k` uses the first) (bare Node servers of htdocs), once started */
  backendPorts?: number[];
  /** their processes (wrk's CPUs), whose CPU the runner reports beside the server's */
  backendPids?: number[];
  /** the PHP-FPM pool of the `php-fpm` scenario (127.0.0.1:port), set by bench/run.ts once it
   *  runs; null: no PHP-FPM, the scenario's lines are left out of httpd.conf */
  fpmPort: number | null;
}

/**
 * The .htaccess of level `n` (1..3) under /d1: a header of its own (so the check
 * before timing proves every level was read), one more harmless line, and
 * Require all granted.
 */
function htaccess(n: number): string {
  const extra = ['AddType text/html .html', 'DirectoryIndex index.html', 'AddDefaultCharset Off'][n - 1];
  return `# level ${n} of the htaccess3 benchmark scenario\nHeader set X-Bench-Htaccess-${n} "${n}"\n${extra}\nRequire all granted\n`;
}

/**
 * The apr1 entry for the auth scenario, made by the plume under test
 * (`plume htpasswd -cbm`), or by Apache's htpasswd when that fails.
 */
function makeHtpasswd(file: string, plumeBin: string): string {
  const tries: [string, string[], string][] = [
    [process.execPath, [plumeBin, 'htpasswd', '-cbm', file, AUTH_USER, AUTH_PASSWORD], 'plume htpasswd -cbm'],
    [APACHE_HTPASSWD, ['-cbm', file, AUTH_USER, AUTH_PASSWORD], 'Apache htpasswd -cbm'],
  ];
  const errors: string[] = [];
  for (const [cmd, args, label] of tries) {
    fs.rmSync(file, { force: true });
    const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30000 });
    let text = '';
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      /* not written */
    }
    if (r.status === 0 && text.startsWith(`${AUTH_USER}:$apr1$`)) {
      fs.chmodSync(file, 0o644); // read by servers running as nobody
      return label;
    }
    errors.push(`${label}: exit ${r.status ?? r.error?.message ?? r.signal}, ${`${r.stderr ?? ''}`.trim() || 'no apr1 entry written'}`);
  }
  fs.rmSync(file, { force: true });
  throw new Error(errors.join('; '));
}

export function makeSite(plumeBin: string, withAuth: boolean): Site {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-bench-'));
  fs.chmodSync(root, 0o755); // servers dropping to nobody must read htdocs
  const htdocs = path.join(root, 'htdocs');
  const dir = (rel: string): string => {
    const d = path.join(htdocs, rel);
    fs.mkdirSync(d, { recursive: true, mode: 0o755 });
    return d;
  };
  const file = (rel: string, data: string | Buffer): void => {
    fs.writeFileSync(path.join(htdocs, rel), data, { mode: 0o644 });
  };
  dir('.');
  const html = fixedHtml(1024);
  file('1k.html', html);
  file('100k.bin', fixedBytes(102400));
  file('index.html', '<!DOCTYPE html>\n<p>plume bench</p>\n');
  dir('auth');
  file('auth/1k.html', html);
  dir('gzip');
  file('gzip/100k.html', wordyHtml(102400));
  dir('d1/d2/d3');
  file('d1/.htaccess', htaccess(1));
  file('d1/d2/.htaccess', htaccess(2));
  file('d1/d2/d3/.htaccess', htaccess(3));
  file('d1/d2/d3/1k.html', html);
  // rewrite-htaccess: a WordPress install in /wp/ (the PHP front controller is a static file)
  dir('wp');
  file('wp/.htaccess', WORDPRESS_HTACCESS);
  file('wp/index.php', html);
  // if-header: an <If> in the <Directory> of ifh/ sets a header
  dir('ifh');
  file('ifh/1k.html', html);
  // ssi: a server-parsed page including three small files
  dir('ssi');
  file('ssi/page.shtml', SSI_PAGE);
  SSI_PARTS.forEach((p, i) => file(`ssi/part${i + 1}.html`, `<p>${p}</p>\n`));
  // cgi: a shell script outside the document root, run through ScriptAlias
  fs.mkdirSync(path.join(root, 'cgi-bin'), { mode: 0o755 });
  fs.writeFileSync(path.join(root, 'cgi-bin/hello.cgi'), `#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n${CGI_BODY}\\n'\n`, { mode: 0o755 });
  // php-fpm: a tiny PHP script, served through PHP-FPM
  dir('php');
  file('php/hello.php', `<?php echo '${PHP_BODY}', "\\n";\n`);
  const mimeTypes = path.join(root, 'mime.types');
  fs.writeFileSync(mimeTypes, 'text/html\t\t\t\thtml htm\napplication/octet-stream\t\tbin\n', { mode: 0o644 });
  let htpasswd: string | null = null;
  let htpasswdNote = 'not needed';
  if (withAuth) {
    const f = path.join(root, 'htpasswd');
    try {
      htpasswdNote = `made with ${makeHtpasswd(f, plumeBin)}`;
      htpasswd = f;
    } catch (e) {
      htpasswdNote = `cannot make the password file: ${e instanceof Error ? e.message : String(e)}`;
    }
  }
  return { root, htdocs, mimeTypes, htpasswd, htpasswdNote, fpmPort: null };
}

/** The expected body of each scenario that has one. */
export function expectedBodies(site: Site): Map<ScenarioName, Buffer> {
  const m = new Map<ScenarioName, Buffer>();
  for (const sc of Object.values(SCENARIOS))
    if (sc.file !== null) m.set(sc.name, fs.readFileSync(path.join(site.htdocs, sc.file)));
  return m;
}

// ---------------------------------------------------------------- configurations

export function runAsUser(): { user: string; group: string } | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  let group = 'nogroup';
  try {
    if (!/^nogroup:/m.test(fs.readFileSync('/etc/group', 'utf8'))) group = 'nobody';
  } catch {
    /* keep nogroup */
  }
  return { user: 'nobody', group };
}

/**
 * The httpd.conf shared by Apache and plume. Only the Listen port differs
 * between the copies; every other path is either absolute or relative to
 * the ServerRoot given with -d (each server has its own, with its own logs/).
 * The modules of every scenario are loaded for all of them. `withStatus` false
 * leaves out mod_status and its <Location> (a plume without mod_status could
 * not start with them); bench/run.ts then skips plume's server-status cases.
 */
export function httpdConf(site: Site, port: number, withStatus = true, withProxy = true): string {
  const who = runAsUser();
  const m = APACHE_MODULES;
  const htpasswd = site.htpasswd ?? path.join(site.root, 'htpasswd');
  return `# Generated by bench/run.ts: a minimal but real Apache 2.4 configuration.
# Run with: apache2 -d <server root> -f <this file> -D FOREGROUND
#       or: node bin/plume -X -d <server root> -f <this file>
<IfModule !unixd_module>
    LoadModule unixd_module ${m}/mod_unixd.so
</IfModule>
LoadModule mpm_event_module ${m}/mod_mpm_event.so
LoadModule authn_core_module ${m}/mod_authn_core.so
LoadModule authn_file_module ${m}/mod_authn_file.so
LoadModule auth_basic_module ${m}/mod_auth_basic.so
LoadModule authz_core_module ${m}/mod_authz_core.so
LoadModule authz_user_module ${m}/mod_authz_user.so
LoadModule mime_module ${m}/mod_mime.so
LoadModule dir_module ${m}/mod_dir.so
LoadModule headers_module ${m}/mod_headers.so
LoadModule filter_module ${m}/mod_filter.so
LoadModule deflate_module ${m}/mod_deflate.so
LoadModule rewrite_module ${m}/mod_rewrite.so
LoadModule alias_module ${m}/mod_alias.so
LoadModule cgi_module ${m}/mod_cgi.so
LoadModule include_module ${m}/mod_include.so
${!withProxy || site.fpmPort === null ? '# (no PHP-FPM, or a plume without mod_proxy: no proxy_fcgi_module)' : `LoadModule proxy_module ${m}/mod_proxy.so\nLoadModule proxy_fcgi_module ${m}/mod_proxy_fcgi.so`}
${withStatus ? `LoadModule status_module ${m}/mod_status.so` : '# (no status_module: this plume has no mod_status)'}

ServerName 127.0.0.1
Listen 127.0.0.1:${port}
${who === null ? '# (not root: no User/Group)' : `User ${who.user}\nGroup ${who.group}`}
PidFile logs/httpd.pid
ErrorLog logs/error_log
LogLevel warn
LogFormat "%h %l %u %t \\"%r\\" %>s %b" common
CustomLog logs/access_log common

KeepAlive On
MaxKeepAliveRequests 10000
KeepAliveTimeout 5
Timeout 60

TypesConfig ${site.mimeTypes}
DocumentRoot "${site.htdocs}"
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<Directory "${site.htdocs}">
    Options None
    AllowOverride None
    Require all granted
</Directory>
DirectoryIndex index.html

# auth: Basic authentication against an apr1 (MD5) htpasswd entry
<Directory "${site.htdocs}/auth">
    AuthType Basic
    AuthName "${AUTH_REALM}"
    AuthBasicProvider file
    AuthUserFile "${htpasswd}"
    Require valid-user
</Directory>

# gzip-100k: mod_deflate through mod_filter's AddOutputFilterByType
<Directory "${site.htdocs}/gzip">
    AddOutputFilterByType DEFLATE text/html
</Directory>

# ssi: mod_include's INCLUDES filter on .shtml pages (three #include virtual, an #if expr)
<Directory "${site.htdocs}/ssi">
    Options +Includes
    AddType text/html .shtml
    AddOutputFilter INCLUDES .shtml
</Directory>

# cgi: a tiny shell script (mod_cgi: Apache's mod_cgid daemon cannot bind its socket in Debian's
# default runtime directory, /var/run/apache2, which this container does not have)
ScriptAlias /cgi-bin/ "${site.root}/cgi-bin/"
<Directory "${site.root}/cgi-bin">
    Require all granted
</Directory>

${!withProxy || site.fpmPort === null ? '' : `# php-fpm: PHP through PHP-FPM's pool on 127.0.0.1:${site.fpmPort}
<Directory "${site.htdocs}/php">
    <FilesMatch "\\.php$">
        SetHandler "proxy:fcgi://127.0.0.1:${site.fpmPort}"
    </FilesMatch>
</Directory>
`}
# htaccess3: d1, d1/d2 and d1/d2/d3 each hold a .htaccess
<Directory "${site.htdocs}/d1">
    AllowOverride All
</Directory>

# rewrite-htaccess: WordPress's .htaccess in wp/ (per-directory rewriting needs FollowSymLinks)
<Directory "${site.htdocs}/wp">
    AllowOverride All
    Options FollowSymLinks
</Directory>

# if-header: an ap_expr condition (parsed once, evaluated per request) decides a header
<Directory "${site.htdocs}/ifh">
    <If "%{HTTP:X-Bench} == 'on' && %{REQUEST_URI} =~ m#^/ifh/#">
        Header set X-Bench-If matched
    </If>
</Directory>
${withStatus ? `
# server-status: mod_status, the specification's example
<Location /server-status>
    SetHandler server-status
</Location>
` : ''}${withProxy && site.backendPorts !== undefined ? `
# proxy-balancer: three backends behind mod_proxy_balancer (byrequests)
${site.fpmPort === null ? `LoadModule proxy_module ${m}/mod_proxy.so\n` : ''}LoadModule proxy_http_module ${m}/mod_proxy_http.so
LoadModule proxy_balancer_module ${m}/mod_proxy_balancer.so
LoadModule slotmem_shm_module ${m}/mod_slotmem_shm.so
LoadModule lbmethod_byrequests_module ${m}/mod_lbmethod_byrequests.so
<Proxy balancer://bench>
${site.backendPorts.map((p) => `    BalancerMember http://127.0.0.1:${p}`).join('\n')}
</Proxy>
ProxyPass /balanced balancer://bench
# proxy-1k: the first of those backends alone
ProxyPass /proxied http://127.0.0.1:${site.backendPorts[0]}
` : ''}`;
}

/** What every nginx of the benchmark has: its pid and error log under `dir`, the connections
 *  per worker, and the site's types (the opening of the http block). */
function nginxCommon(dir: string, connections: number): string {
  return `pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events {
    worker_connections ${connections};
}
http {
    types {
        text/html html htm;
        application/octet-stream bin;
    }
    default_type application/octet-stream;`;
}

/** nginx's temporary files under `dir` (its compiled-in paths need not exist). */
function nginxTemps(dir: string): string {
  return ['client_body', 'proxy', 'fastcgi'].map((t) => `    ${t}_temp_path ${dir}/tmp/${t === 'client_body' ? 'body' : t};`).join('\n');
}

/** The proxy scenarios' backends as one nginx process (no master) listening on `ports`: no
 *  access log (as the bare Node backends), keep-alive connections recycled every 10,000
 *  requests (as theirs). */
export function backendNginxConf(site: Site, dir: string, ports: readonly number[]): string {
  return `# Generated by bench/run.ts: the proxy scenarios' backends.
worker_processes 1;
daemon off;
master_process off;
${nginxCommon(dir, 1024)}
    access_log off;
    log_not_found off;
    keepalive_timeout 60;
    keepalive_requests 10000;
${nginxTemps(dir)}
${ports.map((p) => `    server {\n        listen 127.0.0.1:${p};\n        root ${site.htdocs};\n    }\n`).join('')}}
`;
}

export function nginxConf(site: Site, dir: string, port: number): string {
  const who = runAsUser();
  const htpasswd = site.htpasswd ?? path.join(site.root, 'htpasswd');
  return `# Generated by bench/run.ts: nginx serving the same htdocs as Apache.
${who === null ? '' : `user ${who.user} ${who.group};\n`}worker_processes auto;
daemon off;
master_process on;
${nginxCommon(dir, 4096)}
    sendfile on;
    tcp_nopush on;
    log_format common '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent';
    access_log ${dir}/logs/access.log common;
    # Apache logs a missing file at info level, below LogLevel warn: nginx neither.
    log_not_found off;
    keepalive_timeout 5;
    keepalive_requests 10000;
${nginxTemps(dir)}
    server {
        listen 127.0.0.1:${port};
        server_name 127.0.0.1;
        root ${site.htdocs};
        index index.html;
        # auth: nginx reads the same apr1 htpasswd file
        location /auth/ {
            auth_basic "${AUTH_REALM}";
            auth_basic_user_file ${htpasswd};
        }
        # gzip-100k: compressed on the way out, as mod_deflate does
        location /gzip/ {
            gzip on;
            gzip_types text/html;
        }
        # htaccess3: nginx has no .htaccess; the file is served plainly
        # server-status: nginx's nearest equivalent (a much shorter page)
        location = /server-status {
            stub_status;
        }
    }
}
`;
}
