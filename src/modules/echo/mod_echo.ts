// mod_echo (modules/echo/mod_echo.c): with ProtocolEcho On, connections whose base server (by
// address) is that server speak no HTTP: every line the client sends (up to and including its
// LF) is written straight back, until the client closes or stays silent for the Timeout (before
// the first line) or the KeepAliveTimeout (after it). Over TLS (SSLEngine on) the lines are the
// decrypted ones, as httpd runs it after mod_ssl's filters.

import { MODULE_API_VERSION, RSRC_CONF, defineModule, directive } from '../../server/module.js';
import type { CmdParms } from '../../server/config/cmd.js';
import type { ServerRec } from '../../server/server-rec.js';
import type { ConfigContext } from '../../server/config/context.js';
import type { Transport } from '../../server/http/tcp-stream.js';
import type { ConnectionProcessor, ConnectionProcessorProvider } from '../../server/http/connection-layer.js';

interface EchoServer {
  enabled: boolean;
}

/** Splits what arrived into complete lines (each with its LF) and the unfinished rest
 *  (exported for the tests). */
export function takeLines(pending: Buffer, data: Buffer): { lines: Buffer[]; rest: Buffer } {
  let buf = pending.length === 0 ? data : Buffer.concat([pending, data]);
  const lines: Buffer[] = [];
  for (let nl = buf.indexOf(0x0a); nl >= 0; nl = buf.indexOf(0x0a)) {
    lines.push(buf.subarray(0, nl + 1));
    buf = buf.subarray(nl + 1);
  }
  return { lines, rest: buf };
}

/** process_echo_connection: echo lines until the client is done or silent too long. */
function echoConnection(t: Transport, base: ServerRec): void {
  t.allowHalfOpen = true;
  let pending: Buffer = Buffer.alloc(0);
  let timer: NodeJS.Timeout | null = null;
  const arm = (ms: number): void => {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(() => t.destroy(), ms);
  };
  arm(base.timeout * 1000);
  t.on('data', (d) => {
    const { lines, rest } = takeLines(pending, d);
    pending = rest;
    if (lines.length === 0) return;
    for (const l of lines) t.write(l);
    arm(base.keepAliveTimeout);
  });
  // A last line without LF is what GETLINE returns at the end of the input: echoed too.
  t.on('end', () => {
    if (timer !== null) clearTimeout(timer);
    if (pending.length > 0) t.write(pending);
    t.end();
  });
  t.on('close', () => { if (timer !== null) clearTimeout(timer); });
  t.on('error', () => { if (timer !== null) clearTimeout(timer); });
}

const processor: ConnectionProcessor = {
  process(t, base) {
    if (!self.server(base).enabled) return false;
    echoConnection(t, base);
    return true;
  },
};

const provider: ConnectionProcessorProvider = {
  open(ctx: ConfigContext): ConnectionProcessor | null {
    const servers = [ctx.mainServer, ...ctx.vhosts];
    return servers.some((s) => self.server(s).enabled) ? processor : null;
  },
};

const self = defineModule<EchoServer, undefined>({
  name: 'echo_module',
  source: 'mod_echo.c',
  apiVersion: MODULE_API_VERSION,
  createServerConfig: () => ({ enabled: false }),
  directives: [
    directive<EchoServer, undefined, 'FLAG'>({
      name: 'ProtocolEcho', args: 'FLAG', where: RSRC_CONF, help: 'Run an echo server on this host',
      handler: (cmd: CmdParms<EchoServer, undefined>, on: boolean) => { cmd.srv.enabled = on; },
    }),
  ],
  providers: [{ group: 'process_connection', name: 'echo', version: '0', provider }],
});

export default self;
