// mpm_event: accepted so that "LoadModule mpm_event_module ..." configurations run; its
// directives configure plume's process model with their httpd meaning.

import { defineModule, MODULE_API_VERSION } from '../server/module.js';
import { createMpmConfig, mpmDirectives, checkThreaded, type MpmConfig } from './mpm-common.js';

const mpm = defineModule<MpmConfig, undefined>({
  name: 'mpm_event_module',
  source: 'event.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => createMpmConfig(),
  directives: mpmDirectives('mpm_event', true),
  configHooks: {
    checkConfig(ctx) {
      const c = mpm.server(ctx.mainServer);
      checkThreaded(c, ctx, 'mpm_event');
    },
  },
});
export default mpm;
