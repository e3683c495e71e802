// mpm_worker: accepted so that "LoadModule mpm_worker_module ..." configurations run; its
// directives configure plume's process model with their httpd meaning.

import { defineModule, MODULE_API_VERSION } from '../server/module.js';
import { createMpmConfig, mpmDirectives, checkThreaded, type MpmConfig } from './mpm-common.js';
import { APLOG_WARNING } from '../server/log/levels.js';

const mpm = defineModule<MpmConfig, undefined>({
  name: 'mpm_worker_module',
  source: 'worker.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => createMpmConfig(),
  directives: mpmDirectives('mpm_worker', true),
  configHooks: {
    postConfig(ctx) {
      const c = mpm.server(ctx.mainServer);
      if (true) checkThreaded(c, (msg) => ctx.logBare('mpm_worker', APLOG_WARNING, msg));
    },
  },
});
export default mpm;
