// mpm_worker: accepted so that "LoadModule mpm_worker_module ..." configurations run; its
// directives configure plume's process model with their httpd meaning.

import { defineModule, MODULE_API_VERSION } from '../server/module.js';
import { createMpmConfig, mpmDirectives, checkThreaded, type MpmConfig } from './mpm-common.js';

const mpm = defineModule<MpmConfig, undefined>({
  name: 'mpm_worker_module',
  source: 'worker.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => createMpmConfig(),
  directives: mpmDirectives('mpm_worker', true),
  configHooks: {
    checkConfig(ctx) {
      const c = mpm.server(ctx.mainServer);
      checkThreaded(c, ctx, 'mpm_worker');
    },
  },
});
export default mpm;
