// A result that is there now or later: hooks, filters and the request's helpers answer
// synchronously when they can (no promise, no microtask) and with a promise when they wait.
// On its own so that the layers below the module API (filters.ts, request/) name it without
// importing module.ts, which imports them.

export type MaybePromise<T> = T | Promise<T>;
