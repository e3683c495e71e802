// Configuration errors, worded and framed as httpd frames them.
//  - 'read' errors (building the tree, EXEC_ON_READ directives such as Include, LoadModule,
//    Define, <IfModule>) print as "<argv0>: Syntax error on line N of FILE: MESSAGE".
//  - 'walk' errors (ordinary directives) print as "AH00526: Syntax error on line N of FILE:"
//    followed by the message on its own line.

import { escapeErrorLogItem } from '../log/error-log-format.js';

export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly detail: string,
    readonly phase: 'read' | 'walk',
    /** The message stands alone (no "Syntax error on line" framing), as for unclosed sections. */
    readonly bare = false,
  ) {
    super(`${file}:${line}: ${detail}`);
  }

  /** The specification's remedies (section 7.1, src/server/config/remedies.ts): lines printed
   *  after httpd's message, which stays as httpd prints it.
   *  DIFFERENCE: httpd prints no remedy. */
  remedy: readonly string[] = [];

  /** The text httpd prints on stderr for this error (and the remedy lines after it). */
  format(argv0: string): string {
    const more = this.remedy.length > 0 ? '\n' + this.remedy.join('\n') : '';
    // httpd logs the message through its error log, which escapes control characters,
    // backslashes and bytes above 0x7e (ap_escape_errorlog_item).
    const detail = escapeErrorLogItem(this.detail);
    if (this.phase === 'walk') {
      return `AH00526: Syntax error on line ${this.line} of ${this.file}:\n${detail}${more}`;
    }
    return `${argv0}: Syntax error on line ${this.line} of ${this.file}: ${detail}${more}`;
  }

  /** An error from an included file, wrapped by the Include line (httpd nests the framing). */
  wrapIn(file: string, line: number): ConfigError {
    if (this.phase === 'walk') return this;
    const wrapped = new ConfigError(file, line, `Syntax error on line ${this.line} of ${this.file}: ${this.detail}`, 'read');
    wrapped.remedy = this.remedy;
    return wrapped;
  }
}

/** httpd's "Invalid command" for a directive no loaded module provides. */
export class UnknownDirectiveError extends ConfigError {
  constructor(file: string, line: number, readonly shown: string) {
    super(file, line, `Invalid command '${shown}', perhaps misspelled or defined by a module not included in the server configuration`, 'walk');
  }
}

/** A read-phase error that does not stop the read (a LoadModule of a module plume does not
 *  have), so that one run names every such line: the first is reported once the read is over,
 *  with every one's remedy. `error` is re-framed by each Include it was read through. */
export interface DeferredError {
  error: ConfigError;
  readonly remedy: string;
}

/** A configuration problem that is not tied to a line (post-config checks). */
export class StartupError extends Error {
  constructor(readonly text: string, readonly exitCode = 1) {
    super(text);
  }
}
