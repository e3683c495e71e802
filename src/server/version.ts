// Product and compatibility versions. plume reports the Apache version whose behaviour it
// implements, so tools that look for "Apache/2.4.N" keep working.

export const PLUME_VERSION = '0.1.0';
export const APACHE_COMPAT_VERSION = '2.4.71';
export const APACHE_MAJOR = 2;
export const APACHE_MINOR = 4;
export const APACHE_PATCH = 71;
/** httpd's module magic number for 2.4.71, reported by -V. */
export const MMN = '20120211:142';
export const BUILT = '2026-11-22T00:00:00';

import type { ServerTokens } from './core/config.js';

/** The Server header / signature product string for a ServerTokens setting. The product is
 *  plume's own; Full (also mod_status's ServerVersion) puts the Apache version it is
 *  compatible with first, as "Apache/2.4.71 (Unix) plume/0.1.0": monitoring that reads the
 *  version after the first '/' (prometheus-apache-exporter's apache_version) reads 2.4.71. */
export function serverBanner(tokens: ServerTokens): string {
  let b = banners.get(tokens);
  if (b === undefined) { b = makeBanner(tokens); banners.set(tokens, b); }
  return b;
}
const banners = new Map<ServerTokens, string>();

function makeBanner(tokens: ServerTokens): string {
  const [maj, min] = PLUME_VERSION.split('.');
  switch (tokens) {
    case 'Prod': return 'plume';
    case 'Major': return `plume/${maj}`;
    case 'Minor': return `plume/${maj}.${min}`;
    case 'Min': return `plume/${PLUME_VERSION}`;
    case 'OS': return `plume/${PLUME_VERSION} (Unix)`;
    case 'Full': return `Apache/${APACHE_COMPAT_VERSION} (Unix) plume/${PLUME_VERSION}`;
  }
}
