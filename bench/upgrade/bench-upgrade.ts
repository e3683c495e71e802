/**
 * plume upgrade benchmark: a generated 2.2 configuration of about 5,000 lines with 500
 * virtual hosts (each with its own <Directory>, <Location> and access rules) is analysed and
 * rewritten; the time is printed. Target: under 2 seconds.
 *
 *   npm run build && node dist/bench/upgrade/bench-upgrade.js [vhosts]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { upgradeConfiguration } from '../../src/upgrade/cli.js';
import { DEFAULT_OPTIONS } from '../../src/upgrade/model.js';

export function generate(root: string, vhosts: number): string {
  const out: string[] = [
    '# Generated 2.2 configuration for the upgrade benchmark',
    `ServerRoot "${root}"`,
    'Listen 80',
    'LoadModule authz_host_module modules/mod_authz_host.so',
    'LoadModule authn_file_module modules/mod_authn_file.so',
    'LoadModule auth_basic_module modules/mod_auth_basic.so',
    'LoadModule authz_user_module modules/mod_authz_user.so',
    'LoadModule log_config_module modules/mod_log_config.so',
    'User daemon',
    'Group daemon',
    'KeepAlive 5',
    'MaxClients 150',
    'DefaultType text/plain',
    'NameVirtualHost *:80',
    '<Directory />',
    '    Order deny,allow',
    '    Deny from all',
    '</Directory>',
    '<FilesMatch "^\\.ht">',
    '    Order allow,deny',
    '    Deny from all',
    '</FilesMatch>',
    '',
  ];
  for (let i = 0; i < vhosts; i++) {
    // Ten lines a host: every other one with its own access rules, the others with a login.
    out.push(`<VirtualHost *:80>`, `    ServerName site${i}.example.com`, `    DocumentRoot /srv/site${i}`);
    if (i % 2 === 0) {
      out.push(`    <Directory /srv/site${i}>`, '        Order allow,deny', '        Allow from all', `        Deny from 10.${i % 256}.0.0/16`, '    </Directory>');
    } else {
      out.push('    <Location /admin>', '        Order deny,allow', '        Deny from all', '        Allow from 192.168.0.0/16', '    </Location>');
    }
    out.push('</VirtualHost>', '');
  }
  return out.join('\n') + '\n';
}

const vhosts = Number(process.argv[2] ?? 500);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-upgrade-bench-'));
const file = path.join(root, 'httpd.conf');
const text = generate(root, vhosts);
fs.writeFileSync(file, text);
const lines = text.split('\n').length - 1;
const runs: number[] = [];
let findings = 0;
for (let i = 0; i < 3; i++) {
  const t0 = process.hrtime.bigint();
  const u = upgradeConfiguration(file, { ...DEFAULT_OPTIONS });
  for (const d of u.changedDocs()) d.text();
  runs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  findings = u.findings.length;
}
fs.rmSync(root, { recursive: true, force: true });
const best = Math.min(...runs);
process.stdout.write(`plume upgrade: ${lines} lines, ${vhosts} virtual hosts, ${findings} findings: ${runs.map((r) => r.toFixed(0)).join(' / ')} ms (best ${best.toFixed(0)} ms; target < 2000 ms)\n`);
process.exitCode = best < 2000 ? 0 : 1;
