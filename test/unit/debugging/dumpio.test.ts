// mod_dumpio's lines for what a connection reads and writes: httpd's getline / readbytes /
// speculative headers, bucket summaries, bytes cut at a NUL and in 1968-byte lines, the head
// of a bodyless response sent with its EOS.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DumpioTap } from '../../../src/modules/debugging/mod_dumpio.js';
import type { ConnRec } from '../../../src/server/request/request.js';
import type { ServerRec } from '../../../src/server/server-rec.js';
import { EOS } from '../../../src/server/filters.js';

function tap(input = true, output = true): { t: DumpioTap; lines: string[] } {
  const lines: string[] = [];
  const s = { errorLog: { write: (e: { message: string }) => { lines.push(e.message); } } } as unknown as ServerRec;
  const c = { remoteIp: '127.0.0.1', remotePort: 1 } as unknown as ConnRec;
  return { t: new DumpioTap(c, s, input, output), lines };
}

test('input: getline, readbytes, speculative and the peeked byte, EOF', () => {
  const { t, lines } = tap();
  t.getline(Buffer.from('GET / HTTP/1.1\r\n'));
  t.readBytes(5, Buffer.from('a\0bcd'));
  t.speculative(Buffer.from('G'));
  t.getline(Buffer.from('GET /x HTTP/1.1\r\n'));
  t.getline(null);
  assert.deepEqual(lines, [
    'mod_dumpio: dumpio_in [getline-blocking] 0 readbytes',
    'mod_dumpio:  dumpio_in (data-HEAP): 16 bytes',
    'mod_dumpio:  dumpio_in (data-HEAP): GET / HTTP/1.1\r\n',
    'mod_dumpio: dumpio_in [readbytes-blocking] 5 readbytes',
    'mod_dumpio:  dumpio_in (data-HEAP): 5 bytes',
    'mod_dumpio:  dumpio_in (data-HEAP): a',
    'mod_dumpio: dumpio_in [speculative-nonblocking] 1 readbytes',
    'mod_dumpio:  dumpio_in (data-HEAP): 1 bytes',
    'mod_dumpio:  dumpio_in (data-HEAP): G',
    'mod_dumpio: dumpio_in [getline-blocking] 0 readbytes',
    'mod_dumpio:  dumpio_in (data-HEAP): 1 bytes',
    'mod_dumpio:  dumpio_in (data-HEAP): G',
    'mod_dumpio:  dumpio_in (data-HEAP): 16 bytes',
    'mod_dumpio:  dumpio_in (data-HEAP): ET /x HTTP/1.1\r\n',
    'mod_dumpio: dumpio_in [getline-blocking] 0 readbytes',
    'mod_dumpio: dumpio_in - 70014',
  ]);
});

test('output: head, data in 1968-byte lines, a bodyless head with its EOS, EOR, FLUSH and EOC; switches', () => {
  const { t, lines } = tap(false, true);
  t.getline(Buffer.from('GET / HTTP/1.1\r\n'));
  t.writeHead('HTTP/1.1 200 OK\r\n\r\n', false);
  t.writeBrigade([{ kind: 'data', data: Buffer.alloc(2000, 0x61) }, EOS], true);
  t.writeHead('HTTP/1.1 304 Not Modified\r\n\r\n', true);
  t.writeBrigade([{ kind: 'data', data: Buffer.from('dropped') }, EOS], false);
  t.endRequest();
  t.endConnection();
  assert.deepEqual(lines, [
    'mod_dumpio: dumpio_out',
    'mod_dumpio:  dumpio_out (data-HEAP): 19 bytes',
    'mod_dumpio:  dumpio_out (data-HEAP): HTTP/1.1 200 OK\r\n\r\n',
    'mod_dumpio: dumpio_out',
    'mod_dumpio:  dumpio_out (data-HEAP): 2000 bytes',
    'mod_dumpio:  dumpio_out (data-HEAP): ' + 'a'.repeat(1968),
    'mod_dumpio:  dumpio_out (data-HEAP): ' + 'a'.repeat(32),
    'mod_dumpio:  dumpio_out (metadata-EOS): 0 bytes',
    'mod_dumpio: dumpio_out',
    'mod_dumpio:  dumpio_out (data-HEAP): 29 bytes',
    'mod_dumpio:  dumpio_out (data-HEAP): HTTP/1.1 304 Not Modified\r\n\r\n',
    'mod_dumpio:  dumpio_out (metadata-EOS): 0 bytes',
    'mod_dumpio: dumpio_out',
    'mod_dumpio:  dumpio_out (metadata-EOR): 0 bytes',
    'mod_dumpio: dumpio_out',
    'mod_dumpio:  dumpio_out (metadata-FLUSH): 0 bytes',
    'mod_dumpio:  dumpio_out (metadata-EOC): 0 bytes',
  ]);
});
