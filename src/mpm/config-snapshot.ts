// The configuration text a generation was read from. The parent records every configuration
// file it reads (the main file and each Include'd one); its workers read the configuration
// from that record, so that a worker started later — a replacement after
// MaxConnectionsPerChild, or after a crash — serves exactly what the parent checked, even
// when the files have been edited since (httpd's children are forks of the parent's memory).
// Directory listings of Include wildcards are read live: a file added to an included
// directory reaches a worker only through a restart... or a worker started after it appeared.

import * as fs from 'node:fs';

export type SnapshotEntries = [file: string, text: string][];

export class ConfigSnapshot {
  private readonly files = new Map<string, string>();

  /** ConfigOptions.readConfigFile for the parent's read: the disk, remembered. */
  readonly record = (file: string): string => {
    const text = fs.readFileSync(file, 'latin1');
    this.files.set(file, text);
    return text;
  };

  entries(): SnapshotEntries {
    return [...this.files];
  }

  /** ConfigOptions.readConfigFile for a worker: the parent's text, the disk for anything else. */
  static replay(entries: SnapshotEntries): (file: string) => string {
    const files = new Map(entries);
    return (file) => files.get(file) ?? fs.readFileSync(file, 'latin1');
  }
}
