// mod_case_filter: httpd's example output filter (modules/examples/mod_case_filter.c), shipped
// by Debian and used by Apache's test suite: the CaseFilter resource filter upper-cases the
// body (ASCII letters, byte for byte, so the length is unchanged); `CaseFilter On` adds it
// to every request of a server, otherwise it is added by name (SetOutputFilter, mod_filter).

import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF, HOOK_MIDDLE } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { FTYPE_RESOURCE, transformBrigade, type FilterSpec } from '../../server/filters.js';

interface CaseFilterServer {
  enabled: boolean;
}

/** ASCII letters up, other bytes as they are (apr_toupper in the C locale). */
export function upperCase(data: Buffer): Buffer {
  const out = Buffer.allocUnsafe(data.length);
  for (let i = 0; i < data.length; i++) {
    const c = data[i]!;
    out[i] = c >= 0x61 && c <= 0x7a ? c - 32 : c;
  }
  return out;
}

const UPPER = { write: upperCase, end: () => null };

const caseFilter: FilterSpec<undefined> = {
  name: 'CaseFilter',
  type: FTYPE_RESOURCE,
  filter(f, bb) {
    return transformBrigade(f, bb, UPPER);
  },
};

function insertFilter(r: Request): void {
  if (self.server(r.server).enabled) r.rt.addFilter(r, caseFilter);
}

const self = defineModule<CaseFilterServer, undefined>({
  name: 'case_filter_module',
  source: 'mod_case_filter.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ enabled: false }),
  // No merge: a virtual host has its own setting (off unless it says On), as in httpd.
  directives: [
    directive<CaseFilterServer, undefined, 'FLAG'>({
      name: 'CaseFilter', args: 'FLAG', where: RSRC_CONF, help: 'Run a case filter on this host',
      handler: (cmd: CmdParms<CaseFilterServer, undefined>, on: boolean) => { cmd.srv.enabled = on; },
    }),
  ],
  hooks: { insertFilter: { fn: insertFilter, order: HOOK_MIDDLE } },
  filters: [caseFilter as FilterSpec],
});

export default self;
