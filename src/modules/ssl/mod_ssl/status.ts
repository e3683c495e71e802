// mod_ssl's part of the server-status page (httpd's ssl_ext_status_hook in ssl_scache.c, given
// to mod_status through the status hook): the "SSL/TLS Session Cache Status" box around what
// the session cache's provider reports, or with ?auto a "TLSSessionCacheStatus" line before
// the provider's "Key: value" lines. Nothing when no session cache is configured
// (SSLSessionCache none or absent). Shown with ExtendedStatus Off too, as httpd shows it.

import type { Request } from '../../../server/request/request.js';
import type { SocacheInstance } from '../../../server/socache.js';
import { AP_STATUS_SHORT, type StatusHookProvider, type StatusWriter } from '../../../server/status-hook.js';
import type { MaybePromise } from '../../../server/module.js';

/** The box's head (httpd ends the title line with a bare CR, not a newline). */
const HEAD =
  '<hr>\n' +
  '<table cellspacing=0 cellpadding=0>\n' +
  '<tr><td bgcolor="#000000">\n' +
  '<b><font color="#ffffff" face="Arial,Helvetica">SSL/TLS Session Cache Status:</font></b>\r' +
  '</td></tr>\n' +
  '<tr><td bgcolor="#ffffff">\n';
const TAIL = '</td></tr>\n</table>\n';

/** The hook; `cache` gives the session cache of the configuration serving `r`. */
export function sslStatusHook(cache: (r: Request) => SocacheInstance | null): StatusHookProvider {
  return {
    status(r: Request, flags: number, put: StatusWriter): MaybePromise<void> {
      const c = cache(r);
      if (c === null) return undefined;
      const short = (flags & AP_STATUS_SHORT) !== 0;
      put(short ? 'TLSSessionCacheStatus\n' : HEAD);
      const w = c.status(r, flags, put);
      if (short) return w;
      if (w instanceof Promise) return w.then(() => put(TAIL));
      put(TAIL);
      return undefined;
    },
  };
}
