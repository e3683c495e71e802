// mod_dav's property output (modules/dav/main/props.c, std_liveprop.c): the <D:response>
// of PROPFIND for allprop, propname and prop requests, with httpd's namespace prefixes:
// lp1 = DAV: and lp2 = http://apache.org/dav/props/ for live properties, nsN for the
// dead property database's namespaces, gN for other names it had to invent.

import type { DavLock, DavResource, DeadProps } from './api.js';
import type { XmlDoc, XmlElem } from './xml.js';
import { quoteXml } from './xml.js';

export const LP_NS: readonly string[] = ['', 'DAV:', 'http://apache.org/dav/props/'];
/** Live properties a provider of the filesystem kind defines (read-only for PROPPATCH). */
const PROVIDER_LIVE = new Set(['creationdate', 'getcontentlength', 'getlastmodified', 'getetag']);
const CORE_LIVE = new Set(['resourcetype', 'supportedlock', 'lockdiscovery', 'getcontenttype']);

/** Whether DAV:name / apache:executable is a live property (not storable as a dead one). */
export function isLiveProp(ns: string, name: string): boolean {
  if (ns === 'DAV:') return PROVIDER_LIVE.has(name) || CORE_LIVE.has(name);
  return ns === LP_NS[2] && name === 'executable';
}

export const SUPPORTED_LOCK =
  '<D:supportedlock>\n'
  + '<D:lockentry>\n<D:lockscope><D:exclusive/></D:lockscope>\n<D:locktype><D:write/></D:locktype>\n</D:lockentry>\n'
  + '<D:lockentry>\n<D:lockscope><D:shared/></D:lockscope>\n<D:locktype><D:write/></D:locktype>\n</D:lockentry>\n'
  + '</D:supportedlock>\n';

/** One <D:activelock> as dav_lock_get_activelock prints it. */
export function activeLock(l: DavLock, now: number): string {
  const timeout = l.expires === 0 ? 'Infinite' : `Second-${Math.max(0, Math.floor((l.expires - now) / 1000))}`;
  return '<D:activelock>\n<D:locktype><D:write/></D:locktype>\n'
    + `<D:lockscope><D:${l.scope}/></D:lockscope>\n`
    + `<D:depth>${l.depth === 0 ? '0' : 'infinity'}</D:depth>\n`
    + (l.owner ?? '')
    + `<D:timeout>${timeout}</D:timeout>\n`
    + `<D:locktoken>\n<D:href>${l.token}</D:href>\n</D:locktoken>\n</D:activelock>\n`;
}

/** What PROPFIND asks for. */
export type PropRequest =
  | { kind: 'allprop' }
  | { kind: 'propname' }
  | { kind: 'prop'; doc: XmlDoc; names: readonly XmlElem[] };

/** What the resource offers, gathered by the caller. */
export interface PropSource {
  readonly res: DavResource;
  readonly lockNull: boolean;
  readonly dead: DeadProps | null;
  /** The provider's live properties: [lp index, name, value]. */
  readonly live: readonly [number, string, string][];
  /** undefined = no lock database (no supportedlock / lockdiscovery). */
  readonly locks: readonly DavLock[] | undefined;
  readonly lockDiscovery: boolean;
  readonly contentType: string | undefined;
}

/** Namespace prefixes as dav_xmlns_info keeps them: uri -> prefix, in insertion order.
 *  DIFFERENCE: httpd prints these (and the lp1/lp2 pair) in an APR hash table's order, which
 *  varies between processes; plume keeps one fixed order (docs/differences.md). */
class Xmlns {
  readonly byUri = new Map<string, string>();
  private g = 0;
  add(prefix: string, uri: string): void { if (!this.byUri.has(uri)) this.byUri.set(uri, prefix); }
  prefixFor(uri: string): string {
    let p = this.byUri.get(uri);
    if (p === undefined) { p = `g${this.g++}`; this.byUri.set(uri, p); }
    return p;
  }
  text(): string {
    let s = '';
    for (const [uri, p] of this.byUri) s += ` xmlns:${p}="${quoteXml(uri, true)}"`;
    return s;
  }
}

function lockDiscovery(src: PropSource, now: number): string {
  if (!src.lockDiscovery || src.locks === undefined || src.locks.length === 0) return '<D:lockdiscovery/>\n';
  return '<D:lockdiscovery>' + src.locks.map((l) => activeLock(l, now)).join('') + '</D:lockdiscovery>\n';
}

function resourceType(src: PropSource, value: boolean): string {
  if (!value || !src.res.collection) return '<lp1:resourcetype/>\n';
  return '<lp1:resourcetype><D:collection/></lp1:resourcetype>\n';
}

/** Live properties in httpd's order for allprop/propname. */
function allLive(src: PropSource, value: boolean, now: number): string {
  let s = resourceType(src, value);
  for (const [ns, name, v] of src.live) s += value ? `<lp${ns}:${name}>${v}</lp${ns}:${name}>\n` : `<lp${ns}:${name}/>\n`;
  if (src.locks !== undefined) {
    s += value ? SUPPORTED_LOCK : '<D:supportedlock/>\n';
    s += value ? lockDiscovery(src, now) : '<D:lockdiscovery/>\n';
  }
  if (src.contentType !== undefined) s += value ? `<D:getcontenttype>${quoteXml(src.contentType)}</D:getcontenttype>\n` : '<D:getcontenttype/>\n';
  return s;
}

function deadNs(dead: DeadProps | null): string {
  if (dead === null) return '';
  return dead.namespaces.map((u, i) => ` xmlns:ns${i}="${quoteXml(u, true)}"`).join('');
}

/** The xml of a stored dead property without its value (`<ns1:color/>`). */
function deadName(p: { ns: number; name: string }): string {
  return p.ns < 0 ? `<${p.name} xmlns=""/>` : `<ns${p.ns}:${p.name}/>`;
}

const OK_END = '</D:prop>\n<D:status>HTTP/1.1 200 OK</D:status>\n</D:propstat>\n';

/** The <D:response> element for one resource; `href` is already escaped. */
export function propResponse(href: string, src: PropSource, req: PropRequest, now: number): string {
  if (req.kind !== 'prop') {
    const value = req.kind === 'allprop';
    let body = '<D:propstat>\n<D:prop>\n';
    if (src.dead !== null) for (const p of src.dead.props) body += (value ? p.xml : deadName(p)) + '\n';
    body += allLive(src, value, now);
    const xmlns = deadNs(src.dead) + ' xmlns:lp2="http://apache.org/dav/props/" xmlns:lp1="DAV:"';
    return `<D:response${xmlns}>\n<D:href>${href}</D:href>\n${body}${OK_END}</D:response>\n`;
  }
  const { doc, names } = req;
  let good = '';
  let bad = '';
  let haveGood = false;
  let lpNs = '';
  const lpMarked = new Set<number>();
  const markLp = (list: readonly number[]): void => {
    for (const n of list) if (!lpMarked.has(n)) { lpMarked.add(n); lpNs += ` xmlns:lp${n}="${LP_NS[n]}"`; }
  };
  const xi = new Xmlns();
  let xiFilled = false;
  for (const el of names) {
    const uri = el.ns < 0 ? '' : doc.namespaces[el.ns]!;
    const name = el.name;
    let live: string | undefined;
    if (uri === 'DAV:' && name === 'resourcetype' && (src.res.exists || src.lockNull)) { live = resourceType(src, true); markLp([1]); }
    else if (uri === 'DAV:' && name === 'supportedlock' && src.locks !== undefined) live = SUPPORTED_LOCK;
    else if (uri === 'DAV:' && name === 'lockdiscovery' && src.locks !== undefined) live = lockDiscovery(src, now);
    else if (uri === 'DAV:' && name === 'getcontenttype' && src.contentType !== undefined) live = `<D:getcontenttype>${quoteXml(src.contentType)}</D:getcontenttype>\n`;
    else {
      const hit = src.live.find(([ns, n]) => n === name && LP_NS[ns] === uri);
      if (hit !== undefined) { live = `<lp${hit[0]}:${name}>${hit[2]}</lp${hit[0]}:${name}>\n`; markLp([1, 2]); }
    }
    if (live !== undefined) { good += live; haveGood = true; continue; }
    const dead = src.dead;
    if (dead !== null) {
      const nsIdx = dead.namespaces.indexOf(uri);
      const found = dead.props.find((p) => p.name === name && (uri === '' ? p.ns < 0 : p.ns === nsIdx));
      if (found !== undefined) {
        good += found.xml + '\n';
        haveGood = true;
        if (!xiFilled) { dead.namespaces.forEach((u, i) => xi.add(`ns${i}`, u)); xiFilled = true; }
        continue;
      }
    }
    bad += uri === '' ? `<${name} xmlns=""/>\n` : `<${xi.prefixFor(uri)}:${name}/>\n`;
  }
  let stats = '';
  if (haveGood || bad === '') stats += `<D:propstat>\n<D:prop>\n${good}${OK_END}`;
  if (bad !== '') stats += `<D:propstat>\n<D:prop>\n${bad}</D:prop>\n<D:status>HTTP/1.1 404 Not Found</D:status>\n</D:propstat>\n`;
  return `<D:response${lpNs}${xi.text()}>\n<D:href>${href}</D:href>\n${stats}</D:response>\n`;
}
