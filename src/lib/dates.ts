/** The UTC calendar day of `d` (`2026-11-24`): the key of daily counters. */
export const utcDay = (d: Date): string => d.toISOString().slice(0, 10);

/** The UTC calendar month of `d` (`2026-11`): the key of monthly spend. */
export const utcMonth = (d: Date): string => d.toISOString().slice(0, 7);

/**
 * The wait a `Retry-After` header asks for, in seconds (delay-seconds or an HTTP date; never below zero, a date
 * already past is 0); undefined when it is missing, blank or unreadable. Callers round and default as they need.
 */
export function retryAfterSeconds(value: string | string[] | undefined, nowMs = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return undefined;
  const n = Number(v);
  if (Number.isFinite(n)) return Math.max(0, n);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - nowMs) / 1000);
}
