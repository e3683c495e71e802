// Versioning (specification 9): reported once per configuration that needed changes.

import type { Rule } from '../model.js';
import type { Upgrade } from '../engine.js';

function versioning(u: Upgrade): void {
  if (!u.findings.some((f) => f.severity !== 'note')) return;
  u.report('versioning.rebuild', { doc: u.main, line: 0 }, 'note',
    'Moving from 2.2 to 2.4: every module loaded must be built for 2.4 (third-party ones are listed as modules.third-party); '
    + 'when building httpd from source, the 2.2 configure line kept in build/config.nice can be reused in most cases, though some defaults differ '
    + '(modules are built as DSOs and only a basic set is loaded by the shipped httpd.conf). Coming from 2.0, apply the 2.0 -> 2.2 changes first.',
    '', '');
}

export const versioningRules: Rule[] = [
  { id: 'versioning.rebuild', title: 'Rebuild modules; reuse config.nice; 2.0 users read the 2.2 notes', spec: ['1 compile-time changes', '9.2 recompiled', '9.3 config.nice', '9.5 from 2.0'], run: versioning },
];
