// The upgrade assistant's vocabulary: findings, rules and options (plume upgrade, httpd
// 2.2 -> 2.4). The rules themselves live in rules/, one file per family.

import type { Upgrade } from './engine.js';

/** change: the assistant rewrote the configuration; manual: the operator must act;
 *  note: nothing to rewrite, but the behaviour differs from 2.2. */
export type Severity = 'change' | 'manual' | 'note';

export interface Finding {
  /** The file as given or found (Include, --htaccess). */
  file: string;
  /** Line in the original file (the first line of the construct); 0 for the file as a whole. */
  line: number;
  rule: string;
  severity: Severity;
  /** What 2.2 did and what 2.4 does. */
  message: string;
  /** The original text the finding is about. */
  before: string;
  /** The rewrite made, or the manual step needed. */
  after: string;
}

export interface Rule {
  /** Stable id, "family.name"; listed in docs/upgrade.md. */
  readonly id: string;
  /** One line for the rule table. */
  readonly title: string;
  /** The specification rows this rule answers (section and row key), for the docs table. */
  readonly spec: readonly string[];
  readonly run: (u: Upgrade) => void;
}

export interface UpgradeOptions {
  /** Mark each rewrite with a "# plume upgrade: <rule>" comment (--no-comments turns it off). */
  readonly comments: boolean;
  /** Write 2.2's value where the configuration relied on a default that changed. */
  readonly keep22Defaults: boolean;
  /** Where to look for .htaccess files: undefined (or []) every directory 2.2 reads them in
   *  (document roots, Alias targets, <Directory> paths and the directories above them); else
   *  only under these directories; false: none. Either way only the files 2.2 reads (their
   *  directory's AllowOverride is not None) are upgraded. */
  readonly htaccess: readonly string[] | undefined | false;
  /** Overrides the ServerRoot directive for resolving relative paths. */
  readonly serverRoot: string | undefined;
  /** The MPM 2.2 was built with (2.4 loads it as a module); default prefork. */
  readonly mpm: 'prefork' | 'worker' | 'event';
  /** Rules to skip (ids or family prefixes ending in "."); used by the corpus recorder. */
  readonly skip: readonly string[];
  /** Names defined with -D: <IfDefine> follows them. */
  readonly defines: readonly string[];
  /** The modules plume has (module symbols), asked of its catalogue when the command runs;
   *  undefined: not known (the modules.plume-support rule then says nothing). */
  readonly plumeModules?: ReadonlySet<string>;
}

export const DEFAULT_OPTIONS: UpgradeOptions = {
  comments: true, keep22Defaults: false, htaccess: undefined, serverRoot: undefined, mpm: 'prefork', skip: [], defines: [],
};

/** The marker comment written above each rewrite. */
export const MARKER = '# plume upgrade:';

/** A configuration that cannot be read: reported with file and line, exit status 2. */
export class UpgradeParseError extends Error {
  constructor(readonly file: string, readonly line: number, readonly detail: string) {
    super(`${file}:${line}: ${detail}`);
  }
}
