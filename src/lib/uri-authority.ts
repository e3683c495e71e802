// The authority part of a URI as apr_uri_parse splits it: "user:password@host:port", the host
// possibly a bracketed IPv6 address. Shared by mod_alias's and mod_proxy_ftp's URI parsing.

/** The parts of an authority (undefined: absent; hostname is always set). */
export interface UriAuthority {
  user?: string;
  password?: string;
  hostname: string;
  /** the text after the port's colon, possibly empty */
  portStr?: string;
}

/** Splits `hostinfo` (the text between "//" and the first "/", "?" or "#"). */
export function parseAuthority(hostinfo: string): UriAuthority {
  let user: string | undefined;
  let password: string | undefined;
  const at = hostinfo.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = hostinfo.slice(0, at);
    const colon = userinfo.indexOf(':');
    if (colon >= 0) {
      user = userinfo.slice(0, colon);
      password = userinfo.slice(colon + 1);
    } else user = userinfo;
    hostinfo = hostinfo.slice(at + 1);
  }
  let portSep = -1;
  let hostname: string;
  if (hostinfo.startsWith('[')) {
    const close = hostinfo.indexOf(']');
    hostname = hostinfo.slice(1, close < 0 ? hostinfo.length : close);
    if (close >= 0 && hostinfo[close + 1] === ':') portSep = close + 1;
  } else {
    portSep = hostinfo.lastIndexOf(':');
    hostname = portSep < 0 ? hostinfo : hostinfo.slice(0, portSep);
  }
  const a: UriAuthority = { hostname };
  if (user !== undefined) a.user = user;
  if (password !== undefined) a.password = password;
  if (portSep >= 0) a.portStr = hostinfo.slice(portSep + 1);
  return a;
}
