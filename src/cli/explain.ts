// `plume explain`: why a request is granted or denied. Reads the configuration like the
// server (-f -d -C -c -D as httpd), runs one request through the server's own lifecycle with
// a trace (src/cli/explain/run.ts), and prints the sections and .htaccess files merged, the
// effective Require tree and Order/Allow/Deny rules with file:line and verdicts, the decision
// with its status, and the error-log lines the server would write (src/cli/explain/report.ts).

import * as path from 'node:path';
import { ConfigError, StartupError } from '../server/config/errors.js';
import { runExplain, type ExplainRequest, type ExplainRun } from './explain/run.js';
import { buildReport, renderText } from './explain/report.js';

const HTTPD_ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const SERVER_CONFIG_FILE = 'conf/httpd.conf';

export const EXPLAIN_USAGE = `Usage: plume explain [-f file] [-d serverroot] [-C directive] [-c directive] [-D name]
                     URL [--ip address[:port]] [--user name --password secret]
                     [--method METHOD] [--header 'Name: value']... [--format text|json]
Explains how the server would decide the request for URL (http://host[:port]/path?query,
or /path for the main server): the sections and .htaccess files merged, the Require tree
and Order/Allow/Deny rules with file:line and each verdict, the resulting status and the
error-log lines. The server's own code decides; nothing is served or written.
  --ip        client address (default 127.0.0.1; port 50000 unless given)
  --local-ip  address the request arrived on (default: the URL's host if an address,
              else the Listen address for the URL's port, else 127.0.0.1)
  --user/--password  Basic credentials (an Authorization header)
  --format    text (default) or json
`;

interface Options {
  req: ExplainRequest;
  format: 'text' | 'json';
}

function parseClient(v: string): { ip: string; port: number } | undefined {
  const v6 = /^\[([^\]]+)\](?::([0-9]+))?$/.exec(v);
  if (v6) return { ip: v6[1]!, port: v6[2] !== undefined ? Number(v6[2]) : 50000 };
  const v4 = /^([0-9.]+)(?::([0-9]+))?$/.exec(v);
  if (v4) return { ip: v4[1]!, port: v4[2] !== undefined ? Number(v4[2]) : 50000 };
  if (v.includes(':')) return { ip: v, port: 50000 };
  return undefined;
}

function parse(argv: readonly string[]): Options | string {
  let serverRoot: string | undefined;
  let configFile: string | undefined;
  const defines: string[] = [];
  const pre: string[] = [];
  const post: string[] = [];
  let url: string | undefined;
  let client = { ip: '127.0.0.1', port: 50000 };
  let localIp: string | undefined;
  let user: string | undefined;
  let password: string | undefined;
  let method = 'GET';
  const headers: [string, string][] = [];
  let format: 'text' | 'json' = 'text';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string | undefined => {
      const eq = a.indexOf('=');
      if (a.startsWith('--') && eq > 0) return a.slice(eq + 1);
      if (/^-[fdCcD]./.test(a)) return a.slice(2);
      return argv[++i];
    };
    const name = a.startsWith('--') && a.includes('=') ? a.slice(0, a.indexOf('=')) : /^-[fdCcD]./.test(a) ? a.slice(0, 2) : a;
    switch (name) {
      case '-h': case '--help': return '';
      case '-f': configFile = value(); if (configFile === undefined) return 'option requires an argument -- f'; break;
      case '-d': serverRoot = value(); if (serverRoot === undefined) return 'option requires an argument -- d'; break;
      case '-C': { const v = value(); if (v === undefined) return 'option requires an argument -- C'; pre.push(v); break; }
      case '-c': { const v = value(); if (v === undefined) return 'option requires an argument -- c'; post.push(v); break; }
      case '-D': { const v = value(); if (v === undefined) return 'option requires an argument -- D'; defines.push(v); break; }
      case '--ip': {
        const v = value();
        const c = v === undefined ? undefined : parseClient(v);
        if (!c) return `--ip needs an IP address, optionally with :port (got ${v ?? 'nothing'})`;
        client = c;
        break;
      }
      case '--local-ip': localIp = value(); if (localIp === undefined) return '--local-ip needs an address'; break;
      case '--user': user = value(); if (user === undefined) return '--user needs a name'; break;
      case '--password': password = value(); if (password === undefined) return '--password needs a value'; break;
      case '--method': { const v = value(); if (v === undefined || v === '') return '--method needs a method'; method = v; break; }
      case '--header': {
        const v = value();
        const colon = v?.indexOf(':') ?? -1;
        if (v === undefined || colon <= 0) return `--header needs 'Name: value' (got ${v ?? 'nothing'})`;
        headers.push([v.slice(0, colon).trim(), v.slice(colon + 1).trim()]);
        break;
      }
      case '--format': {
        const v = value();
        if (v !== 'text' && v !== 'json') return '--format is text or json';
        format = v;
        break;
      }
      default:
        if (a.startsWith('-') && a !== '-') return `unknown option ${a}`;
        if (url !== undefined) return `one URL only (got ${url} and ${a})`;
        url = a;
    }
  }
  if (url === undefined) return 'a URL is required';
  if (password !== undefined && user === undefined) return '--password needs --user';
  const root = path.resolve(serverRoot ?? HTTPD_ROOT);
  const cf = configFile ?? SERVER_CONFIG_FILE;
  return {
    format,
    req: {
      serverRoot: root, configFile: path.isAbsolute(cf) ? cf : path.join(root, cf),
      defines, preDirectives: pre, postDirectives: post, url, method,
      clientIp: client.ip, clientPort: client.port, localIp, user, password, headers,
    },
  };
}

export async function explainMain(argv: string[]): Promise<number> {
  const o = parse(argv);
  if (typeof o === 'string') {
    process.stderr.write((o !== '' ? `plume explain: ${o}\n` : '') + EXPLAIN_USAGE);
    return o === '' ? 0 : 1;
  }
  let run: ExplainRun;
  try {
    run = await runExplain(o.req);
  } catch (e) {
    if (e instanceof ConfigError) { process.stderr.write(e.format('plume')); return 1; }
    if (e instanceof StartupError) { process.stderr.write(e.text.endsWith('\n') ? e.text : e.text + '\n'); return e.exitCode; }
    process.stderr.write(`plume explain: ${(e as Error).message}\n`);
    return 1;
  }
  const report = buildReport(run, o.req.url);
  process.stdout.write(o.format === 'json' ? JSON.stringify(report, (_k, v: unknown) => (v === undefined ? null : v), 2) + '\n' : renderText(report));
  return 0;
}
