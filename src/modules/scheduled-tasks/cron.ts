import { Cron } from 'croner';
import cronstrue from 'cronstrue';
import { ValidationError } from '../../lib/errors.ts';

/**
 * Task schedules: the standard 5-field cron form read in an IANA zone. Croner computes occurrences across DST
 * changes: a fixed time the spring change skips (`30 2 * * *` in Paris) runs at the first instant after the
 * gap, and a time the autumn change repeats runs once, at its first occurrence.
 */

const FIELDS = ['minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;

/** The 422 for a bad `field` of the body, naming it and what is wrong. */
function invalid(field: string, message: string): ValidationError {
  return new ValidationError(message, [{ field: `body.${field}`, message }]);
}

/** `timezone` as given when the runtime knows it as an IANA zone; otherwise 422. */
export function checkTimezone(timezone: string): string {
  // `Intl` also takes offsets such as "+01:00", which are not zone names and follow no DST rules.
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(timezone)) {
    throw invalid('timezone', `"${timezone}" is not an IANA time zone name (such as Europe/Paris)`);
  }
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw invalid('timezone', `"${timezone}" is not an IANA time zone name (such as Europe/Paris)`);
  }
  return timezone;
}

function parse(expression: string, timezone: string): Cron {
  return new Cron(expression, { mode: '5-part', timezone, paused: true });
}

/**
 * The expression normalized to single spaces when it is a valid 5-field cron; otherwise 422 naming the field
 * that is wrong (each field is tried alone with the others as `*`).
 */
export function checkCron(expression: string): string {
  const fields = expression.trim().split(/\s+/).filter(Boolean);
  if (fields.length !== 5) {
    throw invalid(
      'cronExpression',
      `cronExpression must have 5 fields (minute hour day-of-month month day-of-week); "${expression}" has ${fields.length}`,
    );
  }
  FIELDS.forEach((name, i) => {
    const alone = FIELDS.map((_, j) => (j === i ? fields[i] : '*')).join(' ');
    try {
      parse(alone, 'UTC');
    } catch {
      throw invalid('cronExpression', `cronExpression: the ${name} field "${fields[i]}" is not valid`);
    }
  });
  const normalized = fields.join(' ');
  try {
    parse(normalized, 'UTC');
  } catch (err) {
    throw invalid('cronExpression', `cronExpression "${normalized}" is not valid: ${(err as Error).message}`);
  }
  return normalized;
}

/** The first occurrence strictly after `after`, or null when the expression never fires again. */
export function nextRun(expression: string, timezone: string, after: Date): Date | null {
  return parse(expression, timezone).nextRun(after);
}

/** The next `n` occurrences after `after`. */
export function nextRuns(expression: string, timezone: string, n: number, after: Date): Date[] {
  return parse(expression, timezone).nextRuns(n, after);
}

/** The schedule in English words ("At 09:00, only on Monday"). */
export function describeCron(expression: string): string {
  try {
    return cronstrue.toString(expression, { use24HourTimeFormat: true, verbose: false });
  } catch {
    return expression;
  }
}
