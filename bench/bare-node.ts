// Baseline for `npm run bench`: the smallest reasonable node:http static
// server. It loads every file under a document root into memory at start-up
// and answers GET/HEAD for them with the same Content-Type and
// Content-Length that Apache sends (keep-alive, no access log, no stat() per
// request). It is the ceiling a Node.js server can reach on this machine,
// not a competitor: plume/bare-Node shows what plume's features cost.
//
// Usage: node dist/bench/bare-node.js --port 8080 --root /path/to/htdocs
//        [--host 127.0.0.1] [--max-requests-per-socket 10000]

import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';

interface Entry {
  body: Buffer;
  headers: Record<string, string>;
}

// Same mapping as the mime.types file the benchmark writes for Apache.
const TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.htm': 'text/html',
  '.bin': 'application/octet-stream',
};

function arg(name: string, fallback: string | undefined): string {
  const i = process.argv.indexOf(name);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1] as string;
  if (fallback === undefined) {
    process.stderr.write(`bare-node: missing ${name}\n`);
    process.exit(2);
  }
  return fallback;
}

const port = Number(arg('--port', undefined));
const host = arg('--host', '127.0.0.1');
const root = arg('--root', undefined);
const maxPerSocket = Number(arg('--max-requests-per-socket', '10000'));

const files = new Map<string, Entry>();
/** Every file under the root, subdirectories included; dot files (.htaccess) are not served. */
function load(dir: string, urlPrefix: string): void {
  for (const name of fs.readdirSync(dir)) {
    if (name.startsWith('.')) continue;
    const full = path.join(dir, name);
    const st = fs.statSync(full);
    if (st.isDirectory()) {
      load(full, `${urlPrefix}${name}/`);
      continue;
    }
    if (!st.isFile()) continue;
    const body = fs.readFileSync(full);
    const type = TYPES[path.extname(name).toLowerCase()] ?? 'application/octet-stream';
    const mtime = st.mtime;
    files.set(urlPrefix + name, {
      body,
      headers: {
        // Roughly Apache's header set, so the response sizes are comparable.
        'Last-Modified': mtime.toUTCString(),
        ETag: `"${st.size.toString(16)}-${Math.floor(mtime.getTime() * 1000).toString(16)}"`,
        'Accept-Ranges': 'bytes',
        'Content-Length': String(body.length),
        'Content-Type': type,
      },
    });
  }
}
load(root, '/');

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const entry = files.get(q >= 0 ? url.slice(0, q) : url);
  if (entry === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) {
    const msg = 'Not Found\n';
    res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': String(msg.length) });
    res.end(msg);
    return;
  }
  res.writeHead(200, entry.headers);
  if (req.method === 'HEAD') res.end();
  else res.end(entry.body);
});
server.keepAliveTimeout = 5000; // Apache's KeepAliveTimeout 5
server.maxRequestsPerSocket = maxPerSocket; // MaxKeepAliveRequests
server.listen(port, host, () => {
  process.stdout.write(`bare-node listening on ${host}:${port}\n`);
});

for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
