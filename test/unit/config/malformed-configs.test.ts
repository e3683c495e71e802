/**
 * Malformed configurations: for each, `plume -t` must print what `apache2 -t` printed (the
 * same AH codes and words, the same file and line), exit as Apache exited, and never crash.
 *
 * Every expected text below was measured on Apache httpd 2.4.71 (/usr/sbin/apache2 -t) with
 * the same configuration: the 6-line preamble (so the first line of `conf` is line 7) then
 * `conf`; `files` are written beside httpd.conf. Placeholders as in test/golden/cli:
 * @ROOT@ is the configuration's folder, @ARGV0@ the short program name, [<time>] and [pid]
 * stand for an error-log time stamp and pid field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PLUME_BIN, normaliseOutput, run } from '../../cli/golden-lib.js';

interface Case {
  name: string;
  /** Lines after the preamble (line 7 onwards); @ROOT@ is substituted. */
  conf: string[];
  /** Other files, relative to the root; @ROOT@ is substituted. */
  files?: Record<string, string>;
  exit: number;
  /** stderr then stdout, line by line, as Apache printed them. */
  expected: string[];
  /** The lines plume adds after Apache's: the specification's remedies (section 7.1). */
  remedy?: string[];
}

const PREAMBLE = [
  'LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so',
  'ServerName localhost',
  'Listen 127.0.0.1:18080',
  'PidFile @ROOT@/httpd.pid',
  'ErrorLog @ROOT@/error.log',
  'DocumentRoot @ROOT@',
];

const CASES: Case[] = [
  {
    name: 'unclosed-section',
    conf: ['<Directory /tmp>', 'Options None'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: @ROOT@/httpd.conf:7: <Directory> was not closed.',
    ],
  },
  {
    name: 'mismatched-closer',
    conf: ['<Directory /tmp>', '</Location>'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 8 of @ROOT@/httpd.conf: Expected </Directory> but saw </Location>',
    ],
  },
  {
    name: 'closer-without-opener',
    conf: ['</Directory>'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: </Directory> without matching <Directory> section',
    ],
  },
  {
    name: 'section-missing-gt',
    conf: ['<Directory /tmp', '</Directory>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      '<Directory> directive missing closing \'>\'',
    ],
  },
  {
    name: 'unknown-section',
    conf: ['<Bogus x>', '</Bogus>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Invalid command \'<Bogus\', perhaps misspelled or defined by a module not included in the server configuration',
    ],
  },
  {
    name: 'unknown-directive',
    conf: ['Bogus on'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Invalid command \'Bogus\', perhaps misspelled or defined by a module not included in the server configuration',
    ],
  },
  {
    name: 'unterminated-quote',
    conf: ['ServerAdmin "abc'],
    exit: 0,
    expected: [
      'Syntax OK',
    ],
  },
  {
    name: 'quoted-extra-argument',
    conf: ['ServerAdmin "a b" c'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'ServerAdmin takes one argument, The email address of the server administrator',
    ],
  },
  {
    name: 'backslash-pair-in-quotes',
    conf: ['ServerAdmin "a\\\\" b'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'ServerAdmin takes one argument, The email address of the server administrator',
    ],
  },
  {
    name: 'escaped-quote-in-quotes',
    conf: ['ServerAdmin "a\\" b"'],
    exit: 0,
    expected: [
      'Syntax OK',
    ],
  },
  {
    name: 'take1-without-argument',
    conf: ['ServerName'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'ServerName takes one argument, The hostname and port of the server',
    ],
  },
  {
    name: 'take2-one-argument',
    conf: ['ErrorDocument 404'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'ErrorDocument takes two arguments, Change responses for HTTP errors',
    ],
  },
  {
    name: 'flag-bad-value',
    conf: ['KeepAlive yes'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'KeepAlive must be On or Off',
    ],
  },
  {
    name: 'enablesendfile-bad-value',
    conf: ['EnableSendfile maybe'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'parameter must be \'on\' or \'off\'',
    ],
  },
  {
    name: 'enablesendfile-two-arguments',
    conf: ['EnableSendfile on off'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'EnableSendfile takes one argument, Controls whether sendfile may be used to transmit files',
    ],
  },
  {
    name: 'listen-three-arguments',
    conf: ['Listen 127.0.0.1:18081 http extra'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Listen requires 1 or 2 arguments.',
    ],
  },
  {
    name: 'listen-duplicate',
    conf: ['Listen 127.0.0.1:18080'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Cannot define multiple Listeners on the same IP:port',
    ],
  },
  {
    name: 'listen-without-port',
    conf: ['Listen 127.0.0.1:'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Port must be specified',
    ],
  },
  {
    name: 'listen-port-out-of-range',
    conf: ['Listen 127.0.0.1:99999'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Invalid address or port',
    ],
  },
  {
    name: 'listen-in-virtualhost',
    conf: ['<VirtualHost *:18080>', 'Listen 18081', '</VirtualHost>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 8 of @ROOT@/httpd.conf:',
      'Listen cannot occur within <VirtualHost> section',
    ],
  },
  {
    name: 'maxranges-zero',
    conf: ['MaxRanges 0'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'MaxRanges requires \'none\', \'default\', \'unlimited\' or a positive integer',
    ],
  },
  {
    name: 'loglevel-bogus',
    conf: ['LogLevel bogus'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Log level keyword must be one of emerg/alert/crit/error/warn/notice/info/debug/trace1/.../trace8',
    ],
  },
  {
    name: 'loglevel-module-bogus',
    conf: ['LogLevel core:bogus'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'core:bogus: Log level keyword must be one of emerg/alert/crit/error/warn/notice/info/debug/trace1/.../trace8',
    ],
  },
  {
    name: 'loglevel-unknown-module',
    conf: ['LogLevel nosuch:info'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Cannot find module nosuch',
    ],
  },
  {
    name: 'loglevel-no-arguments',
    conf: ['LogLevel'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'LogLevel requires at least one argument, Level of verbosity in error logging',
    ],
  },
  {
    name: 'limitrequestline-negative',
    conf: ['LimitRequestLine -5'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'LimitRequestLine "-5" must be a non-negative integer',
    ],
  },
  {
    name: 'limitrequestbody-not-a-number',
    conf: ['LimitRequestBody abc'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'LimitRequestBody requires a non-negative integer.',
    ],
  },
  {
    name: 'servertokens-bogus',
    conf: ['ServerTokens Bogus'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'ServerTokens takes 1 argument: \'Prod(uctOnly)\', \'Major\', \'Minor\', \'Min(imal)\', \'OS\', or \'Full\'',
    ],
  },
  {
    name: 'servername-bad-port',
    conf: ['ServerName a:99999'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'The port number "a:99999" is outside the appropriate range (i.e., 1..65535).',
    ],
  },
  {
    name: 'options-mixed',
    conf: ['Options +Indexes FollowSymLinks'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Either all Options must start with + or -, or no Option may.',
    ],
  },
  {
    name: 'options-unknown',
    conf: ['Options -Bogus'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Illegal option Bogus',
    ],
  },
  {
    name: 'allowoverride-at-server-level',
    conf: ['AllowOverride None'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'AllowOverride not allowed here',
    ],
  },
  {
    name: 'allowoverride-in-location',
    conf: ['<Location /x>', 'AllowOverride None', '</Location>'],
    exit: 0,
    expected: [
      '[<time>] [core:warn] [pid] AH00114: Useless use of AllowOverride in line 8 of @ROOT@/httpd.conf.',
      'Syntax OK',
    ],
  },
  {
    name: 'allowoverride-bogus',
    conf: ['<Directory /tmp>', 'AllowOverride Bogus', '</Directory>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 8 of @ROOT@/httpd.conf:',
      'Illegal override option Bogus',
    ],
  },
  {
    name: 'servername-in-location',
    conf: ['<Location /x>', 'ServerName x', '</Location>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 8 of @ROOT@/httpd.conf:',
      'ServerName not allowed in <Location> context',
    ],
  },
  {
    name: 'virtualhost-in-directory',
    conf: ['<Directory /tmp>', '<VirtualHost *:18080>', '</VirtualHost>', '</Directory>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 8 of @ROOT@/httpd.conf:',
      '<VirtualHost not allowed in <Directory> context',
    ],
  },
  {
    name: 'virtualhost-without-address',
    conf: ['<VirtualHost>', '</VirtualHost>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      '<VirtualHost> directive requires additional arguments',
    ],
  },
  {
    name: 'location-without-argument',
    conf: ['<Location>', '</Location>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      '<Location> directive requires additional arguments',
    ],
  },
  {
    name: 'files-in-location',
    conf: ['<Location /x>', '<Files a>', '</Files>', '</Location>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 8 of @ROOT@/httpd.conf:',
      '<Files> cannot occur within <Location> section',
    ],
  },
  {
    name: 'include-missing-file',
    conf: ['Include @ROOT@/missing.conf'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Could not open configuration file @ROOT@/missing.conf: No such file or directory',
    ],
  },
  {
    name: 'include-wildcard-no-match',
    conf: ['Include @ROOT@/empty/*.conf'],
    files: { 'empty/.keep': '' },
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Include/IncludeOptional: No matches for the wildcard \'*.conf\' in \'@ROOT@/empty\', failing',
    ],
  },
  {
    name: 'include-wildcard-directory-missing',
    conf: ['Include @ROOT@/nodir/*.conf'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Include/IncludeOptional: Could not open directory @ROOT@/nodir: No such file or directory',
    ],
  },
  {
    name: 'include-error-in-included-file',
    conf: ['Include @ROOT@/sub.conf'],
    files: { 'sub.conf': 'ServerAdmin x\n<Directory /tmp>\n' },
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Syntax error on line 2 of @ROOT@/sub.conf: @ROOT@/sub.conf:2: <Directory> was not closed.',
    ],
  },
  {
    name: 'include-recursion',
    conf: ['Include @ROOT@/self.conf'],
    files: { 'self.conf': 'Include @ROOT@/self.conf\n' },
    exit: 1,
    expected: [
      // Each nesting level adds its own frame: 128 of them, then the refusal.
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: ' +
        'Syntax error on line 1 of @ROOT@/self.conf: '.repeat(128) +
        'Exceeded maximum include depth of 128, There appears to be a recursion.',
    ],
  },
  {
    name: 'includeoptional-missing',
    conf: ['IncludeOptional @ROOT@/missing.conf', 'IncludeOptional @ROOT@/nodir/*.conf'],
    exit: 0,
    expected: [
      'Syntax OK',
    ],
  },
  {
    name: 'ifversion-bad-operator',
    conf: ['<IfVersion => 2.4>', '</IfVersion>'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: unrecognized operator \'=>\'',
    ],
  },
  {
    name: 'ifversion-bad-version',
    conf: ['<IfVersion >= two>', '</IfVersion>'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Version appears to be invalid. It must have the format major[.minor[.patch]] where major, minor and patch are numbers.',
    ],
  },
  {
    name: 'ifversion-bad-regex',
    conf: ['<IfVersion ~ [>', '</IfVersion>'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Unable to compile regular expression',
    ],
  },
  {
    name: 'ifversion-regex-missing-slash',
    conf: ['<IfVersion = /2\\.4>', '</IfVersion>'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Missing delimiting / of regular expression.',
    ],
  },
  {
    name: 'ifmodule-without-argument',
    conf: ['<IfModule>', '</IfModule>'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: <IfModule> directive requires additional arguments',
    ],
  },
  {
    name: 'define-without-argument',
    conf: ['Define'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Define takes 1-2 arguments, Define a variable, optionally to a value.  Same as passing -D to the command line.',
    ],
  },
  {
    name: 'define-with-colon',
    conf: ['Define a:b'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Variable name must not contain \':\'',
    ],
  },
  {
    name: 'undefined-variable',
    conf: ['ServerAdmin ${NOT_DEFINED_HERE}'],
    exit: 0,
    expected: [
      '[<time>] [core:warn] [pid] AH00111: Config variable ${NOT_DEFINED_HERE} is not defined',
      'Syntax OK',
    ],
  },
  {
    name: 'filesmatch-bad-regex',
    conf: ['<FilesMatch "(">', '</FilesMatch>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Regex could not be compiled',
    ],
  },
  {
    name: 'directorymatch-bad-regex',
    conf: ['<Directory ~ "[">', '</Directory>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Regex could not be compiled',
    ],
  },
  {
    name: 'errordocument-bad-status',
    conf: ['ErrorDocument 999 /x'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Unsupported HTTP response code 999',
    ],
  },
  {
    name: 'error-directive',
    conf: ['Error "stop here"'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'stop here',
    ],
  },
  {
    name: 'documentroot-missing',
    conf: ['DocumentRoot @ROOT@/missing'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'DocumentRoot \'@ROOT@/missing\' is not a directory, or is not readable',
    ],
  },
  {
    name: 'comment-continuation',
    conf: ['# a comment \\', 'Bogus swallowed by the comment'],
    exit: 0,
    expected: [
      'Syntax OK',
    ],
  },
  {
    name: 'continuation-joins-arguments',
    conf: ['ServerAdmin \\', '  a b'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 8 of @ROOT@/httpd.conf:',
      'ServerAdmin takes one argument, The email address of the server administrator',
    ],
  },
  {
    name: 'warning-then-error',
    conf: ['DefaultType text/plain', 'Bogus'],
    exit: 1,
    expected: [
      '[<time>] [core:warn] [pid] AH00117: Ignoring deprecated use of DefaultType in line 7 of @ROOT@/httpd.conf.',
      'AH00526: Syntax error on line 8 of @ROOT@/httpd.conf:',
      'Invalid command \'Bogus\', perhaps misspelled or defined by a module not included in the server configuration',
    ],
  },
  {
    name: 'order-without-access-compat',
    conf: ['<Directory /tmp>', 'Order allow,deny', '</Directory>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 8 of @ROOT@/httpd.conf:',
      'Invalid command \'Order\', perhaps misspelled or defined by a module not included in the server configuration',
    ],
    remedy: ['Remedy: load mod_access_compat, which provides \'Order\': LoadModule access_compat_module /usr/lib/apache2/modules/mod_access_compat.so, or replace Order, Allow, Deny and Satisfy by 2.4\'s Require directives (mod_authz_core, mod_authz_host)'],
  },
  {
    name: 'require-without-authz-core',
    conf: ['<Directory /tmp>', 'Require all granted', '</Directory>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 8 of @ROOT@/httpd.conf:',
      'Invalid command \'Require\', perhaps misspelled or defined by a module not included in the server configuration',
    ],
    remedy: ['Remedy: load mod_authz_core, which provides \'Require\': LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so'],
  },
  {
    name: 'serveralias-outside-virtualhost',
    conf: ['ServerAlias a'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'ServerAlias only used in <VirtualHost>',
    ],
  },
  {
    name: 'mutex-bogus',
    conf: ['Mutex bogus'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'Invalid Mutex argument bogus (Mutex mechanisms are: \'none\', \'default\', \'flock:/path/to/file\', \'fcntl:/path/to/file\', \'file:/path/to/file\', \'pthread\', \'sysvsem\', \'posixsem\', \'sem\')',
    ],
  },
  {
    name: 'loadmodule-missing-file',
    conf: ['LoadModule foo_module @ROOT@/mod_foo.so'],
    exit: 1,
    expected: [
      '@ARGV0@: Syntax error on line 7 of @ROOT@/httpd.conf: Cannot load @ROOT@/mod_foo.so into server: @ROOT@/mod_foo.so: cannot open shared object file: No such file or directory',
    ],
  },
  {
    name: 'hostnamelookups-bogus',
    conf: ['HostnameLookups maybe'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      'parameter must be \'on\', \'off\', or \'double\'',
    ],
  },
  {
    name: 'limit-in-server',
    conf: ['<Limit GET>', '</Limit>'],
    exit: 1,
    expected: [
      'AH00526: Syntax error on line 7 of @ROOT@/httpd.conf:',
      '<Limit not allowed here',
    ],
  },
];

/** A JavaScript failure leaking out: a stack frame, or Node's report of an uncaught error. */
const CRASH = /^\s+at .+\(.*:\d+:\d+\)$|^Node\.js v\d|^(Type|Reference|Syntax|Range)Error: /m;

test('the table holds at least 30 malformed configurations', () => {
  assert.ok(CASES.length >= 30, `${CASES.length} cases`);
  assert.equal(new Set(CASES.map((c) => c.name)).size, CASES.length, 'case names are unique');
});

for (const c of CASES) {
  test(`plume -t on a malformed configuration: ${c.name}`, { timeout: 30000 }, () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'plume-malformed-'));
    try {
      const sub = (t: string): string => t.split('@ROOT@').join(root);
      fs.writeFileSync(path.join(root, 'httpd.conf'), sub([...PREAMBLE, ...c.conf].join('\n') + '\n'));
      for (const [f, text] of Object.entries(c.files ?? {})) {
        fs.mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
        fs.writeFileSync(path.join(root, f), sub(text));
      }
      const r = run(process.execPath, [PLUME_BIN, '-t', '-d', root, '-f', path.join(root, 'httpd.conf')], root);
      const actual = normaliseOutput(r.stderr + r.stdout, root);
      assert.doesNotMatch(actual, CRASH, `plume crashed:\n${actual}`);
      const expected = [...c.expected, ...(c.remedy ?? [])].map((l) => l.split('@ARGV0@').join('plume')).join('\n') + '\n';
      assert.equal(actual, expected);
      assert.equal(r.status, c.exit, 'exit code');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
}
