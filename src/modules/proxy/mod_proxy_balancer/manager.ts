// The balancer-manager handler (httpd's balancer_handler, balancer_display_page and
// balancer_process_balancer_worker): the HTML (or ?xml) page of every balancer of the server
// and its members, and the forms that change them. Parameters (the query of a GET, the body
// of a POST) count only with a Referer naming this server (else AH10187) and change anything
// only with the balancer's nonce; changes go to the shared tables, so every process sees them.

import type { Request } from '../../../server/request/request.js';
import { DECLINED, DONE, type MaybePromise } from '../../../server/module.js';
import { APLOG_DEBUG, APLOG_EMERG, APLOG_ERR } from '../../../server/log/levels.js';
import { EOS, FLUSH, dataBucket } from '../../../server/filters.js';
import { escapeUri } from '../../../server/util-script.js';
import { BUILT, serverBanner } from '../../../server/version.js';
import { globals } from '../../../server/core/globals.js';
import {
  parseWorkerStatus as statusString, PROXY_WORKER_STATUS_TABLE, PROXY_WORKER_DISABLED, PROXY_WORKER_DRAIN, PROXY_WORKER_HOT_SPARE, PROXY_WORKER_HOT_STANDBY,
  PROXY_WORKER_IGNORE_ERRORS, PROXY_WORKER_STOPPED, PROXY_WORKER_HC_FAIL, PROXY_WORKER_INITIALIZED,
  workerIsUsable, type HcMethod, type ProxyApi, type ProxyBalancer, type ProxyServerConf, type ProxyWorker,
} from '../../../proxy/api.js';
import { strfsize } from '../../../lib/apr-strings.js';
import { flushAll } from './shared.js';
import { apiOf, extra, serverState, shareWorker, stateOf, syncBalancerFor } from './state.js';

const PREFIX_LEN = 'balancer://'.length;
/** A member's connection limit when max= is not given: httpd's threads per child (the MPM's
 *  default ThreadsPerChild; plume's workers serve connections without threads). */
const THREADS_PER_CHILD = 25;
/** proxy_hcmethods (the implemented ones, in httpd's order). */
const HC_METHODS: readonly HcMethod[] = ['NONE', 'TCP', 'OPTIONS', 'HEAD', 'GET', 'OPTIONS11', 'HEAD11', 'GET11'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

// apr_strfsize and ap_proxy_parse_wstatus are shared with mod_proxy's status section.
export { strfsize } from '../../../lib/apr-strings.js';
export { parseWorkerStatus as statusString } from '../../../proxy/api.js';

function atoi(s: string): number {
  const m = /^\s*([+-]?\d+)/.exec(s);
  return m === null ? 0 : Number.parseInt(m[1]!, 10);
}

function atof(s: string): number {
  const m = /^\s*([+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)/.exec(s);
  return m === null ? 0 : Number.parseFloat(m[1]!);
}

/** ap_unescape_url: %XX decoded (a bad escape leaves the text as it is). */
function unescape(s: string): string {
  return s.replace(/%([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** push2table: key=value pairs split on '&', unescaped (values twice, as httpd). */
function push2table(input: string, params: Map<string, string>, allowed: readonly string[] | undefined): void {
  for (const part of input.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = unescape(eq < 0 ? part : part.slice(0, eq));
    const val = unescape(unescape(eq < 0 ? '' : part.slice(eq + 1)));
    if (allowed === undefined || allowed.includes(key)) params.set(key, val);
  }
}

/** safe_referer: the Referer's host is this server's name. */
function safeReferer(r: Request, ref: string): boolean {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)/.exec(ref);
  if (m === null || m[1] === '') return false;
  const host = m[1]!.replace(/^\[|\]$/g, '');
  return host.toLowerCase() === r.rt.serverName(r).toLowerCase();
}

function setStatus(api: ProxyApi, w: ProxyWorker, flag: string, val: string): void {
  api.setWorkerStatus(w, `${atoi(val) !== 0 ? '+' : '-'}${flag}`);
}

/** recalc_factors. */
function recalcFactors(b: ProxyBalancer): void {
  if (b.workers.length === 1) {
    const w = b.workers[0]!;
    w.s.lbfactor = 1;
    w.s.lbstatus = 100;
    return;
  }
  for (const w of b.workers) w.s.lbstatus = Math.round(w.s.lbfactor * 100);
}

/** balancer_process_balancer_worker: 0 or 400. */
function processParams(r: Request, conf: ProxyServerConf, api: ProxyApi, bsel: ProxyBalancer, wsel: ProxyWorker | undefined, params: Map<string, string>): number {
  if (wsel !== undefined) {
    const wasUsable = workerIsUsable(wsel);
    r.log('proxy_balancer', APLOG_DEBUG, 'AH01192: settings worker params');
    let val = params.get('w_lf');
    if (val !== undefined) {
      const ival = Math.trunc(atof(val) * 100);
      if (ival >= 100 && ival <= 10000) {
        wsel.s.lbfactor = ival / 100;
        recalcFactors(bsel);
      }
    }
    val = params.get('w_wr');
    if (val !== undefined) wsel.s.route = val.length > 0 && val.length < 96 ? val : '';
    val = params.get('w_rr');
    if (val !== undefined) wsel.s.redirect = val.length > 0 && val.length < 96 ? val : '';
    for (const flag of ['I', 'N', 'D', 'H', 'R', 'S', 'C']) {
      val = params.get(`w_status_${flag}`);
      if (val !== undefined) setStatus(api, wsel, flag, val);
    }
    val = params.get('w_ls');
    if (val !== undefined) {
      const ival = atoi(val);
      if (ival >= 0 && ival <= 99) wsel.s.lbset = ival;
    }
    val = params.get('w_hi');
    if (val !== undefined) {
      const m = /^(\d+)(ms|s|mi|h)?$/.exec(val);
      if (m !== null) {
        const n = Number(m[1]);
        const ms = m[2] === 's' ? n * 1000 : m[2] === 'mi' ? n * 60000 : m[2] === 'h' ? n * 3600000 : n;
        if (ms >= 100) wsel.s.interval = ms;
      }
    }
    val = params.get('w_hp');
    if (val !== undefined && atoi(val) >= 1) wsel.s.passes = atoi(val);
    val = params.get('w_hf');
    if (val !== undefined && atoi(val) >= 1) wsel.s.fails = atoi(val);
    val = params.get('w_hm');
    if (val !== undefined) {
      const m = HC_METHODS.find((x) => x.toLowerCase() === val!.toLowerCase());
      if (m !== undefined) wsel.s.method = m;
    }
    val = params.get('w_hu');
    if (val !== undefined) wsel.s.hcuri = val.length > 0 && val.length < 64 ? val : '';
    const hc = r.rt.ctx.provider('proxy_hc', 'hcheck');
    val = params.get('w_he');
    if (hc !== undefined && val !== undefined) wsel.s.hcexpr = val.length > 0 && hc.validExpr(r, val) && val.length < 16 ? val : '';
    if (wsel.s.method === 'NONE' || wsel.s.method === 'TCP') wsel.s.hcexpr = '';
    if (!wasUsable && workerIsUsable(wsel)) extra(bsel).needReset = true;
  }
  r.log('proxy_balancer', APLOG_DEBUG, 'AH01193: settings balancer params');
  let val = params.get('b_lbm');
  if (val !== undefined && val.length < 15 && val !== bsel.s.lbpname) {
    const m = r.rt.ctx.provider('proxy_lbmethod', val);
    if (m !== undefined) {
      bsel.s.lbpname = val;
      bsel.lbmethod = m;
      bsel.s.wupdated = Date.now();
      extra(bsel).needReset = true;
    }
  }
  val = params.get('b_tmo');
  if (val !== undefined) {
    const ival = atoi(val);
    if (ival >= 0 && ival <= 7200) bsel.s.timeout = ival * 1000;
  }
  val = params.get('b_max');
  if (val !== undefined) {
    const ival = atoi(val);
    if (ival >= 0 && ival <= 99) bsel.s.maxAttempts = ival;
  }
  val = params.get('b_sforce');
  if (val !== undefined) bsel.s.stickyForce = atoi(val) !== 0;
  val = params.get('b_ss');
  if (val !== undefined && val !== '' && val.length < 63) {
    // As measured on httpd 2.4.71: the value is kept whole for both names (a '|' does not
    // split it into cookie and path names here, as it does in stickysession=).
    bsel.s.sticky = val === '-' ? '' : val;
    bsel.s.stickyPath = val === '-' ? '' : val;
  }
  if (params.get('b_wyes') === '1' && (val = params.get('b_nwrkr')) !== undefined) {
    const st = stateOf(bsel);
    const existing = api.getWorker(bsel, conf, val);
    if (existing === undefined && st !== undefined && st.storage.numFreeSlots(st.wslot) > 0) {
      const nw = api.defineWorker(r.rt.ctx, r.server, bsel, val);
      if (typeof nw === 'string') {
        r.log('proxy_balancer', APLOG_ERR, `AH10163: ${bsel.s.name}: failed to add worker ${val}`);
        return 400;
      }
      const index = st.storage.grab(st.wslot);
      if (typeof index === 'string') {
        r.log('proxy_balancer', APLOG_EMERG, 'AH01195: worker slotmem_grab failed');
        return 400;
      }
      if (!bsel.workers.includes(nw)) bsel.workers.push(nw);
      shareWorker(st, nw, index, false);
      nw.localStatus |= PROXY_WORKER_INITIALIZED;
      nw.s.status |= PROXY_WORKER_INITIALIZED;
      const now = Date.now();
      nw.s.updated = now;
      bsel.s.wupdated = now;
      st.wupdated = now;
      api.setWorkerStatus(nw, '+D');
    } else {
      r.log('proxy_balancer', APLOG_ERR, `AH10164: ${bsel.s.name}: failed to add worker ${val}`);
      return 400;
    }
  }
  return 0;
}

function radio(name: string, on: boolean): string {
  return `<td><label for='${name}1'>On</label> <input name='${name}' id='${name}1' value='1' type=radio${on ? ' checked' : ''}> <br/> <label for='${name}0'>Off</label> <input name='${name}' id='${name}0' value='0' type=radio${on ? '' : ' checked'}></td>\n`;
}

const STYLE = "<style type='text/css'>\n"
  + 'table {\n border-width: 1px;\n border-spacing: 3px;\n border-style: solid;\n border-color: gray;\n border-collapse: collapse;\n background-color: white;\n text-align: center;\n}\n'
  + 'th {\n border-width: 1px;\n padding: 2px;\n border-style: dotted;\n border-color: gray;\n background-color: lightgray;\n text-align: center;\n}\n'
  + 'td {\n border-width: 1px;\n padding: 2px;\n border-style: dotted;\n border-color: gray;\n background-color: white;\n text-align: center;\n}\n'
  + '</style>\n</head>\n';

function rfc822(ms: number): string {
  return new Date(ms).toUTCString();
}

function xmlPage(r: Request, conf: ProxyServerConf): string {
  const out: string[] = ["<?xml version='1.0' encoding='UTF-8' ?>\n", "<httpd:manager xmlns:httpd='http://httpd.apache.org'>\n", '  <httpd:balancers>\n'];
  for (const b of conf.balancers) {
    out.push('    <httpd:balancer>\n', `      <httpd:name>${b.s.name}</httpd:name>\n`, `      <httpd:nonce>${b.s.nonce}</httpd:nonce>\n`);
    if (b.s.sticky !== '') {
      out.push(`      <httpd:stickysession>${esc(b.s.sticky)}</httpd:stickysession>\n`);
      out.push(`      <httpd:nofailover>${b.s.stickyForce ? 'On' : 'Off'}</httpd:nofailover>\n`);
    }
    out.push(`      <httpd:timeout>${Math.trunc(b.s.timeout / 1000)}</httpd:timeout>`);
    if (b.s.maxAttempts !== undefined) out.push(`      <httpd:maxattempts>${b.s.maxAttempts}</httpd:maxattempts>\n`);
    out.push(`      <httpd:lbmethod>${b.lbmethod?.name ?? b.s.lbpname}</httpd:lbmethod>\n`);
    if (b.s.sticky !== '') out.push(`      <httpd:scolonpathdelim>${b.s.scolonsep ? 'On' : 'Off'}</httpd:scolonpathdelim>\n`);
    out.push('      <httpd:workers>\n');
    for (const w of b.workers) {
      const p = w.params;
      const f = (w.s.lbfactor).toFixed(2);
      out.push('        <httpd:worker>\n', `          <httpd:name>${w.s.name}</httpd:name>\n`, `          <httpd:scheme>${w.s.scheme}</httpd:scheme>\n`,
        `          <httpd:hostname>${w.s.hostname}</httpd:hostname>\n`, `          <httpd:loadfactor>${f}</httpd:loadfactor>\n`,
        `          <httpd:port>${w.s.port}</httpd:port>\n`, `          <httpd:min>${p.min ?? 0}</httpd:min>\n`,
        `          <httpd:smax>${p.smax ?? p.hmax ?? THREADS_PER_CHILD}</httpd:smax>\n`, `          <httpd:max>${p.hmax ?? THREADS_PER_CHILD}</httpd:max>\n`,
        `          <httpd:ttl>${Math.trunc((p.ttl ?? 0) / 1000)}</httpd:ttl>\n`);
      if (p.timeout !== undefined) out.push(`          <httpd:timeout>${Math.trunc(p.timeout / 1000)}</httpd:timeout>\n`);
      if (p.acquire !== undefined) out.push(`          <httpd:acquire>${p.acquire}</httpd:acquire>\n`);
      if (p.receivebuffersize !== undefined) out.push(`          <httpd:recv_buffer_size>${p.receivebuffersize}</httpd:recv_buffer_size>\n`);
      if (p.iobuffersize !== undefined) out.push(`          <httpd:io_buffer_size>${p.iobuffersize}</httpd:io_buffer_size>\n`);
      if (p.keepalive !== undefined) out.push(`          <httpd:keepalive>${p.keepalive ? 'On' : 'Off'}</httpd:keepalive>\n`);
      out.push(`          <httpd:status>${statusString(w)}</httpd:status>\n`);
      if (w.s.errorTime > 0) out.push(`          <httpd:error_time>${rfc822(w.s.errorTime)}</httpd:error_time>\n`);
      out.push(`          <httpd:retries>${w.s.retries}</httpd:retries>\n`, `          <httpd:lbstatus>${w.s.lbstatus}</httpd:lbstatus>\n`,
        `          <httpd:loadfactor>${f}</httpd:loadfactor>\n`, `          <httpd:transferred>${w.s.transferred}</httpd:transferred>\n`,
        `          <httpd:read>${w.s.read}</httpd:read>\n`, `          <httpd:elected>${w.s.elected}</httpd:elected>\n`,
        `          <httpd:route>${esc(w.s.route)}</httpd:route>\n`, `          <httpd:redirect>${esc(w.s.redirect)}</httpd:redirect>\n`,
        `          <httpd:busy>${w.s.busy}</httpd:busy>\n`, `          <httpd:lbset>${w.s.lbset}</httpd:lbset>\n`);
      if (p.disablereuse !== undefined) out.push(`      <httpd:disablereuse>${p.disablereuse ? 'On' : 'Off'}</httpd:disablereuse>\n`);
      if (p.connectionTimeout !== undefined) out.push(`          <httpd:connectiontimeout>${p.connectionTimeout}</httpd:connectiontimeout>\n`);
      if (p.retry !== undefined) out.push(`          <httpd:retry>${Math.trunc(p.retry / 1000)}</httpd:retry>\n`);
      out.push('        </httpd:worker>\n');
    }
    out.push('      </httpd:workers>\n', '    </httpd:balancer>\n');
  }
  out.push('  </httpd:balancers>\n', '</httpd:manager>');
  void r;
  return out.join('');
}

function htmlPage(r: Request, conf: ProxyServerConf, bsel: ProxyBalancer | undefined, wsel: ProxyWorker | undefined): string {
  const out: string[] = [];
  const uri = escapeUri(r.uri);
  const persist = serverState(r.server)?.persist ?? false;
  // httpd shows the health check columns when mod_proxy_hcheck's optional functions exist.
  const hc = r.rt.ctx.provider('proxy_hc', 'hcheck');
  const hcLoaded = hc !== undefined;
  out.push('<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n<html><head><title>Balancer Manager</title>\n', STYLE);
  out.push(`<body><h1>Load Balancer Manager for ${esc(r.rt.serverName(r))}</h1>\n\n`);
  out.push(`<dl><dt>Server Version: ${serverBanner('Full')}</dt>\n`);
  out.push(`<dt>Server Built: ${BUILT}</dt>\n`);
  out.push(`<dt>Balancer changes will ${persist ? '' : 'NOT '}be persisted on restart.</dt>`);
  out.push(`<dt>Balancers are ${conf.inherit === false ? 'NOT ' : ''}inherited from main server.</dt>`);
  out.push(`<dt>ProxyPass settings are ${conf.ppinherit === false ? 'NOT ' : ''}inherited from main server.</dt>`);
  out.push('</dl>\n');
  for (const b of conf.balancers) {
    const st = stateOf(b);
    const bname = b.s.name.slice(PREFIX_LEN);
    out.push('<hr />\n<h3>LoadBalancer Status for ');
    out.push(`<a href="${uri}?b=${bname}&amp;nonce=${b.s.nonce}">`);
    out.push(`${b.s.name}</a> [${extra(b).sname}]</h3>\n`);
    out.push('\n\n<table><tr><th>MaxMembers</th><th>StickySession</th><th>DisableFailover</th><th>Timeout</th><th>FailoverAttempts</th><th>Method</th><th>Path</th><th>Active</th></tr>\n<tr>');
    const max = st?.maxWorkers ?? b.workers.length;
    const free = st !== undefined ? st.storage.numFreeSlots(st.wslot) : 0;
    out.push(`<td>${max} [${max - free} Used]</td>\n`);
    if (b.s.sticky !== '') {
      out.push(b.s.sticky !== b.s.stickyPath ? `<td>${esc(b.s.sticky)} | ${esc(b.s.stickyPath)}` : `<td>${esc(b.s.sticky)}`);
    } else {
      out.push('<td> (None) ');
    }
    out.push(`</td><td>${b.s.stickyForce ? 'On' : 'Off'}</td>\n`);
    out.push(`<td>${Math.trunc(b.s.timeout / 1000)}</td>`);
    out.push(`<td>${b.s.maxAttempts ?? 0}</td>\n`);
    out.push(`<td>${b.s.lbpname}</td>\n`);
    out.push('<td>');
    if (b.s.vhost !== '') out.push(`${b.s.vhost} -> `);
    out.push(`${b.s.vpath}</td>\n`);
    out.push(`<td>${!b.s.inactive ? 'Yes' : 'No'}</td>\n`);
    out.push('</tr>\n</table>\n<br />');
    out.push('\n\n<table><tr><th>Worker URL</th><th>Route</th><th>RouteRedir</th><th>Factor</th><th>Set</th><th>Status</th><th>Elected</th><th>Busy</th><th>Load</th><th>To</th><th>From</th>');
    if (hcLoaded) out.push('<th>HC Method</th><th>HC Interval</th><th>Passes</th><th>Fails</th><th>HC uri</th><th>HC Expr</th>');
    out.push('</tr>\n');
    for (const w of b.workers) {
      const uds = w.s.udsPath !== '';
      out.push(`<tr>\n<td><a href="${uri}?b=${bname}&amp;w=${escapeUri(w.s.name)}&amp;nonce=${b.s.nonce}">`);
      out.push(`${uds ? '<i>' : ''}${w.udsName ?? w.s.name}${uds ? '</i>' : ''}</a></td>`);
      out.push(`<td>${esc(w.s.route)}`);
      out.push(`</td><td>${esc(w.s.redirect)}`);
      out.push(`</td><td>${w.s.lbfactor.toFixed(2)}</td>`);
      out.push(`<td>${w.s.lbset}</td><td>`);
      out.push(statusString(w));
      out.push('</td>');
      out.push(`<td>${w.s.elected}</td>`);
      out.push(`<td>${w.s.busy}</td>`);
      out.push(`<td>${w.s.lbstatus}</td><td>`);
      out.push(strfsize(w.s.transferred));
      out.push('</td><td>');
      out.push(strfsize(w.s.read));
      if (hcLoaded) {
        out.push(`</td><td>${w.s.method}</td>`, `<td>${Math.trunc(w.s.interval)}ms</td>`, `<td>${w.s.passes} (${w.s.pcount})</td>`,
          `<td>${w.s.fails} (${w.s.fcount})</td>`, `<td>${esc(w.s.hcuri)}</td>`, `<td>${w.s.hcexpr}`);
      }
      out.push('</td></tr>\n');
    }
    out.push('</table>\n');
  }
  out.push('<hr />\n');
  if (hc !== undefined) out.push(hc.showExprs(r));
  const action = escapeUri(r.rt.constructUrl(r, r.uri));
  if (wsel !== undefined && bsel !== undefined) {
    const uds = wsel.s.udsPath !== '';
    out.push('<h3>Edit worker settings for ');
    out.push(`${uds ? '<i>' : ''}${wsel.udsName ?? wsel.s.name}${uds ? '</i>' : ''}</h3>\n`);
    out.push(`<form method='POST' enctype='application/x-www-form-urlencoded' action="${action}">\n`);
    out.push(`<table><tr><td>Load factor:</td><td><input name='w_lf' id='w_lf' type=text value='${wsel.s.lbfactor.toFixed(2)}'></td></tr>\n`);
    out.push(`<tr><td>LB Set:</td><td><input name='w_ls' id='w_ls' type=text value='${wsel.s.lbset}'></td></tr>\n`);
    out.push(`<tr><td>Route:</td><td><input name='w_wr' id='w_wr' type=text value="${esc(wsel.s.route)}"></td></tr>\n`);
    out.push(`<tr><td>Route Redirect:</td><td><input name='w_rr' id='w_rr' type=text value="${esc(wsel.s.redirect)}"></td></tr>\n`);
    out.push('<tr><td>Status:</td>');
    out.push('<td><table><tr><th>Ignore Errors</th><th>Draining Mode</th><th>Disabled</th><th>Hot Standby</th><th>Hot Spare</th>');
    if (hc !== undefined) out.push('<th>HC Fail</th>');
    out.push('<th>Stopped</th></tr>\n<tr>');
    const is = (bit: number): boolean => (wsel.s.status & bit) !== 0;
    out.push(radio('w_status_I', is(PROXY_WORKER_IGNORE_ERRORS)), radio('w_status_N', is(PROXY_WORKER_DRAIN)), radio('w_status_D', is(PROXY_WORKER_DISABLED)),
      radio('w_status_H', is(PROXY_WORKER_HOT_STANDBY)), radio('w_status_R', is(PROXY_WORKER_HOT_SPARE)));
    if (hc !== undefined) out.push(radio('w_status_C', is(PROXY_WORKER_HC_FAIL)));
    out.push(radio('w_status_S', is(PROXY_WORKER_STOPPED)));
    out.push('</tr></table></td></tr>\n');
    if (hc !== undefined) {
      out.push("<tr><td colspan='2'>\n<table align='center'><tr><th>Health Check param</th><th>Value</th></tr>\n");
      out.push("<tr><td>Method</td><td><select name='w_hm'>\n");
      for (const m of HC_METHODS) out.push(`<option value='${m}' ${wsel.s.method === m ? 'selected' : ''} >${m}</option>\n`);
      out.push('</select>\n</td></tr>\n');
      out.push("<tr><td>Expr</td><td><select name='w_he'>\n");
      out.push(hc.selectExprs(r, wsel.s.hcexpr));
      out.push('</select>\n</td></tr>\n');
      out.push(`<tr><td>Interval (ms)</td><td><input name='w_hi' id='w_hi' type='text' value='${Math.trunc(wsel.s.interval)}'></td></tr>\n`);
      out.push(`<tr><td>Passes trigger</td><td><input name='w_hp' id='w_hp' type='text' value='${wsel.s.passes}'></td></tr>\n`);
      out.push(`<tr><td>Fails trigger)</td><td><input name='w_hf' id='w_hf' type='text' value='${wsel.s.fails}'></td></tr>\n`);
      out.push(`<tr><td>HC uri</td><td><input name='w_hu' id='w_hu' type='text' value="${esc(wsel.s.hcuri)}"></td></tr>\n`);
      out.push('</table>\n</td></tr>\n');
    }
    out.push("<tr><td colspan='2'><input type=submit value='Submit'></td></tr>\n");
    out.push("</table>\n<input type=hidden name='w' id='w' ");
    out.push(`value="${escapeUri(wsel.s.name)}">\n`);
    out.push("<input type=hidden name='b' id='b' ");
    out.push(`value="${esc(bsel.s.name.slice(PREFIX_LEN))}">\n`);
    out.push(`<input type=hidden name='nonce' id='nonce' value='${bsel.s.nonce}'>\n`);
    out.push('</form>\n', '<hr />\n');
  } else if (bsel !== undefined) {
    const st = stateOf(bsel);
    out.push(`<h3>Edit balancer settings for ${esc(bsel.s.name)}</h3>\n`);
    out.push(`<form method='POST' enctype='application/x-www-form-urlencoded' action="${action}">\n`);
    out.push('<table>\n');
    const provs = r.rt.ctx.providerNames('proxy_lbmethod');
    if (provs.length > 0) {
      out.push('<tr><td>LBmethod:</td>');
      out.push("<td>\n<select name='b_lbm' id='b_lbm'>");
      for (const p of provs) out.push(`<option value='${p}'${p === bsel.s.lbpname ? ' selected ' : ''}>${p}\n`);
      out.push('</select>\n</td></tr>\n');
    }
    out.push(`<tr><td>Timeout:</td><td><input name='b_tmo' id='b_tmo' type=text value='${Math.trunc(bsel.s.timeout / 1000)}'></td></tr>\n`);
    out.push(`<tr><td>Failover Attempts:</td><td><input name='b_max' id='b_max' type=text value='${bsel.s.maxAttempts ?? 0}'></td></tr>\n`);
    out.push('<tr><td>Disable Failover:</td>');
    out.push(radio('b_sforce', bsel.s.stickyForce));
    out.push('</tr>\n');
    out.push("<tr><td>Sticky Session:</td><td><input name='b_ss' id='b_ss' size=64 type=text ");
    out.push(bsel.s.sticky !== bsel.s.stickyPath ? `value ="${esc(bsel.s.sticky)} | ${esc(bsel.s.stickyPath)}` : `value ="${esc(bsel.s.sticky)}`);
    out.push("\">&nbsp;&nbsp;&nbsp;&nbsp;(Use '-' to delete)</td></tr>\n");
    if (st !== undefined && st.storage.numFreeSlots(st.wslot) !== 0) {
      out.push("<tr><td>Add New Worker:</td><td><input name='b_nwrkr' id='b_nwrkr' size=32 type=text>&nbsp;&nbsp;&nbsp;&nbsp;Are you sure? <input name='b_wyes' id='b_wyes' type=checkbox value='1'></td></tr>");
    }
    out.push("<tr><td colspan=2><input type=submit value='Submit'></td></tr>\n");
    out.push("</table>\n<input type=hidden name='b' id='b' ");
    out.push(`value="${esc(bsel.s.name.slice(PREFIX_LEN))}">\n`);
    out.push(`<input type=hidden name='nonce' id='nonce' value='${bsel.s.nonce}'>\n`);
    out.push('</form>\n', '<hr />\n');
  }
  out.push(r.rt.signature(r, ''));
  out.push('</body></html>\n');
  return out.join('');
}

async function handle(r: Request, api: ProxyApi): Promise<number> {
  const conf = api.serverConf(r.server);
  for (const b of conf.balancers) syncBalancerFor(b, r.rt.ctx, r.server);
  const params = new Map<string, string>();
  if (r.args !== undefined && r.method === 'GET') {
    r.log('proxy_balancer', APLOG_DEBUG, 'AH01191: parsing r->args');
    push2table(r.args, params, ['w', 'b', 'nonce', 'xml']);
  }
  if (r.method === 'POST') {
    let body: Buffer;
    try {
      body = await r.readAll();
    } catch (e) {
      const st = (e as { status?: number }).status;
      return typeof st === 'number' ? st : 400;
    }
    push2table(body.subarray(0, 1024).toString('latin1'), params, undefined);
  }
  const ref = r.headersIn.get('Referer');
  if (ref === undefined || !safeReferer(r, ref)) {
    r.log('proxy_balancer', APLOG_ERR, `AH10187: ignoring params in balancer-manager cross-site access ${ref ?? '(null)'}: ${r.rt.serverName(r)}`);
    params.clear();
  }
  let bsel: ProxyBalancer | undefined;
  let wsel: ProxyWorker | undefined;
  const bname = params.get('b');
  if (bname !== undefined) bsel = api.getBalancer(conf, `balancer://${bname}`);
  const wname = params.get('w');
  if (wname !== undefined) wsel = api.getWorker(bsel, conf, wname);
  const nonce = params.get('nonce');
  if (bsel !== undefined && bsel.s.nonce !== '' && nonce !== undefined && nonce === bsel.s.nonce) {
    const rv = processParams(r, conf, api, bsel, wsel, params);
    // The change reaches the table before the answer does.
    flushAll();
    if (rv !== 0) return 400;
  }
  r.log('proxy_balancer', APLOG_DEBUG, 'AH01204: genning page');
  let text: string;
  if (params.has('xml')) {
    r.contentType = 'text/xml';
    text = xmlPage(r, conf);
  } else {
    r.contentType = 'text/html; charset=ISO-8859-1';
    text = htmlPage(r, conf, bsel, wsel);
  }
  if (params.has('xml')) {
    await r.write([dataBucket(text), EOS]);
  } else {
    // httpd flushes the page before its end: the response is chunked.
    await r.write([dataBucket(text), FLUSH]);
    await r.write([EOS]);
  }
  return DONE;
}

/** balancer_handler. */
export function balancerHandler(r: Request): MaybePromise<number> {
  if (r.handler !== 'balancer-manager') return DECLINED;
  if (r.method !== 'GET' && r.method !== 'POST') return DECLINED;
  const api = apiOf(r.rt.ctx);
  if (api === undefined) return DECLINED;
  void globals;
  return handle(r, api);
}
