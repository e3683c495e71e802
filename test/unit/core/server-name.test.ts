// ap_get_server_name / ap_get_server_port / ap_construct_url and FileETag parsing.
// Measured on Apache 2.4.71 (mod_dir slash redirects and ServerSignature On, listening on
// 127.0.0.1:28421): Host "foo" gives http://foo/dir/ and "Port 80"; Host "foo:81" gives
// http://foo:81/dir/; "foo:80" gives http://foo/dir/; with UseCanonicalName On the ServerName
// without its port gives http://localhost/... whatever the Host port; a vhost without
// ServerName on 127.0.0.1:28423 gives http://localhost:28423/... (the address's port).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { catalogue } from '../../../src/modules/index.js';
import { core } from '../../../src/server/core/core-module.js';
import { createCoreDirConfig, type CoreDirConfig, ETAG_ALL, ETAG_INODE, ETAG_MTIME, ETAG_NONE, ETAG_SIZE, ETAG_UNSET, mergeCoreDirConfig } from '../../../src/server/core/config.js';
import { constructUrl, getServerName, getServerPort } from '../../../src/server/core/server-name.js';
import { Request, type ConnRec } from '../../../src/server/request/request.js';
import type { Runtime } from '../../../src/server/runtime.js';
import { ServerRec } from '../../../src/server/server-rec.js';
import { Scope, makeCtx } from '../mappers/helpers.js';

void catalogue; // assigns the core module its configuration index

function request(opts: { host?: string; port?: number; ucn?: 'on' | 'off' | 'dns'; physical?: boolean; serverName?: string; serverPort?: number; localPort?: number; scheme?: string }): Request {
  const conn = { id: 1, remoteIp: '127.0.0.1', remotePort: 50000, localIp: '127.0.0.1', localPort: opts.localPort ?? 28421 } as unknown as ConnRec;
  const s = new ServerRec(0, false, '/srv/plume/httpd.conf', 0);
  s.serverHostname = opts.serverName;
  s.port = opts.serverPort ?? 0;
  s.scheme = opts.scheme;
  const r = new Request({} as Runtime, conn, s);
  const c = createCoreDirConfig(undefined);
  c.useCanonicalName = opts.ucn;
  c.useCanonicalPhysicalPort = opts.physical === undefined ? undefined : opts.physical ? 'on' : 'off';
  const vec: unknown[] = [];
  vec[core.index] = c;
  r.perDirConfig = vec;
  r.hostname = opts.host ?? '';
  r.parsedPort = opts.port ?? 0;
  return r;
}

test('UseCanonicalName Off: the Host header name and port, else the default port (not the local one)', () => {
  assert.equal(constructUrl(request({ host: 'foo', serverName: 'localhost' }), '/dir/'), 'http://foo/dir/');
  assert.equal(getServerPort(request({ host: 'foo', serverName: 'localhost' })), 80);
  assert.equal(constructUrl(request({ host: 'foo', port: 81, serverName: 'localhost' }), '/dir/'), 'http://foo:81/dir/');
  assert.equal(constructUrl(request({ host: 'foo', port: 80, serverName: 'localhost' }), '/dir/'), 'http://foo/dir/');
  // No Host at all: the server's name; a ServerName port counts.
  assert.equal(constructUrl(request({ serverName: 'localhost' }), '/x'), 'http://localhost/x');
  assert.equal(constructUrl(request({ serverName: 'localhost', serverPort: 8080 }), '/x'), 'http://localhost:8080/x');
  // A vhost without ServerName has its address's port.
  assert.equal(constructUrl(request({ host: 'foo', serverName: 'localhost', serverPort: 28423, localPort: 28423 }), '/x'), 'http://foo:28423/x');
});

test('UseCanonicalName On: ServerName and its port (default when none), the Host port ignored', () => {
  assert.equal(constructUrl(request({ ucn: 'on', host: 'foo', port: 81, serverName: 'named.example' }), '/dir/'), 'http://named.example/dir/');
  assert.equal(getServerName(request({ ucn: 'on', host: 'foo', serverName: 'named.example' })), 'named.example');
  assert.equal(constructUrl(request({ ucn: 'on', host: 'foo', serverName: 'localhost', serverPort: 28423 }), '/x'), 'http://localhost:28423/x');
});

test('UseCanonicalPhysicalPort On uses the connection port when no other is known', () => {
  assert.equal(getServerPort(request({ host: 'foo', physical: true, localPort: 28421 })), 28421);
  assert.equal(getServerPort(request({ host: 'foo', port: 81, physical: true, localPort: 28421 })), 81);
  assert.equal(getServerPort(request({ ucn: 'on', physical: true, serverName: 'x', localPort: 28421 })), 28421);
  assert.equal(getServerPort(request({ ucn: 'on', physical: true, serverName: 'x', serverPort: 8443, localPort: 28421 })), 8443);
});

test('https ServerName: default port 443 left out; IPv6 literals in brackets', () => {
  assert.equal(constructUrl(request({ host: 'foo', scheme: 'https', serverName: 'x' }), '/a'), 'https://foo/a');
  assert.equal(constructUrl(request({ host: 'foo', port: 80, scheme: 'https', serverName: 'x' }), '/a'), 'https://foo:80/a');
  assert.equal(constructUrl(request({ ucn: 'on', serverName: '::1' }), '/a'), 'http://[::1]/a');
});

function fileEtag(args: string, path = '/x'): CoreDirConfig | string {
  const { ctx } = makeCtx();
  const s = new Scope(ctx, core, { path });
  const err = s.run(`FileETag ${args}`);
  return err ?? s.dir;
}

test('FileETag: absolute keywords set, +/- adjust, None/All only absolute (httpd set_etag_bits)', () => {
  const bits = (a: string): [number, number, number] => {
    const c = fileEtag(a);
    assert.ok(typeof c !== 'string', String(c));
    return [c.etagBits, c.etagAdd, c.etagRemove];
  };
  assert.deepEqual(bits('None'), [ETAG_NONE, ETAG_UNSET, ETAG_UNSET]);
  assert.deepEqual(bits('Size'), [ETAG_SIZE, ETAG_UNSET, ETAG_UNSET]);
  assert.deepEqual(bits('MTime Size'), [ETAG_MTIME | ETAG_SIZE, ETAG_UNSET, ETAG_UNSET]);
  assert.deepEqual(bits('LastModified LMTime'), [ETAG_MTIME, ETAG_UNSET, ETAG_UNSET]);
  assert.deepEqual(bits('All -INode'), [ETAG_ALL, ETAG_UNSET, ETAG_INODE]);
  assert.deepEqual(bits('+INode -Size'), [ETAG_UNSET, ETAG_INODE, ETAG_SIZE]);
  // An absolute keyword after relative ones drops them.
  assert.deepEqual(bits('-INode Size'), [ETAG_SIZE, ETAG_UNSET, ETAG_UNSET]);
  assert.equal(fileEtag('+None'), "FileETag keyword 'None' cannot be used with '+' or '-'");
  assert.equal(fileEtag('-All'), "FileETag keyword 'All' cannot be used with '+' or '-'");
  assert.equal(fileEtag('Bogus'), "Unknown keyword 'Bogus' for FileETag directive");
  // "All -INode" under a section: MTime Size.
  const parent = fileEtag('All', '/');
  const child = fileEtag('All -INode');
  assert.ok(typeof parent !== 'string' && typeof child !== 'string');
  const m = mergeCoreDirConfig(parent, child);
  assert.equal((m.etagBits & ~m.etagRemove) | m.etagAdd, ETAG_MTIME | ETAG_SIZE);
});
