// mpm_prefork: accepted so that "LoadModule mpm_prefork_module ..." configurations run; its
// directives configure plume's process model with their httpd meaning.

import { defineModule, MODULE_API_VERSION } from '../server/module.js';
import { createMpmConfig, mpmDirectives, checkThreaded, type MpmConfig } from './mpm-common.js';
import { APLOG_WARNING } from '../server/log/levels.js';

const mpm = defineModule<MpmConfig, undefined>({
  name: 'mpm_prefork_module',
  source: 'prefork.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => createMpmConfig(),
  directives: mpmDirectives('mpm_prefork', false),
  configHooks: {
    postConfig(ctx) {
      const c = mpm.server(ctx.mainServer);
      if (false) checkThreaded(c, (msg) => ctx.logBare('mpm_prefork', APLOG_WARNING, msg));
    },
  },
});
export default mpm;
