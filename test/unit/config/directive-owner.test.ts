// A directive two loaded modules define (ScriptLog: mod_cgi and mod_cgid; HeartbeatStorage:
// mod_lbmethod_heartbeat and mod_heartmonitor) goes to the module loaded last, as httpd's
// ap_add_module (newest module at the head of the list) and ap_find_command_in_modules do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigContext } from '../../../src/server/config/context.js';
import { catalogue } from '../../../src/modules/index.js';

function ownerAfterLoading(symbols: readonly string[], directive: string): string | undefined {
  const ctx = new ConfigContext({
    argv0: 'apache2', serverRoot: '/tmp', configFile: '/tmp/test.conf',
    defines: [], preDirectives: [], postDirectives: [],
  });
  for (const m of catalogue.builtIn) ctx.activate(m);
  for (const s of symbols) {
    const m = catalogue.find(s);
    assert.ok(m, s);
    ctx.activate(m);
  }
  return ctx.directives.get(directive.toLowerCase())?.module.decl.name;
}

test('the module loaded last owns a directive two modules define', () => {
  assert.equal(ownerAfterLoading(['cgi_module', 'cgid_module'], 'ScriptLog'), 'cgid_module');
  assert.equal(ownerAfterLoading(['cgid_module', 'cgi_module'], 'ScriptLog'), 'cgi_module');
  assert.equal(ownerAfterLoading(['lbmethod_heartbeat_module', 'heartmonitor_module'], 'HeartbeatStorage'), 'heartmonitor_module');
  assert.equal(ownerAfterLoading(['heartmonitor_module', 'lbmethod_heartbeat_module'], 'HeartbeatStorage'), 'lbmethod_heartbeat_module');
});
