import { describe, expect, it } from 'vitest';
import { JOB_CATALOG } from '../composition.ts';
import { backoffMs, DEFAULT_RETRY, parseSchedule, retryPolicy, validateCatalog } from './definition.ts';

describe('job definitions', () => {
  it('backs off exponentially with up to 25% jitter, capped', () => {
    const policy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 30_000 };
    expect([1, 2, 3, 4].map((n) => backoffMs(policy, n, () => 0))).toEqual([1000, 2000, 4000, 8000]);
    expect([1, 2, 3, 4].map((n) => backoffMs(policy, n, () => 1))).toEqual([1250, 2500, 5000, 10_000]);
    expect(backoffMs(policy, 6, () => 0)).toBe(30_000);
    expect(backoffMs(policy, 20, () => 1)).toBe(30_000);
    expect(retryPolicy({})).toEqual(DEFAULT_RETRY);
    expect(retryPolicy({ retry: { maxAttempts: 2 } })).toEqual({ ...DEFAULT_RETRY, maxAttempts: 2 });
  });

  it('accepts 5-field cron only, and IANA zones', () => {
    expect(() => parseSchedule({ cron: '*/5 * * * * *' })).toThrow(
      'cron "*/5 * * * * *" must have 5 fields (minute hour day-of-month month day-of-week)',
    );
    expect(() => parseSchedule({ cron: '* * * *' })).toThrow('must have 5 fields');
    expect(() => parseSchedule({ cron: '61 * * * *' })).toThrow();
    expect(() => parseSchedule({ cron: '0 3 * * *', timezone: 'Mars/Olympus' })).toThrow(
      'timezone "Mars/Olympus" is not an IANA time zone',
    );
    expect(() => validateCatalog({ bad: { ...JOB_CATALOG['jobs.cleanup'], schedule: { cron: '* * *' } } })).toThrow(
      /^Job bad: cron "\* \* \*" must have 5 fields/,
    );
  });

  it('computes the next run in the schedule zone, across a DST change', () => {
    const every5 = parseSchedule({ cron: '*/5 * * * *' });
    expect(every5.nextRun(new Date('2026-11-22T19:02:31Z'))?.toISOString()).toBe('2026-11-22T19:05:00.000Z');
    expect(every5.nextRun(new Date('2026-11-22T19:05:00Z'))?.toISOString()).toBe('2026-11-22T19:10:00.000Z');
    const berlin = parseSchedule({ cron: '30 9 * * *', timezone: 'Europe/Berlin' });
    // 09:30 in Berlin is 08:30 UTC in winter (CET) and 07:30 UTC in summer (CEST); DST began 2026-03-29.
    expect(berlin.nextRun(new Date('2026-03-28T12:00:00Z'))?.toISOString()).toBe('2026-03-29T07:30:00.000Z');
    expect(berlin.nextRun(new Date('2026-03-27T12:00:00Z'))?.toISOString()).toBe('2026-03-28T08:30:00.000Z');
    // 02:30 does not exist in Berlin on 2026-03-29: a fixed-time job runs just after the gap (03:00 CEST).
    const gap = parseSchedule({ cron: '30 2 * * *', timezone: 'Europe/Berlin' });
    expect(gap.nextRun(new Date('2026-03-28T12:00:00Z'))?.toISOString()).toBe('2026-03-29T01:00:00.000Z');
  });

  it('the service catalog: recurring jobs every 5 minutes (connection refresh, conversation ingest, MCP task clean-up), every minute (holds, due tasks, orphaned chat turns), every 10 minutes (expired OAuth artifacts, sign-in windows, test runs) and hourly (job clean-up, activity purge) and daily (webhook deliveries), all valid', () => {
    expect(() => validateCatalog(JOB_CATALOG)).not.toThrow();
    expect(Object.fromEntries(Object.entries(JOB_CATALOG).map(([type, def]) => [type, def.schedule?.cron]))).toEqual({
      'activity.purge': '41 * * * *',
      'agents.fail-orphaned-runs': '* * * * *',
      'auth.sweep-sign-in-attempts': '*/10 * * * *',
      'connections.refresh-expiring': '*/5 * * * *',
      'credits.release-expired-holds': '* * * * *',
      'oauth.sweep-expired': '*/10 * * * *',
      'jobs.cleanup': '17 * * * *',
      'knowledge.ingest-conversations': '*/5 * * * *',
      'mcp.tasks-cleanup': '*/5 * * * *',
      'tasks.dispatch-due': '* * * * *',
      'tools.sweep-test-runs': '*/10 * * * *',
      'webhooks.cleanup': '41 3 * * *',
    });
  });
});
