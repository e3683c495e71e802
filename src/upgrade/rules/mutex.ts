// The mutex directives 2.4 removed (AcceptMutex, LockFile, SSLMutex, SSLStaplingMutex,
// RewriteLock, WatchdogMutexPath) become Mutex lines naming the same mechanism and directory.
// 2.2 named lock files, 2.4 names the directory they go in.

import * as path from 'node:path';
import type { Rule } from '../model.js';
import { textOf, words, type Ref, type Upgrade } from '../engine.js';

const FILE_BASED = new Set(['fcntl', 'flock', 'file']);

/** A 2.2 mechanism string ("fcntl", "file:/x/lock", "sem", "yes"...) as a 2.4 Mutex mechanism. */
export function mutexMechanism(v: string): string | undefined {
  const m = /^([a-z]+)(?::(.*))?$/i.exec(v.trim());
  if (!m) return undefined;
  let mech = m[1]!.toLowerCase();
  if (mech === 'yes') mech = 'default';
  if (mech === 'no') mech = 'none';
  if (!['default', 'none', 'flock', 'fcntl', 'file', 'posixsem', 'sysvsem', 'sem', 'pthread'].includes(mech)) return undefined;
  if (m[2] !== undefined && m[2] !== '') {
    if (!FILE_BASED.has(mech)) return undefined;
    return `${mech}:${path.dirname(m[2])}`;
  }
  return mech;
}

function mutex(u: Upgrade): void {
  const rule = 'mutex.replace';
  const report = (r: Ref, after: string, what: string): void => {
    u.report(rule, r, 'change', `${r.node.name} is removed in 2.4; the Mutex directive configures ${what}.`, textOf(r.node), after);
  };
  const manual = (r: Ref, why: string): void => {
    u.report(rule, r, 'manual', `${r.node.name} is removed in 2.4 (Mutex replaces it): ${why}`, textOf(r.node), 'Delete the line, or write the equivalent Mutex line by hand.');
  };

  // The accept mutex: AcceptMutex gives the mechanism, LockFile the lock file's location.
  const accepts = u.named('AcceptMutex');
  const lockFiles = u.named('LockFile');
  const accept = accepts[accepts.length - 1];
  const lock = lockFiles[lockFiles.length - 1];
  if (accept || lock) {
    let mech = accept ? mutexMechanism(words(accept.node)[0] ?? '') : 'default';
    if (mech !== undefined && lock) {
      const file = words(lock.node)[0] ?? '';
      const dir = path.dirname(file);
      const base = mech.split(':')[0]!;
      mech = FILE_BASED.has(base) ? `${base}:${dir}` : base === 'default' ? `file:${dir}` : mech;
    }
    if (mech === undefined) {
      manual(accept!, `the mechanism "${words(accept!.node)[0]}" is not one 2.4 knows.`);
    } else {
      const after = `Mutex ${mech} mpm-accept`;
      const first = [accept, lock].filter((x): x is Ref => x !== undefined).sort((a, b) => a.node.line - b.node.line)[0]!;
      for (const r of [...accepts, ...lockFiles]) {
        if (r === first) continue;
        u.remove(r, rule, `merged into "${after}"`);
        report(r, after, 'the accept mutex');
      }
      u.replace(first, [after], rule);
      report(first, after, 'the accept mutex (mpm-accept)');
    }
  }

  const simple: [string, string, string][] = [
    ['SSLMutex', 'ssl-cache', 'the SSL session cache mutex (ssl-cache)'],
    ['SSLStaplingMutex', 'ssl-stapling', 'the OCSP stapling mutex (ssl-stapling)'],
  ];
  for (const [name, mutexName, what] of simple) {
    for (const r of u.named(name)) {
      const mech = mutexMechanism(words(r.node)[0] ?? '');
      if (mech === undefined) { manual(r, `the mechanism "${words(r.node)[0]}" is not one 2.4 knows.`); continue; }
      const after = `Mutex ${mech} ${mutexName}`;
      u.replace(r, [after], rule);
      report(r, after, what);
    }
  }
  for (const r of u.named('RewriteLock')) {
    const after = `Mutex file:${path.dirname(words(r.node)[0] ?? '.')} rewrite-map`;
    u.replace(r, [after], rule);
    report(r, after, 'the RewriteMap program mutex (rewrite-map)');
  }
  for (const r of u.named('WatchdogMutexPath')) {
    const after = `Mutex file:${words(r.node)[0] ?? '.'} watchdog-callback`;
    u.replace(r, [after], rule);
    report(r, after, 'the watchdog mutex (watchdog-callback)');
  }
}

export const mutexRules: Rule[] = [
  {
    id: 'mutex.replace',
    title: 'AcceptMutex, LockFile, SSLMutex, SSLStaplingMutex, RewriteLock, WatchdogMutexPath become Mutex',
    spec: ['2.3 Mutex'],
    run: mutex,
  },
];
