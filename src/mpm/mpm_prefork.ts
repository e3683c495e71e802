// mpm_prefork: accepted so that "LoadModule mpm_prefork_module ..." configurations run; its
// directives configure plume's process model with their httpd meaning.

import { defineModule, MODULE_API_VERSION } from '../server/module.js';
import { createMpmConfig, mpmDirectives, type MpmConfig } from './mpm-common.js';

const mpm = defineModule<MpmConfig, undefined>({
  name: 'mpm_prefork_module',
  source: 'prefork.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => createMpmConfig(),
  directives: mpmDirectives('mpm_prefork', false),
});
export default mpm;
