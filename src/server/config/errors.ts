// Configuration errors, worded and framed as httpd frames them.
//  - 'read' errors (building the tree, EXEC_ON_READ directives such as Include, LoadModule,
//    Define, <IfModule>) print as "<argv0>: Syntax error on line N of FILE: MESSAGE".
//  - 'walk' errors (ordinary directives) print as "AH00526: Syntax error on line N of FILE:"
//    followed by the message on its own line.

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

  /** The text httpd prints on stderr for this error. */
  format(argv0: string): string {
    if (this.phase === 'walk') {
      return `AH00526: Syntax error on line ${this.line} of ${this.file}:\n${this.detail}`;
    }
    return `${argv0}: Syntax error on line ${this.line} of ${this.file}: ${this.detail}`;
  }

  /** An error from an included file, wrapped by the Include line (httpd nests the framing). */
  wrapIn(file: string, line: number): ConfigError {
    if (this.phase === 'walk') return this;
    return new ConfigError(file, line, `Syntax error on line ${this.line} of ${this.file}: ${this.detail}`, 'read');
  }
}

/** A configuration problem that is not tied to a line (post-config checks). */
export class StartupError extends Error {
  constructor(readonly text: string, readonly exitCode = 1) {
    super(text);
  }
}
