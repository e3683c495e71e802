// mod_proxy's part of the server-status page (httpd's proxy_status_hook), given to mod_status
// through the core's status hook: with ProxyStatus On or Full, each balancer of the request's
// server with its members — an HTML table per balancer, or ProxyBalancer[i]Worker[n] lines in
// the ?auto form. On and Full print the same (as in httpd 2.4).

import type { Request } from '../../../server/request/request.js';
import { AP_STATUS_SHORT, type StatusHookProvider, type StatusWriter } from '../../../server/status-hook.js';
import { strfsize } from '../../../lib/apr-strings.js';
import { parseWorkerStatus, type ProxyServerConf } from '../../../proxy/api.js';

const LEGEND =
  '<hr /><table>\n' +
  '<tr><th>SSes</th><td>Sticky session name</td></tr>\n' +
  '<tr><th>Timeout</th><td>Balancer Timeout</td></tr>\n' +
  '<tr><th>Sch</th><td>Connection scheme</td></tr>\n' +
  '<tr><th>Host</th><td>Backend Hostname</td></tr>\n' +
  '<tr><th>Stat</th><td>Worker status</td></tr>\n' +
  '<tr><th>Route</th><td>Session Route</td></tr>\n' +
  '<tr><th>Redir</th><td>Session Route Redirection</td></tr>\n' +
  '<tr><th>F</th><td>Load Balancer Factor</td></tr>\n' +
  '<tr><th>Acc</th><td>Number of uses</td></tr>\n' +
  '<tr><th>Wr</th><td>Number of bytes transferred</td></tr>\n' +
  '<tr><th>Rd</th><td>Number of bytes read</td></tr>\n' +
  '</table>';

const BALANCER_HEAD = '\n\n<table border="0"><tr><th>SSes</th><th>Timeout</th><th>Method</th></tr>\n<tr>';
const MEMBERS_HEAD =
  '\n\n<table border="0"><tr><th>Sch</th><th>Host</th><th>Stat</th><th>Route</th><th>Redir</th>' +
  '<th>F</th><th>Set</th><th>Acc</th><th>Busy</th><th>Wr</th><th>Rd</th></tr>\n';

/** The status hook; `serverConf` gives mod_proxy's configuration of the request's server. */
export function proxyStatusHook(serverConf: (r: Request) => ProxyServerConf): StatusHookProvider {
  return {
    status(r: Request, flags: number, put: StatusWriter): void {
      const conf = serverConf(r);
      if (conf.balancers.length === 0 || (conf.proxyStatus ?? 'off') === 'off') return;
      const short = (flags & AP_STATUS_SHORT) !== 0;
      conf.balancers.forEach((b, i) => {
        if (!short) {
          put(`<hr />\n<h1>Proxy LoadBalancer Status for ${b.s.name}</h1>\n\n`);
          put(BALANCER_HEAD);
          if (b.s.sticky !== '') {
            put(b.s.sticky !== b.s.stickyPath ? `<td>${b.s.sticky} | ${b.s.stickyPath}` : `<td>${b.s.sticky}`);
          } else {
            put('<td> - ');
          }
          put(`</td><td>${Math.trunc(b.s.timeout / 1000)}</td>`);
          put(`<td>${b.lbmethod?.name ?? b.s.lbpname}</td>\n</table>\n`);
          put(MEMBERS_HEAD);
        } else {
          put(`ProxyBalancer[${i}]Name: ${b.s.name}\n`);
        }
        b.workers.forEach((w, n) => {
          const s = w.s;
          if (!short) {
            put(`<tr>\n<td>${s.scheme}</td><td>${s.hostname}</td><td>${parseWorkerStatus(w)}`);
            put(`</td><td>${s.route}</td><td>${s.redirect}`);
            put(`</td><td>${s.lbfactor.toFixed(2)}</td><td>${s.lbset}</td><td>${s.elected}</td><td>${s.busy}</td><td>`);
            put(`${strfsize(s.transferred)}</td><td>${strfsize(s.read)}</td>\n</tr>\n`);
          } else {
            const at = `ProxyBalancer[${i}]Worker[${n}]`;
            put(`${at}Name: ${s.name}\n${at}Status: ${parseWorkerStatus(w)}\n${at}Elected: ${s.elected}\n` +
              `${at}Busy: ${s.busy}\n${at}Sent: ${Math.floor(s.transferred / 1024)}K\n${at}Rcvd: ${Math.floor(s.read / 1024)}K\n`);
          }
        });
        if (!short) put('</table>\n');
      });
      if (!short) put(LEGEND);
    },
  };
}
