// mod_so (built in): LoadModule and LoadFile. "LoadModule name /any/dir/mod_x.so" activates
// plume's own implementation of the module named by its symbol, so Apache's configuration
// files run unchanged. A third-party plume module is an ES module file (.js/.mjs) whose
// default export is a module declaration; it is imported before the configuration is read.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { CmdParms } from '../../server/config/cmd.js';
import {
  defineModule, directive, MODULE_API_VERSION, EXEC_ON_READ, RSRC_CONF, ModuleHandle,
  type ModuleDecl, type AnyModuleHandle,
} from '../../server/module.js';
import { APLOG_DEBUG, APLOG_WARNING, APLOG_NOTICE } from '../../server/log/levels.js';
import { ConfigError } from '../../server/config/errors.js';
import { MODULE_DIR_SCRATCH, apacheModuleName } from '../../server/config/remedies.js';

type Cmd = CmdParms<undefined, undefined>;

/** Modules plume builds in (as Debian's httpd does, except mod_unixd which must be loaded). */
export const BUILT_IN = new Set(['core_module', 'so_module', 'watchdog_module', 'http_module', 'log_config_module', 'logio_module', 'version_module']);

function loadModule(cmd: Cmd, name: string, file: string): string | undefined {
  const ctx = cmd.ctx;
  const cat = ctx.catalogue;
  if (!cat) return 'LoadModule: no module catalogue';
  if (BUILT_IN.has(name)) {
    // DIFFERENCE: httpd refuses ("module X is built-in and can't be loaded"); plume accepts
    // it with a notice so configurations written for builds that share these modules run.
    ctx.log('so', APLOG_NOTICE, `AH01574: module ${name} is built-in; LoadModule ignored`);
    return undefined;
  }
  if (ctx.moduleBySymbol(name)) {
    ctx.log('so', APLOG_WARNING, `AH01574: module ${name} is already loaded, skipping`);
    return undefined;
  }
  // The remedies' LoadModule lines use the directory this configuration loads modules from.
  ctx.getScratch<{ dir: string | undefined }>(MODULE_DIR_SCRATCH, () => ({ dir: undefined })).dir = path.dirname(file);
  const mod = cat.find(name);
  if (!mod) {
    const full = ctx.serverRootRelative(file);
    if (!fs.existsSync(full)) return `Cannot load ${file} into server: ${full}: cannot open shared object file: No such file or directory`;
    // The read goes on, so that the error names every module plume does not have (spec 7.1).
    const error = new ConfigError(cmd.file, cmd.line, `Can't locate API module structure \`${name}' in file ${full}: plume has no module of that name`, 'read');
    const where = ctx.deferredErrors.length === 0 ? '' : ` (line ${cmd.line} of ${cmd.file})`;
    ctx.deferredErrors.push({
      error,
      remedy: `Remedy: plume does not have ${apacheModuleName(name)} yet${where}: remove its LoadModule line, and keep what uses it inside <IfModule ${name}>`,
    });
    return undefined;
  }
  if (mod.decl.apiVersion !== MODULE_API_VERSION) {
    return `Module ${name} in ${file} was built for plume module API ${mod.decl.apiVersion}, but this server provides API ${MODULE_API_VERSION}; rebuild the module for this version`;
  }
  ctx.activate(mod);
  // httpd's debug-level messages carry the source position of the C code that logs them.
  ctx.logNoServer('so', APLOG_DEBUG, `mod_so.c(266): AH01575: loaded module ${name} from ${ctx.serverRootRelative(file)}`);
  return undefined;
}

function loadFile(cmd: Cmd, file: string): string | undefined {
  const full = cmd.serverRootRelative(file);
  if (!fs.existsSync(full)) return `Cannot load ${file} into server: ${full}: cannot open shared object file: No such file or directory`;
  // Shared libraries have no meaning to plume; the line is accepted.
  return undefined;
}

/** Imports third-party ES modules named by LoadModule lines (before the read phase). */
export async function importThirdParty(files: readonly { name: string; file: string }[], register: (m: AnyModuleHandle) => void): Promise<string | undefined> {
  for (const { name, file } of files) {
    let ns: { default?: unknown };
    try {
      ns = (await import(pathToFileURL(path.resolve(file)).href)) as { default?: unknown };
    } catch (e) {
      return `Cannot load ${file} into server: ${(e as Error).message}`;
    }
    const d = ns.default;
    const decl = d instanceof ModuleHandle ? (d.decl as ModuleDecl<unknown, unknown>) : (d as ModuleDecl<unknown, unknown> | undefined);
    if (!decl || typeof decl !== 'object' || decl.name !== name) {
      return `Can't locate API module structure \`${name}' in file ${file}: no default export named ${name}`;
    }
    if (decl.apiVersion !== MODULE_API_VERSION) {
      return `Module ${name} in ${file} was built for plume module API ${decl.apiVersion}, but this server provides API ${MODULE_API_VERSION}; rebuild the module for this version`;
    }
    register(d instanceof ModuleHandle ? (d as AnyModuleHandle) : new ModuleHandle(decl));
  }
  return undefined;
}

export default defineModule<undefined, undefined>({
  name: 'so_module',
  source: 'mod_so.c',
  apiVersion: MODULE_API_VERSION,
  directives: [
    directive({ name: 'LoadModule', args: 'TAKE2', where: RSRC_CONF | EXEC_ON_READ, help: 'a module name and the name of a shared object file to load it from', handler: loadModule }),
    directive({ name: 'LoadFile', args: 'ITERATE', where: RSRC_CONF | EXEC_ON_READ, help: 'shared object file or library to load into the server at runtime', handler: loadFile }),
  ],
});
