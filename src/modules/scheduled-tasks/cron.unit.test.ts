import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../lib/errors.ts';
import { checkCron, checkTimezone, describeCron, nextRuns } from './cron.ts';

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe('task schedules across DST changes', () => {
  it('Paris, spring: 02:30 does not exist on 29 March 2026; that day runs at 03:00 CEST, just after the gap', () => {
    expect(iso(nextRuns('30 2 * * *', 'Europe/Paris', 3, new Date('2026-03-28T12:00:00Z')))).toEqual([
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
  });

  it('Paris, autumn: 02:30 happens twice on 25 October 2026; the task runs once, at the first', () => {
    expect(iso(nextRuns('30 2 * * *', 'Europe/Paris', 3, new Date('2026-10-24T12:00:00Z')))).toEqual([
      '2026-10-25T00:30:00.000Z', // 02:30 CEST; 02:30 CET (01:30Z) is not run again
      '2026-10-26T01:30:00.000Z', // 02:30 CET
      '2026-10-27T01:30:00.000Z',
    ]);
  });

  it('New York, spring: 02:30 does not exist on 8 March 2026; that day runs at 03:00 EDT', () => {
    expect(iso(nextRuns('30 2 * * *', 'America/New_York', 3, new Date('2026-03-07T12:00:00Z')))).toEqual([
      '2026-03-08T07:00:00.000Z', // 03:00 EDT
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
      '2026-03-10T06:30:00.000Z',
    ]);
  });

  it('New York, autumn: 01:30 happens twice on 1 November 2026; the task runs once, at the first', () => {
    expect(iso(nextRuns('30 1 * * *', 'America/New_York', 3, new Date('2026-10-31T12:00:00Z')))).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT; 01:30 EST (06:30Z) is not run again
      '2026-11-02T06:30:00.000Z', // 01:30 EST
      '2026-11-03T06:30:00.000Z',
    ]);
  });

  it('a weekly time stays at 09:00 local time across the change', () => {
    expect(iso(nextRuns('0 9 * * 1', 'Europe/Paris', 2, new Date('2026-03-20T12:00:00Z')))).toEqual([
      '2026-03-23T08:00:00.000Z', // 09:00 CET
      '2026-03-30T07:00:00.000Z', // 09:00 CEST
    ]);
  });
});

describe('schedule validation', () => {
  const fieldOf = (fn: () => unknown): { message: string; details: unknown } => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ValidationError);
      return { message: (err as ValidationError).message, details: (err as ValidationError).details };
    }
    throw new Error('expected a ValidationError');
  };

  it('names the bad field of an expression', () => {
    expect(fieldOf(() => checkCron('61 * * * *')).message).toBe('cronExpression: the minute field "61" is not valid');
    expect(fieldOf(() => checkCron('0 24 * * *')).message).toBe('cronExpression: the hour field "24" is not valid');
    expect(fieldOf(() => checkCron('0 9 32 * *')).message).toBe(
      'cronExpression: the day-of-month field "32" is not valid',
    );
    expect(fieldOf(() => checkCron('0 9 * 13 *')).message).toBe('cronExpression: the month field "13" is not valid');
    expect(fieldOf(() => checkCron('0 9 * * funday')).message).toBe(
      'cronExpression: the day-of-week field "funday" is not valid',
    );
    expect(fieldOf(() => checkCron('*/0 * * * *')).details).toEqual([
      { field: 'body.cronExpression', message: 'cronExpression: the minute field "*/0" is not valid' },
    ]);
  });

  it('refuses anything but 5 fields: 6 (seconds), 4, a nickname, nothing', () => {
    for (const [expr, n] of [
      ['0 0 9 * * 1', 6],
      ['0 9 * *', 4],
      ['@daily', 1],
      ['   ', 0],
    ] as const) {
      expect(fieldOf(() => checkCron(expr)).message).toBe(
        `cronExpression must have 5 fields (minute hour day-of-month month day-of-week); "${expr}" has ${n}`,
      );
    }
  });

  it('accepts the standard forms and normalizes spacing', () => {
    expect(checkCron(' 0  9 * * 1 ')).toBe('0 9 * * 1');
    for (const expr of ['*/15 9-17 * * 1-5', '0 0 1 * *', '0 9 * * MON', '0 9 * * 7', '5,35 * * JAN-MAR *']) {
      expect(checkCron(expr)).toBe(expr);
    }
  });

  it('refuses what is not an IANA zone name', () => {
    expect(checkTimezone('America/Argentina/Buenos_Aires')).toBe('America/Argentina/Buenos_Aires');
    expect(checkTimezone('UTC')).toBe('UTC');
    for (const zone of ['Mars/Olympus_Mons', '+01:00', 'Europe/Paris; DROP', '', '../etc/passwd']) {
      expect(fieldOf(() => checkTimezone(zone)).details).toEqual([
        { field: 'body.timezone', message: `"${zone}" is not an IANA time zone name (such as Europe/Paris)` },
      ]);
    }
  });

  it('says a schedule in words', () => {
    expect(describeCron('0 9 * * 1')).toBe('At 09:00, only on Monday');
    expect(describeCron('*/15 9-17 * * 1-5')).toBe('Every 15 minutes, between 09:00 and 17:59, Monday through Friday');
  });
});
