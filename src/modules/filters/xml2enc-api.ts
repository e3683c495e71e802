// What mod_xml2enc offers other modules (httpd's mod_xml2enc.h: the optional functions
// xml2enc_charset and xml2enc_filter), as the 'xml2enc' provider; mod_proxy_html uses it.

import type { Request } from '../../server/request/request.js';

/** xml2enc_filter modes (ENCIO_*). */
export const ENCIO_INPUT = 0x01;
export const ENCIO_OUTPUT = 0x02;
export const ENCIO_INPUT_CHECKS = 0x04;
export const ENCIO = ENCIO_INPUT | ENCIO_OUTPUT | ENCIO_INPUT_CHECKS;
export const ENCIO_SKIPTO = 0x10;

/** libxml2's xmlCharEncoding values as names: the encodings libxml2 converts itself. */
export type XmlCharEncoding =
  | 'none' | 'error' | 'utf-8' | 'utf-16le' | 'utf-16be' | 'ucs-4le' | 'ucs-4be' | 'ucs-4-2143' | 'ucs-4-3412'
  | 'ebcdic' | 'ucs-2' | 'iso-8859-1' | 'iso-8859-2' | 'iso-8859-3' | 'iso-8859-4' | 'iso-8859-5'
  | 'iso-8859-6' | 'iso-8859-7' | 'iso-8859-8' | 'iso-8859-9' | 'iso-2022-jp' | 'shift_jis' | 'euc-jp';

/** HAVE_ENCODING: an encoding was found. */
export function haveEncoding(e: XmlCharEncoding): boolean {
  return e !== 'none' && e !== 'error';
}

export interface Xml2EncCharset {
  /** 'again': not sniffed yet (APR_EAGAIN); 'error': nothing usable (APR_EGENERAL). */
  readonly status: 'ok' | 'again' | 'error';
  readonly enc: XmlCharEncoding;
  readonly encoding: string | undefined;
}

export interface Xml2EncApi {
  /** xml2enc_charset: the charset sniffed for the response. */
  charset(r: Request): Xml2EncCharset;
  /** xml2enc_filter: adds the xml2enc filter converting to or from `enc` (ENCIO_OUTPUT,
   *  ENCIO_INPUT) or sniffing (ENCIO_INPUT_CHECKS); false when the charset is not supported. */
  filter(r: Request, enc: string | undefined, mode: number): boolean;
  /** xmlParseCharEncoding, with the configuration's xml2EncAlias names. */
  parseCharEncoding(name: string): XmlCharEncoding;
}

declare module '../../server/module.js' {
  interface ProviderGroups {
    xml2enc: Xml2EncApi;
  }
}

/** The iconv-lite codec for a libxml2 encoding (libxml2 decodes these itself in Apache). */
export function codecFor(e: XmlCharEncoding): string {
  switch (e) {
    case 'ucs-4le': return 'utf-32le';
    case 'ucs-4be': return 'utf-32be';
    case 'ucs-2': return 'utf-16le';
    // DIFFERENCE: iconv-lite has no ISO-2022-JP, EBCDIC or odd-order UCS-4 codec; such
    // documents are read as ISO-8859-1 (docs/differences.md).
    case 'iso-2022-jp': case 'ebcdic': case 'ucs-4-2143': case 'ucs-4-3412': case 'none': case 'error': return 'iso-8859-1';
    default: return e;
  }
}

const LIBXML2_NAMES: Readonly<Record<string, XmlCharEncoding>> = {
  '': 'none', 'UTF-8': 'utf-8', UTF8: 'utf-8', 'UTF-16': 'utf-16le', UTF16: 'utf-16le',
  'ISO-10646-UCS-2': 'ucs-2', 'UCS-2': 'ucs-2', UCS2: 'ucs-2',
  'ISO-10646-UCS-4': 'ucs-4le', 'UCS-4': 'ucs-4le', UCS4: 'ucs-4le',
  'ISO-8859-1': 'iso-8859-1', 'ISO-LATIN-1': 'iso-8859-1', 'ISO LATIN 1': 'iso-8859-1',
  'ISO-8859-2': 'iso-8859-2', 'ISO-LATIN-2': 'iso-8859-2', 'ISO LATIN 2': 'iso-8859-2',
  'ISO-8859-3': 'iso-8859-3', 'ISO-8859-4': 'iso-8859-4', 'ISO-8859-5': 'iso-8859-5', 'ISO-8859-6': 'iso-8859-6',
  'ISO-8859-7': 'iso-8859-7', 'ISO-8859-8': 'iso-8859-8', 'ISO-8859-9': 'iso-8859-9',
  'ISO-2022-JP': 'iso-2022-jp', SHIFT_JIS: 'shift_jis', 'EUC-JP': 'euc-jp',
};

/** xmlParseCharEncoding without aliases: the encoding libxml2 handles itself for a name. */
export function libxml2Encoding(name: string): XmlCharEncoding {
  return LIBXML2_NAMES[name.toUpperCase()] ?? 'error';
}
