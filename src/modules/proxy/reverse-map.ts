// ProxyPassReverse, ProxyPassReverseCookiePath and ProxyPassReverseCookieDomain applied to a
// backend's response fields (proxy_util.c's ap_proxy_location_reverse_map and
// ap_proxy_cookie_reverse_map), shared by the protocol modules that pass responses on
// (mod_proxy_http, mod_proxy_http2). mod_proxy's functions come through "proxy_api".

import type { Request } from '../../server/request/request.js';
import { PROXYREQ_REVERSE, type ProxyApi, type ProxyDirConf } from '../../proxy/api.js';

function apiOf(r: Request): ProxyApi {
  return r.rt.ctx.provider('proxy_api', 'mod_proxy')!;
}

function isUrl(u: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(u);
}

/** ap_proxy_location_reverse_map. */
export function locationReverseMap(r: Request, dc: ProxyDirConf, url: string): string {
  if (r.proxyreq !== PROXYREQ_REVERSE) return url;
  const interp = dc.interpolateEnv === true;
  for (const ent of dc.raliases) {
    const real = interp && ent.interpolate ? interpolate(r, ent.real) : ent.real;
    const fake = interp && ent.interpolate ? interpolate(r, ent.fake) : ent.fake;
    const balancer = /^balancer:\/\//i.test(real) ? apiOf(r).getBalancer(apiOf(r).serverConf(r.server), real) : undefined;
    if (balancer !== undefined) {
      const after = real.slice('balancer://'.length);
      const slash = after.indexOf('/');
      let urlpart: string | undefined = slash < 0 ? undefined : after.slice(slash);
      if (urlpart === '/') urlpart = undefined;
      for (const w of balancer.workers) {
        let name = w.name;
        if (urlpart !== undefined) {
          if (name.endsWith('/')) name = name.slice(0, -1);
          if (url.length >= name.length + urlpart.length && url.slice(0, name.length).toLowerCase() === name.toLowerCase() && url.startsWith(urlpart, name.length)) {
            const u = fake + url.slice(name.length + urlpart.length);
            return isUrl(u) ? u : r.rt.constructUrl(r, u);
          }
        } else if (url.length >= name.length && url.slice(0, name.length).toLowerCase() === name.toLowerCase()) {
          const u = fake === '/' && url[name.length] === '/' ? url.slice(name.length) : fake + url.slice(name.length);
          return isUrl(u) ? u : r.rt.constructUrl(r, u);
        }
      }
      continue;
    }
    let part = url;
    if (real.startsWith('/')) {
      const p = url.indexOf('://');
      if (p >= 0) {
        const s = url.indexOf('/', p + 3);
        if (s >= 0) part = url.slice(s);
      }
    }
    if (real.length > 0 && part.length >= real.length && part.slice(0, real.length).toLowerCase() === real.toLowerCase()) {
      const u = fake + part.slice(real.length);
      return isUrl(u) ? u : r.rt.constructUrl(r, u);
    }
  }
  return url;
}

function interpolate(r: Request, s: string): string {
  return s.includes('${') ? s.replace(/\$\{([^}]*)\}/g, (_m, n: string) => r.subprocessEnv.get(n) ?? '') : s;
}

/** ap_proxy_cookie_reverse_map: the path= and domain= of a Set-Cookie value. */
export function cookieReverseMap(r: Request, dc: ProxyDirConf, str: string): string {
  if (r.proxyreq !== PROXYREQ_REVERSE) return str;
  const interp = dc.interpolateEnv === true;
  let newpath: string | undefined; let newdomain: string | undefined;
  let poffs = -1; let pend = -1; let doffs = -1; let dend = -1;
  let pos = 0;
  while (pos <= str.length) {
    const semi = str.indexOf(';', pos);
    const end = semi < 0 ? str.length : semi;
    let t = pos;
    while (t < end && /\s/.test(str[t]!)) t++;
    const token = str.slice(t, end);
    if (token.length > 0) {
      if (token.slice(0, 5).toLowerCase() === 'path=') {
        poffs = t + 5; pend = end;
        const v = str.slice(poffs, pend);
        for (const ent of dc.cookiePaths) {
          const fake = interp && ent.interpolate ? interpolate(r, ent.fake) : ent.fake;
          if (v.length >= fake.length && v.startsWith(fake)) { newpath = interp && ent.interpolate ? interpolate(r, ent.real) : ent.real; break; }
        }
      } else if (token.slice(0, 7).toLowerCase() === 'domain=') {
        doffs = t + 7; dend = end;
        const v = str.slice(doffs, dend);
        for (const ent of dc.cookieDomains) {
          const fake = interp && ent.interpolate ? interpolate(r, ent.fake) : ent.fake;
          if (v.length >= fake.length && v.slice(0, fake.length).toLowerCase() === fake.toLowerCase()) { newdomain = interp && ent.interpolate ? interpolate(r, ent.real) : ent.real; break; }
        }
      }
    }
    if (semi < 0) break;
    pos = semi + 1;
  }
  if (newpath === undefined && newdomain === undefined) return str;
  const edits: [number, number, string][] = [];
  if (newpath !== undefined) edits.push([poffs, pend, newpath]);
  if (newdomain !== undefined) edits.push([doffs, dend, newdomain]);
  edits.sort((a, b) => b[0] - a[0]);
  let out = str;
  for (const [s, e, v] of edits) out = out.slice(0, s) + v + out.slice(e);
  return out;
}

