// mod_dav_lock (modules/dav/lock): the "generic" lock provider of mod_dav, for repositories
// that keep no locks of their own: DAVGenericLockDB names its database per directory or
// location. mod_dav asks it when the repository of a request has no lock store (mod_dav_fs
// always has its own, as in httpd). The database is the same JSON file format as DavLockDB's
// (DIFFERENCE: httpd's is a DBM file; docs/differences.md).

import { ACCESS_CONF, MODULE_API_VERSION, defineModule, directive } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import type { DavLockProvider, DavLockStore } from './api.js';
import { lockStore } from './lockdb.js';

interface LockDirConfig { lockDb: string | undefined }

function davGenericLockDb(cmd: CmdParms<undefined, LockDirConfig>, arg: string): string | undefined {
  cmd.dir.lockDb = cmd.serverRootRelative(arg);
  return undefined;
}

const provider: DavLockProvider = {
  open(r: Request): DavLockStore | undefined {
    const file = self.dir(r).lockDb;
    return file === undefined ? undefined : lockStore(file);
  },
};

const self = defineModule<undefined, LockDirConfig>({
  name: 'dav_lock_module',
  source: 'mod_dav_lock.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ lockDb: undefined }),
  mergeDirConfig: (base, add) => ({ lockDb: add.lockDb ?? base.lockDb }),
  directives: [
    directive({ name: 'DAVGenericLockDB', args: 'TAKE1', where: ACCESS_CONF, help: 'specify a lock database', handler: davGenericLockDb }),
  ],
  providers: [{ group: 'dav_lock', name: 'generic', version: '0', provider }],
});

export default self;
