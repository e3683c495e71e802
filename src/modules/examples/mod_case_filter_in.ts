// mod_case_filter_in: httpd's example input filter (modules/examples/mod_case_filter_in.c),
// shipped by Debian and used by Apache's test suite: CaseFilterIn upper-cases the request
// body as the handler reads it; `CaseFilterIn On` adds it to every request of a server.

import { defineModule, directive, MODULE_API_VERSION, RSRC_CONF, HOOK_MIDDLE } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { FTYPE_RESOURCE, type InputFilterSpec } from '../../server/filters.js';
import { upperCase } from './mod_case_filter.js';

interface CaseFilterInServer {
  enabled: boolean;
}

const caseFilterIn: InputFilterSpec<undefined> = {
  name: 'CaseFilterIn',
  type: FTYPE_RESOURCE,
  async read(f) {
    const b = await f.readNext();
    return b === null ? null : upperCase(b);
  },
};

function insertFilter(r: Request): void {
  if (self.server(r.server).enabled) r.rt.addInputFilterSpec(r, caseFilterIn);
}

const self = defineModule<CaseFilterInServer, undefined>({
  name: 'case_filter_in_module',
  source: 'mod_case_filter_in.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ enabled: false }),
  directives: [
    directive<CaseFilterInServer, undefined, 'FLAG'>({
      name: 'CaseFilterIn', args: 'FLAG', where: RSRC_CONF, help: 'Run an input case filter on this host',
      handler: (cmd: CmdParms<CaseFilterInServer, undefined>, on: boolean) => { cmd.srv.enabled = on; },
    }),
  ],
  hooks: { insertFilter: { fn: insertFilter, order: HOOK_MIDDLE } },
  inputFilters: [caseFilterIn as InputFilterSpec],
});

export default self;
