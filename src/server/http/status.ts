// HTTP status lines and the canned error texts httpd puts in generated error pages
// (modules/http/http_protocol.c status_lines and get_canned_error_string), worded as 2.4.71.

export const STATUS_LINES: ReadonlyMap<number, string> = new Map([
  [100, 'Continue'], [101, 'Switching Protocols'], [102, 'Processing'], [103, 'Early Hints'],
  [200, 'OK'], [201, 'Created'], [202, 'Accepted'], [203, 'Non-Authoritative Information'], [204, 'No Content'],
  [205, 'Reset Content'], [206, 'Partial Content'], [207, 'Multi-Status'], [208, 'Already Reported'], [226, 'IM Used'],
  [300, 'Multiple Choices'], [301, 'Moved Permanently'], [302, 'Found'], [303, 'See Other'], [304, 'Not Modified'],
  [305, 'Use Proxy'], [307, 'Temporary Redirect'], [308, 'Permanent Redirect'],
  [400, 'Bad Request'], [401, 'Unauthorized'], [402, 'Payment Required'], [403, 'Forbidden'], [404, 'Not Found'],
  [405, 'Method Not Allowed'], [406, 'Not Acceptable'], [407, 'Proxy Authentication Required'], [408, 'Request Timeout'],
  [409, 'Conflict'], [410, 'Gone'], [411, 'Length Required'], [412, 'Precondition Failed'],
  [413, 'Request Entity Too Large'], [414, 'Request-URI Too Long'], [415, 'Unsupported Media Type'],
  [416, 'Requested Range Not Satisfiable'], [417, 'Expectation Failed'], [421, 'Misdirected Request'],
  [422, 'Unprocessable Entity'], [423, 'Locked'], [424, 'Failed Dependency'], [425, 'Too Early'], [426, 'Upgrade Required'],
  [428, 'Precondition Required'], [429, 'Too Many Requests'], [431, 'Request Header Fields Too Large'],
  [451, 'Unavailable For Legal Reasons'],
  [500, 'Internal Server Error'], [501, 'Not Implemented'], [502, 'Bad Gateway'], [503, 'Service Unavailable'],
  [504, 'Gateway Timeout'], [505, 'HTTP Version Not Supported'], [506, 'Variant Also Negotiates'],
  [507, 'Insufficient Storage'], [508, 'Loop Detected'], [510, 'Not Extended'], [511, 'Network Authentication Required'],
]);

/** Statuses httpd's ap_index_of_response knows (418 and 425 are not among them in 2.4). */
export function knownStatus(s: number): boolean {
  return STATUS_LINES.has(s) && s !== 425;
}

export function statusLine(s: number): string {
  if (s >= 100 && s <= 999 && s === Math.floor(s)) {
    let l = statusLines[s - 100];
    if (l === undefined) statusLines[s - 100] = l = makeStatusLine(s);
    return l;
  }
  return makeStatusLine(s);
}
function makeStatusLine(s: number): string {
  const t = STATUS_LINES.get(s);
  return t ? `${s} ${t}` : `${s} `;
}
/** Status lines made once per status (every response head has one). */
const statusLines: (string | undefined)[] = new Array<string | undefined>(900).fill(undefined);

/** Whether a status line (a backend's, a CGI's Status) starts with the status and a space:
 *  `line.startsWith(status + ' ')` without making that string. */
export function lineHasStatus(line: string, status: number): boolean {
  if (status >= 100 && status <= 999 && status === Math.floor(status)) {
    return line.length >= 4 && line.charCodeAt(3) === 0x20
      && line.charCodeAt(0) === 0x30 + Math.floor(status / 100) && line.charCodeAt(1) === 0x30 + Math.floor(status / 10) % 10
      && line.charCodeAt(2) === 0x30 + status % 10;
  }
  return line.startsWith(String(status) + ' ');
}

export interface CannedContext {
  method: string;
  location: string;
  admin: string;
  errorNotes: string | undefined;
  escape: (s: string) => string;
  /** The request's Expect header (for 417). */
  expect?: string | undefined;
  /** The "verbose-error-to" note ("*": error-notes are safe to show on a 500 page). */
  verboseErrorTo?: string | undefined;
  /** The "variant-list" note mod_negotiation leaves (for 300 and 406). */
  variantList?: string | undefined;
}

const ADMIN_500 = (c: CannedContext): string =>
  '<p>The server encountered an internal error or\nmisconfiguration and was unable to complete\nyour request.</p>\n' +
  `<p>Please contact the server administrator at \n ${c.escape(c.admin)} to inform them of the time this error occurred,\n` +
  ' and the actions you performed just before this error.</p>\n' +
  '<p>More information about this error may be available\nin the server error log.</p>\n';

const UNAUTH = '<p>This server could not verify that you\nare authorized to access the document\nrequested.  Either you supplied the wrong\ncredentials (e.g., bad password), or your\nbrowser doesn\'t understand how to supply\nthe credentials required.</p>\n';

function notes(c: CannedContext, prefix: string, suffix: string): string {
  return prefix + (c.errorNotes ?? '') + suffix;
}

/** The body text httpd writes under the <h1> for a status. */
export function cannedError(status: number, c: CannedContext): string {
  switch (status) {
    case 301: case 302: case 307: case 308:
      return `<p>The document has moved <a href="${c.escape(c.location)}">here</a>.</p>\n`;
    case 303:
      return `<p>The answer to your request is located <a href="${c.escape(c.location)}">here</a>.</p>\n`;
    case 305:
      return `<p>This resource is only accessible through the proxy\n${c.escape(c.location)}<br />\nYou will need to configure your client to use that proxy.</p>\n`;
    case 401: case 407:
      return UNAUTH;
    case 400:
      return notes(c, '<p>Your browser sent a request that this server could not understand.<br />\n', '</p>\n');
    case 403:
      return notes(c, "<p>You don't have permission to access this resource.", '</p>\n');
    case 404:
      return '<p>The requested URL was not found on this server.</p>\n';
    case 405:
      return `<p>The requested method ${c.escape(c.method)} is not allowed for this URL.</p>\n`;
    case 300:
      return c.variantList ?? '';
    case 406:
      return '<p>An appropriate representation of the requested resource could not be found on this server.</p>\n' + (c.variantList ?? '');
    case 408:
      return '<p>Server timeout waiting for the HTTP request from the client.</p>\n';
    case 410:
      return '<p>The requested resource is no longer available on this server and there is no forwarding address.\nPlease remove all references to this resource.</p>\n';
    case 411:
      return notes(c, `<p>A request of the requested method ${c.escape(c.method)} requires a valid Content-length.<br />\n`, '</p>\n');
    case 412:
      return '<p>The precondition on the request for this URL evaluated to false.</p>\n';
    case 413:
      return `The requested resource does not allow request data with ${c.escape(c.method)} requests, or the amount of data provided in\nthe request exceeds the capacity limit.\n`;
    case 414:
      return notes(c, "<p>The requested URL's length exceeds the capacity\nlimit for this server.<br />\n", '</p>\n');
    case 415:
      return '<p>The supplied request data is not in a format\nacceptable for processing by this resource.</p>\n';
    case 416:
      return '<p>None of the range-specifier values in the Range\nrequest-header field overlap the current extent\nof the selected resource.</p>\n';
    case 417:
      if (c.expect !== undefined) {
        return '<p>The expectation given in the Expect request-header\nfield could not be met by this server.\n'
          + `The client sent<pre>\n    Expect: ${c.escape(c.expect)}\n</pre>\n`
          + '</p><p>Only the 100-continue expectation is supported.</p>\n';
      }
      return '<p>No expectation was seen, the Expect request-header \nfield was not presented by the client.\n</p><p>Only the 100-continue expectation is supported.</p>\n';
    case 421:
      return '<p>The client needs a new connection for this\nrequest as the requested host name does not match\nthe Server Name Indication (SNI) in use for this\nconnection.</p>\n';
    case 422:
      return '<p>The server understands the media type of the\nrequest entity, but was unable to process the\ncontained instructions.</p>\n';
    case 423:
      return '<p>The requested resource is currently locked.\nThe lock must be released or proper identification\ngiven before the method can be applied.</p>\n';
    case 424:
      return '<p>The method could not be performed on the resource\nbecause the requested action depended on another\naction and that other action failed.</p>\n';
    case 426:
      return '<p>The requested resource can only be retrieved\nusing SSL.  The server is willing to upgrade the current\nconnection to SSL, but your client doesn\'t support it.\nEither upgrade your client, or try requesting the page\nusing https://\n';
    case 428:
      return '<p>The request is required to be conditional.</p>\n';
    case 429:
      return '<p>The user has sent too many requests\nin a given amount of time.</p>\n';
    case 431:
      return '<p>The server refused this request because\nthe request header fields are too large.</p>\n';
    case 451:
      return notes(c, '<p>Access to this URL has been denied for legal reasons.<br />\n', '</p>\n');
    case 501:
      return notes(c, `<p>${c.escape(c.method)} not supported for current URL.<br />\n`, '</p>\n');
    case 502:
      return notes(c, '<p>The proxy server received an invalid\r\nresponse from an upstream server.<br />\r\n', '</p>\n');
    case 503:
      return '<p>The server is temporarily unable to service your\nrequest due to maintenance downtime or capacity\nproblems. Please try again later.</p>\n';
    case 504:
      return '<p>The gateway did not receive a timely response\nfrom the upstream server or application.</p>\n';
    case 506:
      return '<p>A variant for the requested resource\n<pre>\n\n</pre>\nis itself a negotiable resource. This indicates a configuration error.</p>\n';
    case 507:
      return '<p>The method could not be performed on the resource\nbecause the server is unable to store the\nrepresentation needed to successfully complete the\nrequest.  There is insufficient free space left in\nyour storage allocation.</p>\n';
    case 508:
      return '<p>The server terminated an operation because\nit encountered an infinite loop.</p>\n';
    case 510:
      return '<p>A mandatory extension policy in the request is not\naccepted by the server for this resource.</p>\n';
    case 511:
      return '<p>The client needs to authenticate to gain\nnetwork access.</p>\n';
    default:
      // error-notes marked safe for anyone ("verbose-error-to" "*", as mod_proxy's) replace the text.
      if (c.errorNotes !== undefined && c.verboseErrorTo === '*') return c.errorNotes + '<p />\n';
      return ADMIN_500(c);
  }
}

export const DOCTYPE = '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n';
