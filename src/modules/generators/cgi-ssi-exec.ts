// The SSI `exec` element that mod_cgi and mod_cgid give mod_include (httpd's cgi_handle_exec,
// include_cmd and include_cgi in cgi_common.h / mod_cgi.c): `cmd=` runs a shell command with
// the document's variables as its environment and puts its output in the page; `cgi=` runs a
// CGI script as a subrequest with the document's path info and query string. Refused under
// `Options IncludesNOEXEC`. Registered as the 'ssi_element' provider "exec".

import { spawn, type ChildProcess } from 'node:child_process';
import type { Request } from '../../server/request/request.js';
import { APLOG_ERR, APLOG_WARNING } from '../../server/log/levels.js';
import { createEnvironment } from '../../server/util-script.js';
import { escapeHtml } from '../../server/http/response.js';
import { escapeUri } from '../../expr/index.js';
import type { SsiArg, SsiContext, SsiElementHandler } from '../filters/mod_include/api.js';
import { CGI_MAGIC_TYPE, escapeShellCmd, prlimitMissing } from './cgi-common.js';
import { limitedCommand } from '../../server/core/rlimit.js';
import { coreDir } from '../../server/core/core-module.js';

const unescapeUrl = (s: string): string => s.replace(/%([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));

/** add_ssi_vars: PATH_INFO/PATH_TRANSLATED and the query string for a command. */
async function addSsiVars(r: Request): Promise<void> {
  const e = r.subprocessEnv;
  if (r.pathInfo !== '') {
    e.set('PATH_INFO', escapeShellCmd(r.pathInfo));
    const pa = await r.rt.lookupUri(r, escapeUri(r.pathInfo));
    if (pa.filename !== '') e.set('PATH_TRANSLATED', pa.filename + pa.pathInfo);
  }
  if (r.args !== undefined) {
    e.set('QUERY_STRING', r.args);
    e.set('QUERY_STRING_UNESCAPED', escapeShellCmd(unescapeUrl(r.args)));
  }
}

/** include_cmd: `/bin/sh -c command` in the document's directory; its output in the page as it
 *  comes. False when the shell could not be started. */
async function includeCmd(ctx: SsiContext, command: string): Promise<boolean> {
  const r = ctx.r;
  await addSsiVars(r);
  const dir = r.filename.slice(0, r.filename.lastIndexOf('/') + 1) || '/';
  return new Promise<boolean>((resolve) => {
    let child: ChildProcess;
    try {
      // The command's stderr is the server's own, as httpd leaves it (the error log).
      // RLimitCPU/MEM/NPROC apply to it as to a script (httpd's include_cmd runs it the same way).
      const cmd = limitedCommand(coreDir(r), '/bin/sh', ['-c', command], () => prlimitMissing(r));
      child = spawn(cmd.file, cmd.args, { cwd: dir, env: createEnvironment(r.subprocessEnv), stdio: ['ignore', 'pipe', 'inherit'] });
    } catch {
      resolve(false);
      return;
    }
    let started = false;
    child.once('spawn', () => { started = true; });
    child.stdout!.on('data', (b: Buffer) => ctx.emit(b));
    child.once('error', () => { if (!started) resolve(false); });
    child.once('close', () => resolve(true));
  });
}

/** include_cgi: the script as a subrequest, with the document's path info and arguments; a
 *  redirect it answers becomes a link. */
async function includeCgi(ctx: SsiContext, uri: string): Promise<boolean> {
  const r = ctx.r;
  const rr = await r.rt.lookupUri(r, uri);
  if (rr.status !== 200) return false;
  if (rr.pathInfo !== '' || rr.args !== undefined) return false;
  if (rr.finfo === null || !rr.finfo.isFile()) return false;
  rr.pathInfo = r.pathInfo;
  rr.args = r.args;
  rr.contentType = CGI_MAGIC_TYPE;
  await ctx.flush();
  const st = await r.rt.runSubRequest(rr, ctx.filter.next);
  if (st >= 300 && st < 400) {
    const loc = rr.headersOut.get('Location');
    if (loc !== undefined) {
      const l = escapeHtml(loc);
      ctx.emit(`<a href="${l}">${l}</a>`);
    }
  }
  return true;
}

/** `<!--#exec cmd=".." -->` / `<!--#exec cgi=".." -->`, logging as `mod` (cgi or cgid). */
export const execElement = (mod: string): SsiElementHandler => async (ctx: SsiContext, args: readonly SsiArg[]): Promise<void> => {
  const r = ctx.r;
  if (args.length === 0) r.log(mod, ctx.printing ? APLOG_ERR : APLOG_WARNING, `AH03195: missing argument for exec element in ${r.filename}`);
  if (!ctx.printing) return;
  if (args.length === 0) { ctx.emitError(); return; }
  if (ctx.noExec) {
    r.log(mod, APLOG_ERR, `AH01228: exec used but not allowed in ${r.filename}`);
    ctx.emitError();
    return;
  }
  for (const a of args) {
    if (a.name === null || a.value === null) break;
    const val = ctx.decodeHtml(a.value);
    if (a.name === 'cmd') {
      if (!(await includeCmd(ctx, ctx.parseString(val, true)))) {
        r.log(mod, APLOG_ERR, `AH01229: execution failure for parameter "${a.name}" to tag exec in file ${r.filename}`);
        ctx.emitError();
        break;
      }
    } else if (a.name === 'cgi') {
      if (!(await includeCgi(ctx, ctx.parseString(val)))) {
        r.log(mod, APLOG_ERR, `AH01230: invalid CGI ref "${val}" in ${r.filename}`);
        ctx.emitError();
        break;
      }
    } else {
      r.log(mod, APLOG_ERR, `AH01231: unknown parameter "${a.name}" to tag exec in ${r.filename}`);
      ctx.emitError();
      break;
    }
  }
};
