// Renamed directives (specification 2.1): MaxClients -> MaxRequestWorkers,
// MaxRequestsPerChild -> MaxConnectionsPerChild. 2.4 still accepts the old names; the
// assistant writes the new ones so the configuration reads as 2.4 documents it.

import type { Rule } from '../model.js';
import { textOf, type Upgrade } from '../engine.js';

function rename(u: Upgrade, rule: string, from: string, to: string, extra: string): void {
  for (const r of u.named(from)) {
    const before = textOf(r.node);
    const after = `${to} ${r.node.args}`;
    u.replace(r, [after], rule);
    u.report(rule, r, 'change', `${from} is called ${to} in 2.4 (the old name is still accepted).${extra}`, before, after);
  }
}

export const renamedRules: Rule[] = [
  {
    id: 'renamed.max-clients',
    title: 'MaxClients becomes MaxRequestWorkers',
    spec: ['2.1 MaxClients'],
    run: (u) => rename(u, 'renamed.max-clients', 'MaxClients', 'MaxRequestWorkers',
      ' With an asynchronous MPM such as event the value limits the worker threads, not the clients'
      + ' (event serves more connections than it has workers, as it has since 2.1); review it when moving to event.'),
  },
  {
    id: 'renamed.max-requests-per-child',
    title: 'MaxRequestsPerChild becomes MaxConnectionsPerChild',
    spec: ['2.1 MaxRequestsPerChild'],
    run: (u) => rename(u, 'renamed.max-requests-per-child', 'MaxRequestsPerChild', 'MaxConnectionsPerChild',
      ' The limit counts connections (a keep-alive connection counts once), as it did in 2.2.'),
  },
];
