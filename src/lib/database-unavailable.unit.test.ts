import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './errors.ts';

function coded(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('isDatabaseUnavailable', () => {
  it('knows pg connection faults, bare or under drizzle', () => {
    const refused = coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED');
    expect(isDatabaseUnavailable(refused)).toBe(true); // pool.connect in a transaction
    const query = Object.assign(new Error('Failed query: select 1'), { query: 'select 1', params: [], cause: refused });
    expect(isDatabaseUnavailable(query)).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect'))).toBe(true);
    for (const code of ['57P01', '57P03', '53300'])
      expect(isDatabaseUnavailable(Object.assign(new Error('x'), { query: 'q', cause: coded('x', code) }))).toBe(true);
    const notAccepting = Object.assign(coded('database "x" is not currently accepting connections', '55000'), {
      severity: 'FATAL',
    });
    expect(isDatabaseUnavailable(notAccepting)).toBe(true);
  });

  it('does not take an upstream fetch failure or a query error for an outage', () => {
    const fetchFailed = new TypeError('fetch failed', {
      cause: coded('connect ECONNREFUSED 10.0.0.1:443', 'ECONNREFUSED'),
    });
    expect(isDatabaseUnavailable(fetchFailed)).toBe(false);
    const unique = Object.assign(new Error('Failed query'), {
      query: 'insert',
      cause: coded('duplicate key', '23505'),
    });
    expect(isDatabaseUnavailable(unique)).toBe(false);
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
  });
});
