// The parent's side of the scoreboard (src/mpm/scoreboard.ts): created once when the parent
// starts, told about every child slot's changes, a new generation on each restart, closed at
// exit. Workers find it through the environment the parent sets at fork (PLUME_SCOREBOARD,
// PLUME_CHILD_SLOT, PLUME_GENERATION) and attach in child_init, after dropping privileges: as
// root the file is handed to User/Group, so that they can write their records.

import * as fs from 'node:fs';
import type { ConfigContext } from '../server/config/context.js';
import { unixdConfig } from '../modules/arch/unix/mod_unixd.js';
import { createScoreboard, type ParentScoreboard } from './scoreboard.js';

export function openParentScoreboard(ctx: ConfigContext, opts: { serverLimit: number; slotsPerChild: number }): ParentScoreboard | undefined {
  let sb: ParentScoreboard;
  try {
    sb = createScoreboard(ctx, opts);
  } catch {
    // No table (an unwritable runtime directory): the server runs, mod_status has nothing to show.
    return undefined;
  }
  if (process.geteuid?.() === 0 && ctx.isLoaded('unixd_module') && sb.path !== '') {
    const u = unixdConfig(ctx);
    if (u.userId !== 0xffffffff && u.groupId !== 0xffffffff) {
      try { fs.chownSync(sb.path, u.userId, u.groupId); } catch { /* workers will not attach */ }
    }
  }
  return sb;
}
