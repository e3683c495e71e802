// What mod_include offers other modules (httpd's optional functions ap_register_include_handler,
// ap_ssi_get_tag_and_value and ap_ssi_parse_string): an SSI element is a provider of group
// 'ssi_element' named after the element; mod_cgi and mod_cgid provide `exec` this way. Types
// only: a module importing this file takes nothing of mod_include's code.

import type { Request } from '../../../server/request/request.js';
import type { FilterInstance } from '../../../server/filters.js';
import type { MaybePromise } from '../../../server/module.js';
import type { SsiArg } from './scanner.js';

export type { SsiArg };

/** The state of one document being parsed, as an element handler sees it (include_ctx_t). */
export interface SsiContext {
  readonly r: Request;
  /** The INCLUDES filter instance: output written past the context goes to `filter.next`. */
  readonly filter: FilterInstance;
  /** Whether output is being produced (false inside a false #if branch). */
  readonly printing: boolean;
  /** `Options IncludesNOEXEC`: exec and the inclusion of non-text responses are refused. */
  readonly noExec: boolean;
  /** Expands $name and ${name} with the SSI variables (ap_ssi_parse_string); an unset one is
   *  dropped, or with `leaveName` kept as written (SSI_EXPAND_LEAVE_NAME). */
  parseString(s: string, leaveName?: boolean): string;
  /** An SSI variable's value (undefined when unset). */
  variable(name: string): string | undefined;
  /** Decodes HTML entities as the elements do for attribute values (decodehtml). */
  decodeHtml(s: string): string;
  /** Appends bytes (latin1 string or Buffer) to the document's output. */
  emit(data: string | Buffer): void;
  /** Appends the configured error message ("[an error occurred while processing this directive]"). */
  emitError(): void;
  /** Passes what was emitted so far down the chain: call before writing to `filter.next`
   *  yourself (a subrequest's output, a script's). */
  flush(): MaybePromise<void>;
  /** Marks a subrequest as an inclusion of this document: its own INCLUDES filter then shares
   *  this document's variables (mod_include's nested-include rule). */
  adoptSubrequest(sub: Request): void;
}

/** One element handler (include_handler_fn_t). `args` are the element's attributes in order. */
export type SsiElementHandler = (ctx: SsiContext, args: readonly SsiArg[]) => MaybePromise<void>;

declare module '../../../server/module.js' {
  interface ProviderGroups {
    /** An SSI element (`<!--#name ... -->`) a module adds to mod_include. */
    ssi_element: SsiElementHandler;
  }
}
