// Session tickets renewed when a TLS 1.3 handshake resumes with one, as httpd's do when it
// runs on OpenSSL's own ticket keys (no SSLSessionTicketKeyFile).
//
// Measured on httpd 2.4.71 with openssl s_client chained by -sess_in/-sess_out (each connection
// offering the session the previous one saved): without SSLSessionTicketKeyFile a TLS 1.3
// resumption is followed by a new ticket (New, Reused, Reused, Reused); with a key file, or on
// TLS 1.2, it is not (New, Reused, and then no new session to offer). Node's default ticket
// callback answers like httpd's key-file callback (decrypted, no renewal) for every context, so
// an OpenSSL client that keeps only its latest session (curl, wrk) made a full handshake every
// second connection where httpd resumed them all.
//
// Node's SecureContext has a second ticket callback that asks JavaScript for the keys
// (enableTicketKeyCallback, answered by `onticketkeycallback`), whose answer can ask OpenSSL to
// renew. The keys are the context's own (ticketKeys: name, HMAC secret, AES key, 16 bytes each,
// the layout of Node's default callback and of httpd's key file), so tickets stay valid across
// the worker processes, which share them. The callback does not say which TLS version is being
// negotiated: the connection layer (layer.ts) feeds a TLS 1.3 ClientHello to TLS inside
// withRenewal(), and only a ticket opened during that call is renewed. A ClientHello that does
// not arrive in the connection's first read is read by TLS itself, outside that call: such a
// resumption is not renewed (docs/differences.md).

import * as crypto from 'node:crypto';
import type * as tls from 'node:tls';

/** Node's native SecureContext with its JavaScript ticket-key callback. */
interface NativeContext {
  enableTicketKeyCallback?: () => void;
  onticketkeycallback?: (name: Buffer, iv: Buffer, encrypt: boolean) => unknown[];
}

/** Whether a ticket opened now belongs to a TLS 1.3 handshake (set by withRenewal). */
let renewing = false;

/** Runs `feed` (bytes handed to TLS) with tickets opened meanwhile renewed when `tls13`. */
export function withRenewal(tls13: boolean, feed: () => void): void {
  const was = renewing;
  renewing = tls13;
  try {
    feed();
  } finally {
    renewing = was;
  }
}

/** Random bytes for ticket IVs, drawn from the CSPRNG IV_POOL at a time: a full handshake
 *  issues two tickets, and one randomFillSync call per IV cost more than the 16 bytes. */
const IV_POOL = 4096;
const ivPool = Buffer.alloc(IV_POOL);
let ivAt = IV_POOL;

/** Fills `iv` (16 bytes) with fresh random bytes, never used for another ticket. */
function nextIv(iv: Buffer): void {
  if (ivAt + 16 > IV_POOL) {
    crypto.randomFillSync(ivPool);
    ivAt = 0;
  }
  ivPool.copy(iv, 0, ivAt, ivAt + 16);
  ivAt += 16;
}

/**
 * Makes `context` renew the tickets of TLS 1.3 resumptions (see above); `keys` are the 48 bytes
 * the context was made with. False where Node's context has no such callback (tickets then
 * behave as Node's default: never renewed).
 */
export function renewTls13Tickets(context: tls.SecureContext, keys: Buffer): boolean {
  const native = (context as unknown as { context?: NativeContext }).context;
  if (native === undefined || typeof native.enableTicketKeyCallback !== 'function' || keys.length !== 48) return false;
  const name = Buffer.from(keys.subarray(0, 16));
  const hmac = Buffer.from(keys.subarray(16, 32));
  const aes = Buffer.from(keys.subarray(32, 48));
  const iv = Buffer.alloc(16);
  // Node reads the answer at once (copying name and IV), so the arrays are made once. Its
  // layout: [result, HMAC secret, AES key, key name, IV]; result 1 ticket made or opened,
  // 2 opened and to be renewed, 0 not ours (a full handshake follows).
  const made = [1, hmac, aes, name, iv];
  const opened = [1, hmac, aes];
  const renewed = [2, hmac, aes];
  const foreign = [0, hmac, aes];
  native.onticketkeycallback = (keyName: Buffer, _iv: Buffer, encrypt: boolean): unknown[] => {
    if (encrypt) {
      nextIv(iv);
      return made;
    }
    if (!keyName.equals(name)) return foreign;
    return renewing ? renewed : opened;
  };
  native.enableTicketKeyCallback();
  return true;
}
