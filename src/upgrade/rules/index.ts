// Every rule, in the order they run: rewrites that rename or remove directives first, then the
// access rewrite, then the modules the result needs, then the notes.

import type { Rule } from '../model.js';
import { renamedRules } from './renamed.js';
import { syntaxRules } from './syntax.js';
import { mutexRules } from './mutex.js';
import { loggingRules } from './logging.js';
import { sslRules } from './ssl.js';
import { includeRules } from './include.js';
import { defaultsRules } from './defaults.js';
import { accessRules } from './access.js';
import { modulesRules } from './modules.js';
import { versioningRules } from './versioning.js';

export const RULES: readonly Rule[] = [
  ...renamedRules, ...syntaxRules, ...mutexRules, ...loggingRules, ...sslRules, ...includeRules,
  ...defaultsRules, ...accessRules, ...modulesRules, ...versioningRules,
];
