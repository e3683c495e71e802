// mod_userdir's home directory lookup (apr_uid_homepath_get from a passwd file, re-read when
// the file changes).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { homeOf } from '../../../src/modules/mappers/mod_userdir.js';

test('home directories from a passwd file, the first entry of a name winning, re-read on change', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-userdir-'));
  try {
    const file = path.join(dir, 'passwd');
    fs.writeFileSync(file, 'root:x:0:0:root:/root:/bin/sh\nbob:x:1000:1000:Bob,,,:/home/bob:/bin/bash\nbob:x:1001:1001::/elsewhere:/bin/sh\nbroken:x\n');
    assert.equal(homeOf('bob', file), '/home/bob');
    assert.equal(homeOf('root', file), '/root');
    assert.equal(homeOf('broken', file), undefined);
    assert.equal(homeOf('nobody-here', file), undefined);
    fs.writeFileSync(file, 'bob:x:1000:1000::/srv/bob:/bin/sh\ncarol:x:1002:1002::/home/carol:/bin/sh\n');
    assert.equal(homeOf('bob', file), '/srv/bob');
    assert.equal(homeOf('carol', file), '/home/carol');
    assert.equal(homeOf('bob', path.join(dir, 'missing')), undefined);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
