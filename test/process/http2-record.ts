// Records what Apache 2.4.71 with mod_http2 answers to http2-scenario.ts's requests into
// test/fixtures/http2/apache.json (run by hand: `node dist/test/process/http2-record.js`;
// needs apache2-bin). http2.test.ts compares bin/plume's answers with it.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { makeSite, freePort, waitFor } from './process-lib.js';
import { writeFiles, siteConfig, REQUESTS, RECORDED, h2Request, connectH2c, connectTls, upgradeWithNghttp, type H2Answer } from './http2-scenario.js';

async function main(): Promise<void> {
  const tlsPort = await freePort();
  const site = await makeSite('h2rec');
  writeFiles(site.dir);
  site.write(siteConfig(site.dir, tlsPort));
  // httpd has mod_unixd built in.
  fs.writeFileSync(site.conf, fs.readFileSync(site.conf, 'utf8').replace(/^LoadModule unixd_module.*\n/m, ''));
  const start = spawnSync('/usr/sbin/apache2', ['-d', site.dir, '-f', site.conf, '-k', 'start'], { encoding: 'utf8' });
  if (start.status !== 0) throw new Error(start.stderr);
  try {
    await waitFor('apache', () => fs.existsSync(site.pidFile));
    const out: Record<string, { status: number; fields: H2Answer['fields']; body?: string }> = {};
    for (const [name, connect, port] of [['h2c', connectH2c, site.port], ['h2', connectTls, tlsPort]] as const) {
      const s = await connect(port);
      for (const req of REQUESTS) {
        const a = await h2Request(s, req, port);
        out[`${name}:${req.id}`] = { status: a.status, fields: a.fields, body: req.id === 'deflate' || req.id === 'static' ? undefined : a.text };
      }
      s.close();
    }
    const up = upgradeWithNghttp(site.port, '/index.html');
    if (up !== null) out['upgrade:static'] = { status: up.status, fields: up.fields };
    out['log'] = { status: 0, fields: fs.readFileSync(path.join(site.dir, 'logs/h2_log'), 'utf8').trim().split('\n').map((l) => ['line', l] as const) };
    fs.mkdirSync(path.dirname(RECORDED), { recursive: true });
    fs.writeFileSync(RECORDED, JSON.stringify(out, null, 1) + '\n');
    process.stdout.write(`recorded ${Object.keys(out).length} answers into ${RECORDED}\n`);
  } finally {
    spawnSync('/usr/sbin/apache2', ['-d', site.dir, '-f', site.conf, '-k', 'stop']);
    await waitFor('apache to stop', () => !fs.existsSync(site.pidFile)).catch(() => undefined);
    site.remove();
  }
}

void main();
