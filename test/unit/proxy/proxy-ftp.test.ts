// mod_proxy_ftp's parsers (src/proxy/protocols/ftp.ts and the module's MDTM reading): control
// replies as ftp_getrc_msg reads them (multi-line, cut at 79 bytes, malformed), EPSV and PASV
// answers, one line of LIST output as the PROXY_SEND_DIR filter shows it, the listing's
// heading, the globbing and %-escape helpers; bounded fuzz of the reply and LIST-line parsers.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  FtpReplyParser, checkFtpString, decodeEnc, escapeGlobbing, hasGlobbing, listLineToHtml, listingFooter, listingHeader,
  parseAprUri, parseEpsvReply, parsePasvReply, replyMessage, unparseSite,
} from '../../../src/proxy/protocols/ftp.js';
import { parseMdtm } from '../../../src/modules/proxy/mod_proxy_ftp.js';
import { randomString, seededRandom } from '../../fuzz.js';

function replies(lines: string[]): { code: number; message: string }[] {
  const p = new FtpReplyParser();
  const out: { code: number; message: string }[] = [];
  for (const l of lines) {
    const r = p.push(l);
    if (r !== undefined) out.push({ code: r.code, message: replyMessage(r.code, r.message) });
  }
  return out;
}

test('FTP replies: one line, the code and the text after it', () => {
  assert.deepEqual(replies(['220 plume test FTP server ready.\r\n']), [{ code: 220, message: 'plume test FTP server ready.' }]);
  assert.deepEqual(replies(['550 No such file or directory.\r\n', '257 "/pub" is the current directory.\r\n']),
    [{ code: 550, message: 'No such file or directory.' }, { code: 257, message: '"/pub" is the current directory.' }]);
  // A line without a three-digit code and a space or dash: code 0.
  assert.deepEqual(replies(['hello world\r\n']), [{ code: 0, message: 'o world' }]);
  assert.deepEqual(replies(['22x ok\r\n']), [{ code: 0, message: 'ok' }]);
});

test('FTP replies: multi-line replies end at "NNN "; only the first line is kept', () => {
  const r = replies(['230-Welcome\r\n', ' to the server\r\n', '230-more\r\n', '230 Login successful.\r\n']);
  assert.deepEqual(r, [{ code: 230, message: 'Welcome' }]);
  // Another code's "NNN " line does not end it.
  assert.deepEqual(replies(['211-Features:\r\n', '200 x\r\n', '211 End\r\n']), [{ code: 211, message: 'Features:' }]);
  assert.equal(new FtpReplyParser().push('211-Features:\r\n'), undefined);
});

test('FTP replies: a line is read into 80 bytes, a short one is malformed (-1)', () => {
  const long = '250 ' + 'x'.repeat(100) + '\r\n';
  assert.deepEqual(replies([long]), [{ code: 250, message: 'x'.repeat(75) }]);
  const p = new FtpReplyParser();
  assert.deepEqual(p.push('22\n'), { code: -1, message: '' });
  assert.equal(p.malformed, '22\n');
  assert.equal(replyMessage(-1, 'x'), '<unable to read result>');
  assert.equal(replyMessage(421, 'Timeout.'), '<unable to read result>');
});

test('EPSV: (|||port|) with any delimiter, 0 for anything else', () => {
  assert.equal(parseEpsvReply('Entering extended passive mode (|||44077|).'), 44077);
  assert.equal(parseEpsvReply('ok (!!!21!)'), 21);
  assert.equal(parseEpsvReply('ok (||| 21|)'), 21);
  assert.equal(parseEpsvReply('ok (|||0|)'), 0);
  assert.equal(parseEpsvReply('ok (|||65536|)'), 0);
  assert.equal(parseEpsvReply('ok (||||)'), 0);
  assert.equal(parseEpsvReply('ok (|||21)'), 0);
  assert.equal(parseEpsvReply('ok (||21|)'), 0);
  assert.equal(parseEpsvReply('no parenthesis'), 0);
});

test('PASV: the address in parentheses, or after "=", as httpd reads it', () => {
  assert.deepEqual(parsePasvReply('Entering passive mode (127,0,0,1,172,45).'), { host: '127.0.0.1', port: 172 * 256 + 45, parts: [127, 0, 0, 1, 172, 45] });
  assert.deepEqual(parsePasvReply('Entering =10,1,2,3,0,21')?.host, '10.1.2.3');
  assert.equal(parsePasvReply('Entering passive mode 127,0,0,1,172,45'), undefined);
  assert.equal(parsePasvReply('Entering passive mode (127,0,0,1,172)'), undefined);
  assert.equal(parsePasvReply('Passive'), undefined);
  assert.equal(parsePasvReply(''), undefined);
});

test('LIST lines: files, directories, symlinks, DOS and "ls -s1" listings', () => {
  assert.equal(listLineToHtml('-rw-r--r--   1 root     root           15 Jan 02  2024 readme.txt\r\n'),
    '-rw-r--r--   1 root     root           15 Jan 02  2024 <a href="readme.txt">readme.txt</a>\n');
  assert.equal(listLineToHtml('drwxr-xr-x   3 root     root         4096 Jan 02  2024 pub\r\n'),
    'drwxr-xr-x   3 root     root         4096 Jan 02  2024 <a href="pub/">pub</a>\n');
  // Names with spaces: only the last word is the link (httpd's firstfile is reset every line).
  assert.equal(listLineToHtml('-rw-r--r--   1 root     root            4 Jan 02  2024 odd name & <x>.txt\n'),
    '-rw-r--r--   1 root     root            4 Jan 02  2024 odd name &amp; <a href="%3cx%3e.txt">&lt;x&gt;.txt</a>\n');
  assert.equal(listLineToHtml('lrwxrwxrwx   1 root     root            5 Jan 02  2024 link -> a.txt\r\n'),
    'lrwxrwxrwx   1 root     root            5 Jan 02  2024 <a href="link">link -&gt; a.txt</a>\n');
  assert.equal(listLineToHtml('l -> x\n'), 'l <a href="l">l -&gt; x</a>\n');
  assert.equal(listLineToHtml('-r 1 root ..\n'), '-r 1 root <a href="../">..</a>\n');
  assert.equal(listLineToHtml('01-02-24  03:04AM       <DIR>          sub\r\n'),
    '01-02-24  03:04AM       [DIR]          <a href="sub">sub</a>\n');
  assert.equal(listLineToHtml('   12 file.txt\n'), '   12 <a href="file.txt">file.txt</a>\n');
  assert.equal(listLineToHtml('total 12\r\n'), 'total 12\n');
  assert.equal(listLineToHtml('<b>\n'), '&lt;b&gt;\n');
  assert.equal(listLineToHtml('-nospace\n'), null);
  assert.equal(listLineToHtml('-rw 1 a%b\n'), '-rw 1 <a href="a%25b">a%b</a>\n');
});

test('the listing heading: links per directory, the wildcard, the %2f root and the PWD', () => {
  const h = listingHeader({ site: 'ftp://127.0.0.1:2121', path: '/pub/sub/', pwd: '/pub/sub', readme: 'Login successful.' });
  assert.equal(h, '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n<html>\n <head>\n' +
    '  <title>ftp://127.0.0.1:2121/pub/sub/</title>\n<base href="ftp://127.0.0.1:2121/pub/sub/">\n </head>\n <body>\n' +
    '  <h2>Directory of <a href="/">ftp://127.0.0.1:2121</a>/<a href="/pub/">pub</a>/<a href="/pub/sub/">sub</a>/</h2>\n\n  <hr />\n\n<pre>' +
    'Login successful.\n</pre>\n\n<hr />\n\n<pre>\n');
  const w = listingHeader({ site: 'http://localhost:80', path: '/ftp/pub/*.txt', pwd: '/pub', readme: undefined });
  assert.ok(w.includes('<a href="/ftp/pub/">pub</a>/*.txt</h2>\n\n(/pub)\n\n  <hr />\n\n<pre>'), w);
  const root = listingHeader({ site: 'ftp://h', path: '/%2f/pub/', pwd: undefined, readme: undefined });
  assert.ok(root.includes('<title>ftp://h/%2f/pub/</title>'));
  assert.ok(root.includes('<a href="/">ftp://h</a>/<a href="/%2f/">%2f</a>/<a href="/%2f/pub/">pub</a>/</h2>'), root);
  const typed = listingHeader({ site: 'ftp://h', path: '//pub;type=d', pwd: undefined, readme: undefined });
  assert.ok(typed.includes('<title>ftp://h/pub/</title>'), typed);
  assert.equal(listingFooter(''), '</pre>\n\n  <hr />\n\n  \n\n </body>\n</html>\n');
});

test('globbing, %-decoding and the FTP string check', () => {
  assert.equal(escapeGlobbing('a*b?[c]{d}~', true), 'a\\*b\\?\\[c]\\{d}\\~');
  assert.equal(escapeGlobbing('a*b', false), 'a*b');
  assert.equal(hasGlobbing('/pub/*.txt'), true);
  // httpd skips the backslash and then tests the character after it: still a wildcard.
  assert.equal(hasGlobbing('/pub/\\*.txt'), true);
  assert.equal(hasGlobbing('/pub/a\\'), false);
  assert.equal(hasGlobbing('plain'), false);
  assert.equal(decodeEnc('a%2fb%41%zz%'), 'a/bA%zz%');
  assert.equal(decodeEnc('a%00b'), 'a');
  assert.equal(checkFtpString('alice'), true);
  assert.equal(checkFtpString('a%0db'), false);
  assert.equal(checkFtpString('a\nb'), false);
  assert.equal(checkFtpString('caf\u00e9'), false);
});

test('MDTM times and the URI helpers', () => {
  assert.equal(parseMdtm('20240102030405'), Date.UTC(2024, 0, 2, 3, 4, 5));
  assert.equal(parseMdtm('20240102030405.123'), Date.UTC(2024, 0, 2, 3, 4, 5));
  assert.equal(parseMdtm('2024010203'), 0);
  assert.equal(parseMdtm('x'), 0);
  const u = parseAprUri('ftp://alice:secret@127.0.0.1:2121/pub/a.txt?q');
  assert.deepEqual([u.scheme, u.user, u.password, u.hostname, u.port, u.path, u.query], ['ftp', 'alice', 'secret', '127.0.0.1', 2121, '/pub/a.txt', 'q']);
  assert.equal(unparseSite(u, true), 'ftp://alice@127.0.0.1:2121');
  assert.equal(unparseSite(u, false), 'ftp://alice:XXXXXXXX@127.0.0.1:2121');
  assert.equal(unparseSite(parseAprUri('ftp://h:21/'), true), 'ftp://h');
  assert.equal(unparseSite({ port: 0, user: 'alice' }, true), 'alice@');
  assert.equal(unparseSite(parseAprUri('/ftp/x'), true), '');
});

test('fuzz: the reply parser never throws and every reply has a code of -1, 0 or 100..999', () => {
  const rnd = seededRandom(0xf7b);
  for (let i = 0; i < 3000; i++) {
    const p = new FtpReplyParser();
    for (let j = 0; j < 8; j++) {
      const line = randomString(rnd, '0123456789 -\r\nxX(|)', 90) + (rnd(4) === 0 ? '' : '\n');
      const r = p.push(line);
      if (r === undefined) continue;
      assert.ok(r.code === -1 || r.code === 0 || (r.code >= 100 && r.code <= 999), String(r.code));
      const m = replyMessage(r.code, r.message);
      assert.ok(!/[\r\n]/.test(m));
      assert.ok(m.length <= 79 * 8);
    }
    // EPSV and PASV on the same kind of text.
    const t = randomString(rnd, '0123456789,|() =!x', 40);
    const port = parseEpsvReply(t);
    assert.ok(Number.isInteger(port) && port >= 0 && port <= 65535);
    const a = parsePasvReply(t);
    if (a !== undefined) assert.ok(a.port >= 0 && a.port <= 65535 && a.parts.length === 6);
  }
});

test('fuzz: LIST lines become one line of HTML without a raw <, > or " outside the tags', () => {
  const rnd = seededRandom(0x1157);
  for (let i = 0; i < 5000; i++) {
    const line = randomString(rnd, 'dl-0123 ->x<>"&%\r\t', 60) + (rnd(2) === 0 ? '\r\n' : '\n');
    const out = listLineToHtml(line);
    if (out === null) {
      assert.ok(/^[dl\-0-9]/.test(line) && !line.replace(/\r?\n$/, '').includes(' '), JSON.stringify(line));
      continue;
    }
    assert.ok(out.endsWith('\n'));
    assert.equal(out.indexOf('\n'), out.length - 1, JSON.stringify(line));
    // What is left once the one link is taken out is escaped text.
    const text = out.replace(/<a href="[^"<>]*">/, '').replace('</a>', '');
    assert.ok(!/[<>"]/.test(text), JSON.stringify([line, out]));
  }
});
