// mod_unixd: User/Group/ChrootDir/Suexec errors and `-D DUMP_RUN_CFG` lines as apache2 2.4.71
// prints them, and dropPrivileges' system calls and alert messages (measured by running
// apache2 -X as root with each setting and reading /proc/PID/status and the error log).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { configure, errorOf } from './helpers.js';
import { dropPrivileges, dumpRunConfig, idFromNumber, lookupName, unixdConfig, type PrivilegeOps } from '../../../src/modules/arch/unix/mod_unixd.js';

const ROOT_ERROR = 'Error:\tApache has not been designed to serve pages while\n\trunning as root.  There are known race conditions that\n\twill allow any local user to read any file on the system.\n\tIf you still desire to serve pages as root then\n\tadd -DBIG_SECURITY_HOLE to the CFLAGS env variable\n\tand then rebuild the server.\n\tIt is strongly suggested that you instead modify the User\n\tdirective in your httpd.conf file to list a non-root\n\tuser.\n';

test('directive errors are httpd\'s', () => {
  assert.equal(errorOf('User root'), ROOT_ERROR);
  assert.equal(errorOf('User #abc'), ROOT_ERROR);
  assert.equal(errorOf('User #0'), ROOT_ERROR);
  assert.equal(errorOf('User nosuchuser-plume'), 'AH00543: apache2: bad user name nosuchuser-plume');
  assert.equal(errorOf('Group nosuchgroup-plume'), 'AH00544: apache2: bad group name nosuchgroup-plume');
  assert.equal(errorOf('User www-data www-data'), 'User takes one argument, Effective user id for this server');
  assert.equal(errorOf('User'), 'User takes one argument, Effective user id for this server');
  assert.equal(errorOf('User nobody', { vhost: true }), 'User cannot occur within <VirtualHost> section');
  assert.equal(errorOf('ChrootDir /nonexistent-plume'), 'ChrootDir must be a valid directory');
  assert.equal(errorOf('ChrootDir relative-plume-nope'), 'ChrootDir must be a valid directory');
  assert.equal(errorOf('ChrootDir /tmp'), '');
  assert.equal(errorOf('Suexec foo'), 'Suexec must be On or Off');
  assert.equal(errorOf('Suexec Off'), '');
  if (!fs.existsSync('/usr/lib/apache2/suexec')) {
    assert.equal(errorOf('Suexec On'), "suEXEC isn't supported: Missing suexec binary /usr/lib/apache2/suexec");
  }
});

test('#ids are read as atoi and cast to a 32-bit id', () => {
  assert.equal(idFromNumber('-1'), 4294967295);
  assert.equal(idFromNumber('1234'), 1234);
  assert.equal(idFromNumber('12abc'), 12);
  assert.equal(idFromNumber(''), 0);
  assert.equal(idFromNumber('abc'), 0);
});

const noRoot = process.geteuid?.() === 0 ? '' : ' not_used';

test('DUMP_RUN_CFG lines', () => {
  assert.deepEqual(dumpRunConfig(configure([]).ctx), [
    `User: name="#-1" id=4294967295${noRoot}`,
    `Group: name="#-1" id=4294967295${noRoot}`,
  ]);
  assert.deepEqual(dumpRunConfig(configure(['User #1234', 'Group #4321']).ctx), [
    `User: name="#1234" id=1234${noRoot}`,
    `Group: name="#4321" id=4321${noRoot}`,
  ]);
  assert.deepEqual(dumpRunConfig(configure(['User #12abc', 'Group #', 'ChrootDir /tmp']).ctx), [
    `User: name="#12abc" id=12${noRoot}`,
    `Group: name="#" id=0${noRoot}`,
    `ChrootDir: "/tmp"${noRoot}`,
  ]);
  const daemon = lookupName('passwd', 'daemon');
  if (daemon !== undefined) {
    assert.deepEqual(dumpRunConfig(configure(['User daemon']).ctx)[0], `User: name="daemon" id=${daemon}${noRoot}`);
  }
});

function fakeOps(euid: number, users: Record<number, string>, failSetgid = false): PrivilegeOps & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    geteuid: () => euid,
    setgid: (gid) => {
      calls.push(`setgid ${gid}`);
      if (failSetgid || gid === 4294967295) throw Object.assign(new Error('setgid'), { code: 'EINVAL' });
    },
    initgroups: (u, gid) => { calls.push(`initgroups ${u} ${gid}`); },
    setuid: (uid) => { calls.push(`setuid ${uid}`); },
    getpwuid: (uid) => users[uid],
  };
}

test('dropPrivileges as root: setgid, initgroups with the user\'s name, setuid', () => {
  const c = configure(['User #65534', 'Group #4321']);
  const ops = fakeOps(0, { 65534: 'nobody' });
  const res = dropPrivileges(c.ctx, ops);
  assert.deepEqual(res, { ok: true, messages: [] });
  assert.deepEqual(ops.calls, ['setgid 4321', 'initgroups nobody 4321', 'setuid 65534']);
});

test('dropPrivileges failures are httpd\'s alerts, and stop before setuid', () => {
  const def = configure([]);
  const ops = fakeOps(0, {});
  assert.deepEqual(dropPrivileges(def.ctx, ops).messages,
    ["AH02155: getpwuid: couldn't determine user name from uid 4294967295, you probably need to modify the User directive"]);
  assert.deepEqual(ops.calls, []);
  assert.deepEqual(def.log, ["[unixd:alert] AH02155: getpwuid: couldn't determine user name from uid 4294967295, you probably need to modify the User directive"]);

  const noGroup = configure(['User #33']);
  const ops2 = fakeOps(0, { 33: 'www-data' });
  const res = dropPrivileges(noGroup.ctx, ops2);
  assert.equal(res.ok, false);
  assert.deepEqual(res.messages, ['(22)Invalid argument: AH02156: setgid: unable to set group id to Group 4294967295']);
  assert.deepEqual(ops2.calls, ['setgid 4294967295']);
});

test('dropPrivileges when not root does nothing, except refuse a ChrootDir', () => {
  const ops = fakeOps(1000, {});
  assert.deepEqual(dropPrivileges(configure(['User #65534', 'Group #65534']).ctx, ops), { ok: true, messages: [] });
  assert.deepEqual(ops.calls, []);
  assert.deepEqual(dropPrivileges(configure(['ChrootDir /tmp']).ctx, ops).messages, ['AH02158: Cannot chroot when not started as root']);
});

test('unixdConfig defaults', () => {
  const u = unixdConfig(configure([]).ctx);
  assert.equal(u.userName, '#-1');
  assert.equal(u.groupId, 4294967295);
  assert.equal(u.chrootDir, undefined);
  assert.equal(unixdConfig(configure(['Suexec Off']).ctx).suexecEnabled, false);
});
