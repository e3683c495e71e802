// The hook catalogue and runners. Hooks are sorted once per configuration (order constants,
// then predecessors/successors by module source name); an empty hook is null and costs
// nothing per request. Runners stay synchronous until a hook returns a promise.

import {
  DECLINED, OK, HOOK_MIDDLE,
  type AnyModuleHandle, type HookEntry, type MaybePromise, type QuickHandlerEntry, type QuickHandlerHook, type RequestHook,
  type RequestHookName, type VoidRequestHook,
} from './module.js';
import type { Request } from './request/request.js';

export type HookLists = { [K in RequestHookName]: ((r: Request) => MaybePromise<number | void>)[] | null } & {
  /** httpd's quick_handler: null when no module registers one (the request path then pays
   *  nothing for it). */
  quickHandler: QuickHandlerHook[] | null;
};

/** Which hooks run first-wins (the rest run all). */
export const RUN_FIRST: ReadonlySet<RequestHookName> = new Set([
  'translateName', 'mapToStorage', 'accessCheckerEx', 'checkUserId', 'authChecker', 'typeChecker', 'handler',
]);

const ALL_HOOKS: RequestHookName[] = [
  'postReadRequest', 'translateName', 'mapToStorage', 'headerParser', 'accessChecker', 'accessCheckerEx',
  'checkUserId', 'authChecker', 'typeChecker', 'fixups', 'insertFilter', 'handler', 'logTransaction', 'insertErrorFilter',
];

interface Entry<F = (r: Request) => MaybePromise<number | void>> {
  fn: F;
  order: number;
  source: string;
  pred: readonly string[];
  succ: readonly string[];
  seq: number;
}

/** The phase and module of every hook function, for plume explain's trace (read only when
 *  a request carries a trace and a hook decides). */
const hookOrigin = new WeakMap<object, { readonly phase: RequestHookName; readonly source: string }>();

function traceHook(r: Request, fn: object, status: number): void {
  const o = hookOrigin.get(fn);
  if (o !== undefined) r.trace!.record('hook', { phase: o.phase, module: o.source, status });
}

/** Sorts every module's hooks once. */
export function buildHookLists(modules: readonly AnyModuleHandle[]): HookLists {
  const lists = {} as HookLists;
  for (const h of ALL_HOOKS) {
    const entries: Entry[] = [];
    let seq = 0;
    for (const m of modules) {
      const regs = m.decl.hooks?.[h];
      if (!regs) continue;
      for (const reg of (Array.isArray(regs) ? regs : [regs]) as readonly HookEntry<typeof h>[]) {
        const e = typeof reg === 'function'
          ? { fn: reg as (r: Request) => MaybePromise<number | void>, order: HOOK_MIDDLE, pred: [], succ: [] }
          : { fn: reg.fn as (r: Request) => MaybePromise<number | void>, order: reg.order ?? HOOK_MIDDLE, pred: reg.predecessors ?? [], succ: reg.successors ?? [] };
        entries.push({ ...e, source: m.decl.source, seq: seq++ });
        hookOrigin.set(e.fn, { phase: h, source: m.decl.source });
      }
    }
    lists[h] = entries.length ? topoSort(entries).map((e) => e.fn) : null;
  }
  const quick: Entry<QuickHandlerHook>[] = [];
  let seq = 0;
  for (const m of modules) {
    const regs = m.decl.hooks?.quickHandler;
    if (!regs) continue;
    for (const reg of (Array.isArray(regs) ? regs : [regs]) as readonly QuickHandlerEntry[]) {
      const e = typeof reg === 'function'
        ? { fn: reg, order: HOOK_MIDDLE, pred: [], succ: [] }
        : { fn: reg.fn, order: reg.order ?? HOOK_MIDDLE, pred: reg.predecessors ?? [], succ: reg.successors ?? [] };
      quick.push({ ...e, source: m.decl.source, seq: seq++ });
    }
  }
  lists.quickHandler = quick.length ? topoSort(quick).map((e) => e.fn) : null;
  return lists;
}

/** Stable sort by order, then honour predecessor/successor constraints (apr_hook_sort). */
function topoSort<E extends Entry<unknown>>(entries: E[]): E[] {
  const sorted = entries.slice().sort((a, b) => a.order - b.order || a.seq - b.seq);
  const out: E[] = [];
  const placed = new Set<E>();
  const before = (a: E, b: E): boolean => b.pred.includes(a.source) || a.succ.includes(b.source);
  while (out.length < sorted.length) {
    const next = sorted.find((e) => !placed.has(e) && !sorted.some((o) => o !== e && !placed.has(o) && before(o, e)));
    const pick = next ?? sorted.find((e) => !placed.has(e))!;
    placed.add(pick);
    out.push(pick);
  }
  return out;
}

/** Run-first: the first result other than DECLINED. */
export function runFirst(list: HookLists[RequestHookName], r: Request): MaybePromise<number> {
  if (list === null) return DECLINED;
  for (let i = 0; i < list.length; i++) {
    const fn = list[i]!;
    const v = fn(r);
    if (typeof v !== 'number') {
      if (v === undefined) continue;
      return v.then((res) => {
        if (res === DECLINED || res === undefined) return runFirst(list.slice(i + 1), r);
        if (r.trace !== undefined) traceHook(r, fn, res);
        return res;
      });
    }
    if (v !== DECLINED) {
      if (r.trace !== undefined) traceHook(r, fn, v);
      return v;
    }
  }
  return DECLINED;
}

/** The quick handlers (run-first): the first result other than DECLINED. */
export function runQuickHandler(list: readonly QuickHandlerHook[], r: Request, lookup: boolean, from = 0): MaybePromise<number> {
  for (let i = from; i < list.length; i++) {
    const v = list[i]!(r, lookup);
    if (typeof v !== 'number') return v.then((res) => (res === DECLINED ? runQuickHandler(list, r, lookup, i + 1) : res));
    if (v !== DECLINED) return v;
  }
  return DECLINED;
}

/** Run-all: OK unless a hook returns something other than OK or DECLINED. */
export function runAll(list: HookLists[RequestHookName], r: Request): MaybePromise<number> {
  if (list === null) return OK;
  for (let i = 0; i < list.length; i++) {
    const fn = list[i]!;
    const v = fn(r);
    if (typeof v !== 'number') {
      if (v === undefined) continue;
      return v.then((res) => {
        if (res === OK || res === DECLINED || res === undefined) return runAll(list.slice(i + 1), r);
        if (r.trace !== undefined) traceHook(r, fn, res);
        return res;
      });
    }
    if (v !== OK && v !== DECLINED) {
      if (r.trace !== undefined) traceHook(r, fn, v);
      return v;
    }
  }
  return OK;
}

/** Void hooks (insert_filter): run every one. */
export function runVoid(list: HookLists[RequestHookName], r: Request): MaybePromise<void> {
  if (list === null) return;
  for (let i = 0; i < list.length; i++) {
    const v = list[i]!(r);
    if (v !== undefined && typeof v !== 'number') return v.then(() => runVoid(list.slice(i + 1), r));
  }
}

export type { RequestHook, VoidRequestHook };
