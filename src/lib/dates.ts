/** The UTC calendar day of `d` (`2026-11-24`): the key of daily counters. */
export const utcDay = (d: Date): string => d.toISOString().slice(0, 10);

/** The UTC calendar month of `d` (`2026-11`): the key of monthly spend. */
export const utcMonth = (d: Date): string => d.toISOString().slice(0, 7);
