// apr_dbd_prepare's query rewriting (apr-util dbd/apr_dbd.c): the `%s`, `%d`, `%hhd`, `%lld`,
// `%pDt`... placeholders of a DBDPrepareSQL / AuthDBDUserPWQuery statement become the driver's
// parameter references ("$1".."$n" for pgsql), `%%` becomes `%`, and each placeholder's type
// is kept for the driver's PREPARE (apr_dbd_pgsql gives "varchar" to strings).

/** apr_dbd_type_e, as apr_dbd.h numbers them. */
export const enum AprDbdType {
  NONE, TINY, UTINY, SHORT, USHORT, INT, UINT, LONG, ULONG, LONGLONG, ULONGLONG, FLOAT, DOUBLE,
  STRING, TEXT, TIME, DATE, DATETIME, TIMESTAMP, ZTIMESTAMP, BLOB, CLOB, NULL,
}

export interface TranslatedQuery {
  /** The query with the driver's parameter references. */
  readonly sql: string;
  /** One type per placeholder, in order. */
  readonly types: readonly AprDbdType[];
  /** Values a caller passes: a BLOB or CLOB takes three more (table, column, ...) in APR. */
  readonly nvals: number;
}

function isAlpha(c: string | undefined): boolean {
  return c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
}

/** The type a placeholder's letters name, and how many characters after its first letter it
 *  used (apr_dbd_prepare's switch: unknown letters read as strings, one letter consumed). */
function placeholderType(q: string, i: number): [AprDbdType, number] {
  const c1 = q[i + 1], c2 = q[i + 2], c3 = q[i + 3];
  switch (c1) {
    case 'd': return [AprDbdType.INT, 0];
    case 'u': return [AprDbdType.UINT, 0];
    case 'f': return [AprDbdType.FLOAT, 0];
    case 'h':
      if (c2 === 'h') {
        if (c3 === 'd') return [AprDbdType.TINY, 2];
        if (c3 === 'u') return [AprDbdType.UTINY, 2];
        return [AprDbdType.NONE, 0];
      }
      if (c2 === 'd') return [AprDbdType.SHORT, 1];
      if (c2 === 'u') return [AprDbdType.USHORT, 1];
      return [AprDbdType.NONE, 0];
    case 'l':
      if (c2 === 'l') {
        if (c3 === 'd') return [AprDbdType.LONGLONG, 2];
        if (c3 === 'u') return [AprDbdType.ULONGLONG, 2];
        return [AprDbdType.NONE, 0];
      }
      if (c2 === 'd') return [AprDbdType.LONG, 1];
      if (c2 === 'u') return [AprDbdType.ULONG, 1];
      if (c2 === 'f') return [AprDbdType.DOUBLE, 1];
      return [AprDbdType.NONE, 0];
    case 'p':
      if (c2 === 'D') {
        const t = ({ t: AprDbdType.TEXT, i: AprDbdType.TIME, d: AprDbdType.DATE, a: AprDbdType.DATETIME, s: AprDbdType.TIMESTAMP, z: AprDbdType.ZTIMESTAMP, b: AprDbdType.BLOB, c: AprDbdType.CLOB, n: AprDbdType.NULL } as Record<string, AprDbdType>)[c3 ?? ''];
        if (t !== undefined) return [t, 2];
      }
      return [AprDbdType.NONE, 0];
    default: return [AprDbdType.NONE, 0];
  }
}

/** Rewrites `query` as apr_dbd_prepare does for a driver whose parameter format is
 *  `prefix` followed by the 1-based number ("$" for pgsql). */
export function translatePlaceholders(query: string, prefix = '$'): TranslatedQuery {
  let out = '';
  const types: AprDbdType[] = [];
  let nvals = 0;
  for (let i = 0; i < query.length; i++) {
    const c = query[i]!;
    if (c !== '%') {
      out += c;
      continue;
    }
    if (isAlpha(query[i + 1])) {
      let [t, extra] = placeholderType(query, i);
      i += extra + 1;
      if (t === AprDbdType.NONE) t = AprDbdType.STRING;
      types.push(t);
      nvals += t === AprDbdType.BLOB || t === AprDbdType.CLOB ? 4 : 1;
      out += prefix + String(types.length);
    } else if (query[i + 1] === '%') {
      out += '%';
      i++;
    } else {
      out += '%';
    }
  }
  return { sql: out, types, nvals };
}

/** The SQL type apr_dbd_pgsql's prepare declares for a parameter. */
export function pgsqlTypeName(t: AprDbdType): string {
  switch (t) {
    case AprDbdType.TINY: case AprDbdType.UTINY: case AprDbdType.SHORT: case AprDbdType.USHORT: return 'smallint';
    case AprDbdType.INT: case AprDbdType.UINT: return 'integer';
    case AprDbdType.LONG: case AprDbdType.ULONG: case AprDbdType.LONGLONG: case AprDbdType.ULONGLONG: return 'bigint';
    case AprDbdType.FLOAT: return 'real';
    case AprDbdType.DOUBLE: return 'double precision';
    case AprDbdType.TEXT: return 'text';
    case AprDbdType.TIME: return 'time';
    case AprDbdType.DATE: return 'date';
    case AprDbdType.DATETIME: case AprDbdType.TIMESTAMP: return 'timestamp';
    case AprDbdType.ZTIMESTAMP: return 'timestamp with time zone';
    case AprDbdType.BLOB: case AprDbdType.CLOB: return 'bytea';
    default: return 'varchar';
  }
}
