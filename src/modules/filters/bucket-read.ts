// How much of a file httpd's filters get from one read of a file bucket (apr_bucket_read):
// with EnableMMAP On a file is mapped, up to 4 MB at a time (APR_MMAP_LIMIT); without, it
// is read 8000 bytes at a time (APR_BUCKET_BUFF_SIZE). Filters that act on piece boundaries
// (mod_substitute's line assembly, mod_bucketeer) read in the same pieces.

import type { Request } from '../../server/request/request.js';
import { coreDir } from '../../server/core/core-module.js';

export const APR_MMAP_LIMIT = 4 * 1024 * 1024;
export const APR_BUCKET_BUFF_SIZE = 8000;

export function fileReadSize(r: Request): number {
  return coreDir(r).enableMmap === 'off' ? APR_BUCKET_BUFF_SIZE : APR_MMAP_LIMIT;
}
