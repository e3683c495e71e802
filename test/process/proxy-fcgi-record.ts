// Records what Apache 2.4.71 (Debian's apache2 with mod_proxy_fcgi/scgi/uwsgi) answers for
// the requests of proxy-fcgi-site.ts, in front of the same real backends the test starts, into
// test/fixtures/proxy-fcgi/apache-2.4.71.json, which test/process/proxy-fcgi.test.ts replays
// against plume. Run: node dist/test/process/proxy-fcgi-record.js

import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir, removeTempDir } from '../temp.js';
import { freePort, ROOT } from './process-lib.js';
import { FIXTURES, startFcgiEcho, startPhpFpm, startScgi, startUwsgi, type Backend } from './app-backends.js';
import { REQUESTS, ask, writeSite, type Answer, type SiteLayout, type SitePorts } from './proxy-fcgi-site.js';
import { startServerCommand } from './proxy-fcgi-server.js';

export const RECORDED = path.join(FIXTURES, 'apache-2.4.71.json');

async function main(): Promise<void> {
  const root = tempDir('plume-fcgi-rec-');
  fs.chmodSync(root, 0o755);
  const l: SiteLayout = { root, fpmSock: path.join(root, 'fpm.sock'), echoSock: path.join(root, 'echo.sock') };
  const p: SitePorts = { http: await freePort(), fpm: await freePort(), scgi: await freePort(), uwsgi: await freePort(), echo: await freePort(), dead: await freePort() };
  const backends: Backend[] = [];
  try {
    backends.push(await startPhpFpm(path.join(root, 'fpm'), p.fpm, l.fpmSock));
    backends.push(await startFcgiEcho(root, p.echo), await startFcgiEcho(root, l.echoSock));
    backends.push(await startScgi(root, p.scgi), await startUwsgi(root, p.uwsgi));
    fs.writeFileSync(path.join(root, 'httpd.conf'), writeSite(l, p, ROOT).join('\n') + '\n');
    const srv = await startServerCommand('/usr/sbin/apache2', root, p.http);
    try {
      const out: Record<string, Answer> = {};
      for (const r of REQUESTS) out[r.name] = await ask(p.http, r, l, p, path.join(root, 'logs/error_log'));
      fs.writeFileSync(RECORDED, JSON.stringify(out, null, 1) + '\n');
      console.log(`recorded ${Object.keys(out).length} answers into ${RECORDED}`);
    } finally {
      await srv.stop();
    }
  } finally {
    for (const b of backends) await b.stop();
    removeTempDir(root);
  }
}

if (process.argv[1]?.endsWith('proxy-fcgi-record.js')) await main();
