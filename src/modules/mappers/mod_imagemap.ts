// mod_imagemap (modules/mappers/mod_imagemap.c): server-side image maps. A map file (handler
// imap-file or type application/x-httpd-imap) requested with "?x,y" redirects (302) to the
// URL of the first rect, circle or poly region holding the point, else the nearest point,
// else the default; without coordinates it answers a menu of the map's links (ImapMenu
// formatted, semiformatted, unformatted; none = the default's answer).
//
//  - Map lines: "base URL", "default URL", "rect|circle|poly|point URL ["text"] x,y ...",
//    comments with '#', blank lines (both shown in some menu styles).
//  - URLs: absolute (scheme:), "map"/"menu" (the map itself), "referer" (the Referer header,
//    kept as sent — never inserted unescaped into the menu: hrefs are URI-escaped, texts
//    HTML-escaped), "nocontent" (204), "error" (500), or relative to the base (ImapBase:
//    map, referer or a URL), with "../" resolved against the base's directory.
//  - The parsed map is kept per file version (inode, size, mtime), not re-read per request.

import * as fs from 'node:fs';
import { DECLINED, HOOK_MIDDLE, MODULE_API_VERSION, OK, OR_INDEXES, defineModule, directive } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { Request } from '../../server/request/request.js';
import { EOS } from '../../server/filters.js';
import { APLOG_ERR } from '../../server/log/levels.js';
import { fsPath } from '../../server/request/stat-cache.js';
import { DOCTYPE } from '../../server/http/status.js';
import { escapeHtml } from '../../server/http/response.js';
import { escapeUri } from '../../server/util-script.js';

const IMAP_MAGIC_TYPE = 'application/x-httpd-imap';
const MAXVERTS = 100;

interface ImapDir {
  menu: string | undefined;
  dflt: string | undefined;
  base: string | undefined;
}

const eq = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

// ---- geometry (doubles, as httpd) --------------------------------------------------------------

type Pt = [number, number];

function pointInRect(p: Pt, c: Pt[]): boolean {
  const [minX, maxX] = c[0]![0] > c[1]![0] ? [c[1]![0], c[0]![0]] : [c[0]![0], c[1]![0]];
  const [minY, maxY] = c[0]![1] > c[1]![1] ? [c[1]![1], c[0]![1]] : [c[0]![1], c[1]![1]];
  return p[0] >= minX && p[0] <= maxX && p[1] >= minY && p[1] <= maxY;
}

function pointInCircle(p: Pt, c: Pt[]): boolean {
  const r1 = (c[0]![1] - c[1]![1]) ** 2 + (c[0]![0] - c[1]![0]) ** 2;
  const r2 = (c[0]![1] - p[1]) ** 2 + (c[0]![0] - p[0]) ** 2;
  return r2 <= r1;
}

function pointInPoly(p: Pt, pg: Pt[]): boolean {
  const n = pg.length;
  let crossings = 0;
  const [x, y] = p;
  for (let i = 0; i < n; i++) {
    const [x1, y1] = pg[i]!;
    const [x2, y2] = pg[(i + 1) % n]!;
    const d = (y - y1) * (x2 - x1) - (x - x1) * (y2 - y1);
    if ((y1 >= y) !== (y2 >= y)) crossings += (y2 - y1 >= 0 ? d >= 0 : d <= 0) ? 1 : 0;
    if (d === 0 && Math.min(x1, x2) <= x && x <= Math.max(x1, x2) && Math.min(y1, y2) <= y && y <= Math.max(y1, y2)) return true;
  }
  return (crossings & 1) === 1;
}

/** strtod's reading of a decimal number at the start of `s` (after skipped text). */
function strtod(s: string): { value: number; len: number } | undefined {
  const m = /^[ \t\n\v\f\r]*[+-]?(\d+\.?\d*(e[+-]?\d+)?|\.\d+(e[+-]?\d+)?)/i.exec(s);
  return m === null ? undefined : { value: parseFloat(m[0]), len: m[0].length };
}

function xCoord(args: string | undefined): number {
  if (args === undefined) return -1;
  let i = 0;
  while (i < args.length && !/[0-9,]/.test(args[i]!)) i++;
  return strtod(args.slice(i))?.value ?? -1;
}

function yCoord(args: string | undefined): number {
  if (args === undefined) return -1;
  const c = args.indexOf(',');
  if (c < 0) return -1;
  let i = c + 1;
  while (i < args.length && !/[0-9]/.test(args[i]!)) i++;
  return strtod(args.slice(i))?.value ?? -1;
}

/** The vertices after the URL ("%lf%*[, ]%lf" pairs, as httpd scans them). */
export function vertices(s: string): { pts: Pt[]; rest: string } {
  const pts: Pt[] = [];
  let pos = s;
  while (pts.length < MAXVERTS) {
    const a = strtod(pos);
    if (a === undefined) break;
    const sep = /^[, ]+/.exec(pos.slice(a.len));
    if (sep === null) break;
    const b = strtod(pos.slice(a.len + sep[0].length));
    if (b === undefined) break;
    pts.push([a.value, b.value]);
    // httpd steps over white space, digits, one character, white space, digits.
    let i = 0;
    while (i < pos.length && /\s/.test(pos[i]!)) i++;
    while (i < pos.length && /\d/.test(pos[i]!)) i++;
    i++;
    while (i < pos.length && /\s/.test(pos[i]!)) i++;
    while (i < pos.length && /\d/.test(pos[i]!)) i++;
    pos = pos.slice(Math.min(i, pos.length));
  }
  return { pts, rest: pos };
}

/** read_quoted: a leading "quoted text" (after white space), and what follows it. */
function readQuoted(s: string): { text: string | undefined; rest: string } {
  const t = s.replace(/^\s+/, '');
  if (!t.startsWith('"')) return { text: undefined, rest: s };
  const end = t.indexOf('"', 1);
  if (end < 0) return { text: t.slice(1), rest: '' };
  return { text: t.slice(1, end), rest: t.slice(end + 1) };
}

// ---- the map file --------------------------------------------------------------------------------

type MapLine =
  | { kind: 'blank' }
  | { kind: 'comment'; text: string }
  | { kind: 'short'; line: number }
  | { kind: 'entry'; directive: string; value: string; rest: string };

/** ap_cfg_getline's lines (continuations joined, trimmed), split into httpd's fields. */
export function parseMap(text: string): MapLine[] {
  const out: MapLine[] = [];
  const phys = text.split('\n');
  if (phys[phys.length - 1] === '') phys.pop();
  let acc = '';
  for (let i = 0; i < phys.length; i++) {
    let l = phys[i]!.replace(/\r$/, '');
    if (l.endsWith('\\') && i < phys.length - 1) { acc += l.slice(0, -1); continue; }
    l = (acc + l).replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, '');
    acc = '';
    if (l === '') { out.push({ kind: 'blank' }); continue; }
    if (l[0] === '#') { out.push({ kind: 'comment', text: l.slice(1) }); continue; }
    const m = /^(\S+)(\s)(.*)$/s.exec(l);
    if (m === null || m[3] === undefined) { out.push({ kind: 'short', line: i + 1 }); continue; }
    const after = m[3].replace(/^\s+/, '');
    const v = /^(\S*)(\s?)(.*)$/s.exec(after)!;
    out.push({ kind: 'entry', directive: m[1]!, value: v[1]!, rest: v[3]! });
  }
  return out;
}

const mapCache = new Map<string, { ino: number; size: number; mtimeMs: number; lines: MapLine[] }>();

function loadMap(r: Request): MapLine[] | undefined {
  const st = r.finfo;
  const hit = mapCache.get(r.filename);
  if (st !== null && hit !== undefined && hit.ino === st.ino && hit.size === st.size && hit.mtimeMs === st.mtimeMs) return hit.lines;
  let text: string;
  try {
    text = fs.readFileSync(fsPath(r.filename), 'latin1');
  } catch {
    return undefined;
  }
  const lines = parseMap(text);
  if (st !== null) {
    if (mapCache.size > 256) mapCache.clear();
    mapCache.set(r.filename, { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, lines });
  }
  return lines;
}

/** imap_url: the URL a map value names, relative to `base`; undefined on httpd's errors. */
function imapUrl(r: Request, base: string | undefined, valueIn: string): string | undefined {
  let value = valueIn;
  if (eq(value, 'map') || eq(value, 'menu')) return r.rt.constructUrl(r, r.uri);
  if (eq(value, 'nocontent') || eq(value, 'error')) return value;
  if (eq(value, 'referer')) {
    const ref = r.headersIn.get('Referer');
    if (ref !== undefined && ref !== '') return ref;
    value = '';
  }
  let i = 0;
  while (i < value.length && /[A-Za-z]/.test(value[i]!)) i++;
  if (value[i] === ':') return value;
  if (base === undefined || base === '') return value !== '' ? value : r.rt.constructUrl(r, '/');
  if (!base.includes('/') && (value.startsWith('../') || value === '..')) {
    r.log('imagemap', APLOG_ERR, `AH00677: invalid base directive in map file: ${r.uri}`);
    return undefined;
  }
  let myBase = base;
  let dirStart = -1; // index in myBase where the directory part starts
  for (let p = 0; p < myBase.length; p++) {
    if (myBase[p] === '/' && myBase[p + 1] === '/') { p++; continue; }
    if (myBase[p] === '/') {
      if (value[0] === '/') myBase = myBase.slice(0, p);
      else {
        dirStart = p;
        myBase = myBase.slice(0, myBase.lastIndexOf('/') + 1);
      }
      break;
    }
  }
  while (value.startsWith('../') || value === '..') {
    const dir = dirStart >= 0 ? myBase.slice(dirStart) : '';
    if (dirStart >= 0 && dir.length > 0) {
      // Cut at the last slash, and again while that removed only a trailing slash.
      let d = dir;
      const slen = d.length;
      let clen = slen - 1;
      while (slen - clen === 1) {
        const k = d.lastIndexOf('/');
        if (k >= 0) d = d.slice(0, k);
        clen = d.length;
        if (clen === 0) break;
      }
      myBase = myBase.slice(0, dirStart) + d;
      value = value.slice(2);
    } else if (dirStart >= 0) {
      r.log('imagemap', APLOG_ERR, `AH00678: invalid directory name in map file: ${r.uri}`);
      return undefined;
    } else {
      // DIFFERENCE: httpd loops forever on a base with no path ("http://host") and a "../"
      // value; plume drops the "..".
      value = value.slice(2);
    }
    if (value.startsWith('/../') || value === '/..') value = value.slice(1);
  }
  return value !== '' ? myBase + value : myBase;
}

function reply(r: Request, redirect: string): number {
  if (eq(redirect, 'error')) return 500;
  if (eq(redirect, 'nocontent')) return 204;
  if (redirect !== '') { r.headersOut.set('Location', redirect); return 302; }
  return 500;
}

// ---- the menu ----------------------------------------------------------------------------------

class Menu {
  out = '';
  constructor(readonly style: string) {}
  header(uri: string): void {
    this.out += `${DOCTYPE}<html><head>\n<title>Menu for ${escapeHtml(uri)}</title>\n</head><body>\n`;
    if (eq(this.style, 'formatted')) this.out += `<h1>Menu for ${escapeHtml(uri)}</h1>\n<hr />\n\n`;
  }
  blank(): void {
    if (eq(this.style, 'formatted') || eq(this.style, 'unformatted')) this.out += '\n';
    else if (eq(this.style, 'semiformatted')) this.out += '<br />\n';
  }
  comment(text: string): void {
    if (eq(this.style, 'formatted')) this.out += '\n';
    else if ((eq(this.style, 'semiformatted') || eq(this.style, 'unformatted')) && text !== '') this.out += text + '\n';
  }
  link(isDefault: boolean, href: string, text: string): void {
    if (eq(href, 'error') || eq(href, 'nocontent')) return;
    const h = escapeUri(href);
    const t = escapeHtml(text);
    if (eq(this.style, 'formatted') || eq(this.style, 'semiformatted')) this.out += `<pre>${isDefault ? '(Default) ' : '          '}<a href="${h}">${t}</a></pre>\n`;
    else if (eq(this.style, 'unformatted')) this.out += `<a href="${h}">${t}</a>`;
  }
  footer(): void {
    this.out += '\n\n</body>\n</html>\n';
  }
}

async function sendMenu(r: Request, menu: Menu): Promise<number> {
  r.contentType = 'text/html; charset=ISO-8859-1';
  await r.write(r.headerOnly ? [EOS] : [{ kind: 'data', data: Buffer.from(menu.out, 'latin1') }, EOS]);
  return OK;
}

// ---- the handler -------------------------------------------------------------------------------

async function imapHandler(r: Request): Promise<number> {
  if ((r.method !== 'GET' && r.method !== 'HEAD') || (r.handler !== IMAP_MAGIC_TYPE && r.handler !== 'imap-file')) return DECLINED;
  const conf = self.dir(r);
  const menuStyle = conf.menu ?? 'formatted';
  const lines = loadMap(r);
  if (lines === undefined) return 404;
  let base = imapUrl(r, undefined, conf.base ?? 'map');
  if (base === undefined) return 500;
  let dflt = imapUrl(r, undefined, conf.dflt ?? 'nocontent');
  if (dflt === undefined) return 500;
  let tp: Pt = [xCoord(r.args), yCoord(r.args)];
  let showMenu = false;
  if (tp[0] === -1 || tp[1] === -1 || (tp[0] === 0 && tp[1] === 0)) {
    tp = [-1, -1];
    if (menuStyle.slice(0, 2).toLowerCase() !== 'no') showMenu = true;
  }
  const menu = new Menu(menuStyle);
  if (showMenu) menu.header(r.uri);
  let closest: string | undefined;
  let closestYet = -1;
  const bail = async (): Promise<number> => {
    if (showMenu) {
      menu.out += '\n\n[an internal server error occured]\n'; // sic: httpd's spelling
      menu.footer();
      return sendMenu(r, menu);
    }
    return 500;
  };
  for (const l of lines) {
    if (l.kind === 'blank') { if (showMenu) menu.blank(); continue; }
    if (l.kind === 'comment') { if (showMenu) menu.comment(l.text); continue; }
    if (l.kind === 'short') {
      r.log('imagemap', APLOG_ERR, `AH00679: map file ${r.uri}, line ${l.line} syntax error: requires at least two fields`);
      return bail();
    }
    const { directive: d, value } = l;
    if (d.slice(0, 4).toLowerCase() === 'base') {
      base = imapUrl(r, undefined, value);
      if (base === undefined) return bail();
      continue;
    }
    let { text: hrefText, rest } = readQuoted(l.rest);
    if (eq(d, 'default')) {
      const nd = imapUrl(r, undefined, value);
      if (nd === undefined) return bail();
      dflt = nd;
      if (showMenu) {
        const redirect = imapUrl(r, base, dflt);
        if (redirect === undefined) return bail();
        menu.link(true, redirect, hrefText ?? dflt);
      }
      continue;
    }
    const v = vertices(rest);
    rest = v.rest;
    if (showMenu) {
      if (hrefText === undefined) hrefText = readQuoted(rest).text;
      const redirect = imapUrl(r, base, value);
      if (redirect === undefined) return bail();
      menu.link(false, redirect, hrefText ?? value);
      continue;
    }
    if (tp[0] === -1 || v.pts.length === 0) continue;
    const hit = eq(d, 'poly') ? pointInPoly(tp, v.pts)
      : eq(d, 'circle') ? v.pts.length >= 2 && pointInCircle(tp, v.pts)
        : eq(d, 'rect') ? v.pts.length >= 2 && pointInRect(tp, v.pts)
          : undefined;
    if (hit === true) {
      const redirect = imapUrl(r, base, value);
      return redirect === undefined ? 500 : reply(r, redirect);
    }
    if (eq(d, 'point')) {
      const dist = (tp[0] - v.pts[0]![0]) ** 2 + (tp[1] - v.pts[0]![1]) ** 2;
      if (tp[0] >= 0 && tp[1] >= 0 && (closestYet < 0 || dist < closestYet)) { closestYet = dist; closest = value; }
    }
  }
  if (showMenu) {
    menu.footer();
    return sendMenu(r, menu);
  }
  if (closest !== undefined) {
    const redirect = imapUrl(r, base, closest);
    return redirect === undefined ? 500 : reply(r, redirect);
  }
  const redirect = imapUrl(r, base, dflt);
  return redirect === undefined ? 500 : reply(r, redirect);
}

type Cmd = CmdParms<unknown, ImapDir>;

const self = defineModule<unknown, ImapDir>({
  name: 'imagemap_module',
  source: 'mod_imagemap.c',
  apiVersion: MODULE_API_VERSION,
  createDirConfig: () => ({ menu: undefined, dflt: undefined, base: undefined }),
  mergeDirConfig: (base, add) => ({ menu: add.menu ?? base.menu, dflt: add.dflt ?? base.dflt, base: add.base ?? base.base }),
  directives: [
    directive<unknown, ImapDir, 'TAKE1'>({ name: 'ImapMenu', args: 'TAKE1', where: OR_INDEXES, help: 'the type of menu generated: none, formatted, semiformatted, unformatted', handler: (cmd: Cmd, a: string) => { cmd.dir.menu = a; } }),
    directive<unknown, ImapDir, 'TAKE1'>({ name: 'ImapDefault', args: 'TAKE1', where: OR_INDEXES, help: 'the action taken if no match: error, nocontent, referer, menu, URL', handler: (cmd: Cmd, a: string) => { cmd.dir.dflt = a; } }),
    directive<unknown, ImapDir, 'TAKE1'>({ name: 'ImapBase', args: 'TAKE1', where: OR_INDEXES, help: "the base for all URL's: map, referer, URL (or start of)", handler: (cmd: Cmd, a: string) => { cmd.dir.base = a; } }),
  ],
  hooks: { handler: { fn: imapHandler, order: HOOK_MIDDLE } },
});

export default self;
