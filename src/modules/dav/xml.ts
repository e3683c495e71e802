// A small namespace-aware XML parser for WebDAV request bodies (what mod_dav gets from
// apr_xml via ap_xml_parse_input): elements with their namespace as an index into the
// document's namespace list (in order of first use, as apr_xml numbers them), attributes,
// text; and the serialisation mod_dav uses to store dead properties and lock owners.
// No DTDs and no entities beyond the five predefined ones and character references: a
// document with a DOCTYPE is refused, as nothing in WebDAV needs one.

/** An element; `ns` indexes XmlDoc.namespaces, -1 for an element in no namespace. */
export interface XmlElem {
  readonly ns: number;
  readonly name: string;
  readonly attrs: readonly XmlAttr[];
  readonly children: readonly XmlNode[];
  /** xml:lang in force (inherited). */
  readonly lang: string | undefined;
}
export interface XmlAttr { readonly ns: number; readonly name: string; readonly value: string }
export type XmlNode = XmlElem | string;

export interface XmlDoc {
  readonly root: XmlElem;
  /** Namespace URIs in the order the document first used them. */
  readonly namespaces: readonly string[];
}

/** A parse failure; `code` is the matching expat error number (what httpd logs), 0 for a
 *  document that ended early. */
export class XmlError extends Error {
  constructor(message: string, readonly code: number) { super(message); }
}

const EXPAT: readonly [RegExp, number][] = [
  [/^mismatched end tag/, 7], [/^undeclared namespace prefix/, 27], [/^(content|text) (after|outside) the root/, 9],
  [/^duplicate attribute/, 8], [/^(unexpected end|unterminated|no root)/, 0],
];

/** Deepest element nesting accepted (a bound on recursion and memory). */
export const MAX_DEPTH = 256;

const NAME_START = /[A-Za-z_\u00C0-\uFFFF]/;
const NAME_CHAR = /[A-Za-z0-9_.\-\u00B7\u00C0-\uFFFF:]/;

interface Building {
  qname: string;
  ns: number;
  name: string;
  attrs: XmlAttr[];
  children: XmlNode[];
  lang: string | undefined;
  scope: Map<string, string>;
}

/** Parses a document; throws XmlError when it is not well-formed or not namespace-valid. */
export function parseXml(input: Buffer | string): XmlDoc {
  const s = typeof input === 'string' ? input : input.toString('utf8');
  const namespaces: string[] = [];
  const nsIndex = new Map<string, number>();
  const useNs = (uri: string): number => {
    let i = nsIndex.get(uri);
    if (i === undefined) { i = namespaces.length; namespaces.push(uri); nsIndex.set(uri, i); }
    return i;
  };
  const stack: Building[] = [];
  let root: XmlElem | undefined;
  let i = 0;
  const n = s.length;
  if (s.charCodeAt(0) === 0xfeff) i = 1;

  const fail = (msg: string): never => { throw new XmlError(`${msg} at offset ${i}`, EXPAT.find(([re]) => re.test(msg))?.[1] ?? 4); };
  const readName = (): string => {
    const start = i;
    if (i >= n || !NAME_START.test(s[i]!)) fail('name expected');
    i++;
    while (i < n && NAME_CHAR.test(s[i]!)) i++;
    return s.slice(start, i);
  };
  const skipWs = (): void => { while (i < n && (s[i] === ' ' || s[i] === '\t' || s[i] === '\n' || s[i] === '\r')) i++; };
  const decode = (raw: string): string => {
    if (!raw.includes('&')) return raw;
    return raw.replace(/&([^;]*);?/g, (whole, ent: string) => {
      if (!whole.endsWith(';')) fail('unterminated entity reference');
      switch (ent) {
        case 'lt': return '<';
        case 'gt': return '>';
        case 'amp': return '&';
        case 'quot': return '"';
        case 'apos': return "'";
        default: break;
      }
      const m = /^#(?:x([0-9A-Fa-f]{1,6})|([0-9]{1,7}))$/.exec(ent);
      if (!m) return fail(`undefined entity &${ent};`);
      const cp = m[1] !== undefined ? parseInt(m[1], 16) : parseInt(m[2]!, 10);
      if (cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return fail('invalid character reference');
      return String.fromCodePoint(cp);
    });
  };
  const resolve = (scope: Map<string, string>, prefix: string, isAttr: boolean): number => {
    if (prefix === '') {
      if (isAttr) return -1;
      const d = scope.get('');
      return d === undefined || d === '' ? -1 : useNs(d);
    }
    if (prefix === 'xml') return useNs('http://www.w3.org/XML/1998/namespace');
    const u = scope.get(prefix);
    if (u === undefined || u === '') return fail(`undeclared namespace prefix "${prefix}"`);
    return useNs(u);
  };
  const splitQ = (q: string): [string, string] => {
    const c = q.indexOf(':');
    if (c < 0) return ['', q];
    if (c === 0 || c === q.length - 1 || q.indexOf(':', c + 1) >= 0) fail(`bad qualified name "${q}"`);
    return [q.slice(0, c), q.slice(c + 1)];
  };

  while (i < n) {
    const lt = s.indexOf('<', i);
    const textEnd = lt < 0 ? n : lt;
    if (textEnd > i) {
      const raw = s.slice(i, textEnd);
      if (stack.length === 0) {
        if (raw.trim() !== '') fail('text outside the root element');
      } else {
        if (raw.includes(']]>')) fail('"]]>" in text');
        stack[stack.length - 1]!.children.push(decode(raw));
      }
      i = textEnd;
      if (lt < 0) break;
    }
    // at '<'
    if (s.startsWith('<?', i)) {
      const end = s.indexOf('?>', i + 2);
      if (end < 0) fail('unterminated processing instruction');
      const target = /^<\?([^\s?]+)/.exec(s.slice(i, end))?.[1] ?? '';
      if (target.toLowerCase() === 'xml' && i !== 0 && !(i === 1 && s.charCodeAt(0) === 0xfeff)) fail('XML declaration not at the start');
      i = end + 2;
      continue;
    }
    if (s.startsWith('<!--', i)) {
      const end = s.indexOf('-->', i + 4);
      if (end < 0) fail('unterminated comment');
      i = end + 3;
      continue;
    }
    if (s.startsWith('<![CDATA[', i)) {
      if (stack.length === 0) fail('CDATA outside the root element');
      const end = s.indexOf(']]>', i + 9);
      if (end < 0) fail('unterminated CDATA section');
      stack[stack.length - 1]!.children.push(s.slice(i + 9, end));
      i = end + 3;
      continue;
    }
    if (s.startsWith('<!', i)) fail('DOCTYPE and declarations are not accepted');
    if (s.startsWith('</', i)) {
      i += 2;
      const q = readName();
      skipWs();
      if (s[i] !== '>') fail('">" expected');
      i++;
      const top = stack.pop();
      if (top === undefined || top.qname !== q) fail(`mismatched end tag </${q}>`);
      const el = finish(top!);
      if (stack.length === 0) root = el;
      else stack[stack.length - 1]!.children.push(el);
      continue;
    }
    // start tag
    if (root !== undefined) fail('content after the root element');
    i++;
    const qname = readName();
    const rawAttrs: [string, string][] = [];
    let selfClose = false;
    for (;;) {
      const before = i;
      skipWs();
      if (s[i] === '>') { i++; break; }
      if (s.startsWith('/>', i)) { i += 2; selfClose = true; break; }
      if (i === before) fail('space expected between attributes');
      const an = readName();
      skipWs();
      if (s[i] !== '=') fail('"=" expected');
      i++;
      skipWs();
      const quote = s[i];
      if (quote !== '"' && quote !== "'") fail('quoted attribute value expected');
      const end = s.indexOf(quote!, i + 1);
      if (end < 0) fail('unterminated attribute value');
      const rawv = s.slice(i + 1, end);
      if (rawv.includes('<')) fail('"<" in attribute value');
      if (rawAttrs.some(([a]) => a === an)) fail(`duplicate attribute ${an}`);
      rawAttrs.push([an, decode(rawv).replace(/[\t\n\r]/g, ' ')]);
      i = end + 1;
    }
    if (stack.length >= MAX_DEPTH) fail('elements nested too deeply');
    const parent = stack[stack.length - 1];
    const scope = new Map(parent?.scope ?? []);
    let lang = parent?.lang;
    for (const [an, av] of rawAttrs) {
      if (an === 'xmlns') scope.set('', av);
      else if (an.startsWith('xmlns:')) {
        if (av === '') fail('empty namespace name for a prefix');
        scope.set(an.slice(6), av);
      } else if (an === 'xml:lang') lang = av;
    }
    const [prefix, local] = splitQ(qname);
    const ns = resolve(scope, prefix, false);
    const attrs: XmlAttr[] = [];
    for (const [an, av] of rawAttrs) {
      if (an === 'xmlns' || an.startsWith('xmlns:')) continue;
      const [ap, al] = splitQ(an);
      attrs.push({ ns: resolve(scope, ap, true), name: al, value: av });
    }
    const b: Building = { qname, ns, name: local, attrs, children: [], lang, scope };
    if (selfClose) {
      const el = finish(b);
      if (parent === undefined) root = el;
      else parent.children.push(el);
    } else stack.push(b);
  }
  if (stack.length > 0) fail('unexpected end of document');
  if (root === undefined) fail('no root element');
  return { root: root!, namespaces };
}

function finish(b: Building): XmlElem {
  return { ns: b.ns, name: b.name, attrs: b.attrs, children: b.children, lang: b.lang };
}

/** The first child element with this namespace URI and name. */
export function childElem(doc: XmlDoc, el: XmlElem, ns: string, name: string): XmlElem | undefined {
  for (const c of el.children) {
    if (typeof c !== 'string' && c.name === name && doc.namespaces[c.ns] === ns) return c;
  }
  return undefined;
}

export function childElems(el: XmlElem): XmlElem[] {
  return el.children.filter((c): c is XmlElem => typeof c !== 'string');
}

/** Whether the element is DAV:name. */
export function isDav(doc: XmlDoc, el: XmlElem, name: string): boolean {
  return el.name === name && doc.namespaces[el.ns] === 'DAV:';
}

/** The element's text content (all descendants' text, as apr_xml's cdata collection). */
export function textOf(el: XmlElem): string {
  let out = '';
  for (const c of el.children) out += typeof c === 'string' ? c : textOf(c);
  return out;
}

/** apr_xml_quote_string: escapes & < > (and " when quoting an attribute value). */
export function quoteXml(s: string, attr = false): string {
  let out = s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  if (attr) out = out.replace(/"/g, '&quot;');
  return out;
}

/** Serialises an element; `prefix(ns)` names a namespace index ("ns0"), `rootExtra` is put
 *  inside the outermost start tag (namespace declarations). */
export function elemToText(el: XmlElem, prefix: (ns: number) => string, rootExtra = '', inner = false): string {
  const tag = el.ns < 0 ? el.name : `${prefix(el.ns)}:${el.name}`;
  let out = '';
  if (!inner) {
    out += `<${tag}${rootExtra}`;
    for (const a of el.attrs) out += ` ${a.ns < 0 ? '' : prefix(a.ns) + ':'}${a.name}="${quoteXml(a.value, true)}"`;
    if (el.children.length === 0) return out + '/>';
    out += '>';
  }
  for (const c of el.children) out += typeof c === 'string' ? quoteXml(c) : elemToText(c, prefix);
  if (!inner) out += `</${tag}>`;
  return out;
}
