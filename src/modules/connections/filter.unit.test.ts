import { PgDialect } from 'drizzle-orm/pg-core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadRequestError } from '../../lib/errors.ts';
import {
  connectionFilterOf,
  FILTER_FIELDS,
  FILTER_OPERATORS,
  type FilterCondition,
  parseFilter,
  parseFilterJson,
} from './filter.ts';
import { connectionFilterSql } from './repo.ts';

const dialect = new PgDialect();
const toSql = (conditions: FilterCondition[]) => {
  const where = connectionFilterSql(conditions);
  return where ? dialect.sqlToQuery(where) : { sql: '', params: [] };
};

describe('connection filters', () => {
  const valid: Array<[string, unknown, string, unknown[]]> = [
    ['implicit equality', { status: 'active' }, '"connections"."status" = $1', ['active']],
    ['$eq on providerId', { providerId: { $eq: 'github' } }, '"connections"."provider_id" = $1', ['github']],
    ['$ne', { status: { $ne: 'revoked' } }, '"connections"."status" <> $1', ['revoked']],
    [
      '$in of statuses',
      { status: { $in: ['active', 'error'] } },
      '"connections"."status" in ($1, $2)',
      ['active', 'error'],
    ],
    ['$nin of providers', { providerId: { $nin: ['slack'] } }, '"connections"."provider_id" not in ($1)', ['slack']],
    ['empty $in matches nothing', { status: { $in: [] } }, 'false', []],
    [
      'a date range',
      { createdAt: { $gte: '2025-01-01', $lt: '2025-02-01T00:00:00Z' } },
      '("connections"."created_at" >= $1 and "connections"."created_at" < $2)',
      ['2025-01-01T00:00:00.000Z', '2025-02-01T00:00:00.000Z'],
    ],
    [
      'dates with offsets, $gt and $lte',
      { updatedAt: { $gt: '2025-01-01T10:00:00+02:00', $lte: '2025-03-01T00:00:00.5Z' } },
      '("connections"."updated_at" > $1 and "connections"."updated_at" <= $2)',
      ['2025-01-01T08:00:00.000Z', '2025-03-01T00:00:00.500Z'],
    ],
    [
      'several fields are ANDed',
      { status: 'active', providerId: { $in: ['github', 'slack'] } },
      '("connections"."status" = $1 and "connections"."provider_id" in ($2, $3))',
      ['active', 'github', 'slack'],
    ],
    ['an empty filter', {}, '', []],
  ];

  for (const [name, filter, sql, params] of valid) {
    it(`accepts ${name}`, () => {
      const q = toSql(parseFilterJson(JSON.stringify(filter)));
      expect(q.sql).toBe(sql);
      expect(q.params.map((p) => (p instanceof Date ? p.toISOString() : p))).toEqual(params);
    });
  }

  const invalid: Array<[string, string, string]> = [
    ['not JSON', '{status:active}', 'filter must be URL-encoded JSON'],
    ['not an object', '["active"]', 'filter must be a JSON object'],
    ['a string', '"active"', 'filter must be a JSON object'],
    [
      'an unknown field',
      '{"accountId":"acc_1"}',
      'unknown field "accountId"; filterable fields are status, providerId, createdAt, updatedAt',
    ],
    ['a token column', '{"accessTokenEnc":{"$ne":""}}', 'unknown field "accessTokenEnc"'],
    [
      '$or',
      '{"$or":[{"status":"active"}]}',
      '"$or" is not supported; the fields of one filter object are combined with AND',
    ],
    ['$where', '{"$where":"1=1"}', '"$where" is not supported'],
    [
      'an unknown operator',
      '{"status":{"$regex":".*"}}',
      'unknown operator "$regex" on status; use $eq, $ne, $in, $nin',
    ],
    [
      'a range on status',
      '{"status":{"$gt":"active"}}',
      'status supports $eq, $ne, $in, $nin; $gt compares only dates',
    ],
    [
      'an unknown status',
      '{"status":"sleeping"}',
      'status.$eq must be one of active, expired, error, revoked, not "sleeping"',
    ],
    [
      'a number status',
      '{"status":{"$in":["active",3]}}',
      'status.$in[1] must be one of active, expired, error, revoked, not 3',
    ],
    ['$in not a list', '{"providerId":{"$in":"github"}}', 'providerId.$in must be an array of at most 100 values'],
    [
      'a bare list',
      '{"status":["active"]}',
      'status takes a value or an operator object; for a list use {"$in": [...]}',
    ],
    ['null', '{"status":null}', 'status takes a value or an operator object'],
    ['an empty operator object', '{"status":{}}', 'status needs an operator ($eq, $ne, $in, $nin)'],
    ['a bad date', '{"createdAt":{"$gte":"yesterday"}}', 'createdAt.$gte must be an ISO 8601 date or date-time'],
    [
      'an impossible date',
      '{"createdAt":{"$gte":"2025-13-45"}}',
      'createdAt.$gte must be an ISO 8601 date or date-time',
    ],
    ['a number date', '{"updatedAt":{"$lt":1700000000}}', 'updatedAt.$lt must be an ISO 8601 date or date-time'],
    ['an empty provider id', '{"providerId":""}', 'providerId.$eq must be a non-empty string'],
    ['a nested object value', '{"providerId":{"$eq":{"$ne":1}}}', 'providerId.$eq must be a non-empty string'],
    ['SQL in a field name', '{"status = status OR 1=1 --":"x"}', 'unknown field'],
  ];

  for (const [name, text, message] of invalid) {
    it(`refuses ${name} with a 400 saying why`, () => {
      let caught: unknown;
      try {
        parseFilterJson(text);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(BadRequestError);
      expect((caught as BadRequestError).statusCode).toBe(400);
      expect((caught as BadRequestError).message).toContain(`Invalid filter: ${message}`);
    });
  }

  it('reads the status shorthands, alone and with a filter', () => {
    expect(connectionFilterOf({ status: 'active' })).toEqual([{ field: 'status', op: '$eq', value: 'active' }]);
    expect(connectionFilterOf({ 'filter[status]': 'active,error' })).toEqual([
      { field: 'status', op: '$in', value: ['active', 'error'] },
    ]);
    expect(connectionFilterOf({ status: ['active', 'expired'], filter: '{"providerId":"acme"}' })).toEqual([
      { field: 'providerId', op: '$eq', value: 'acme' },
      { field: 'status', op: '$in', value: ['active', 'expired'] },
    ]);
    expect(() => connectionFilterOf({ status: 'asleep' })).toThrow(
      'Invalid filter: status must be one of active, expired, error, revoked, not "asleep"',
    );
  });

  // ---- property: nothing reaches SQL unchecked ----

  const ALLOWED_COLUMN = /"connections"\."(status|provider_id|created_at|updated_at)"/g;
  /** What is left of a compiled filter once column references and placeholders are removed. */
  const GRAMMAR = /^(?:\s|\(|\)|,|\$\d+|=|<>|<=|>=|<|>|\band\b|\bnot\b|\bin\b|\btrue\b|\bfalse\b)*$/;

  const text = fc.oneof(
    fc.string(),
    fc.constantFrom("'; DROP TABLE connections; --", '" OR 1=1 --', 'active', 'github', '2025-01-01', '$1', 'null'),
  );
  const key = fc.oneof(
    fc.constantFrom(...FILTER_FIELDS, 'accountId', 'id', 'access_token_enc', '$or', '$and', '__proto__', 'constructor'),
    text,
  );
  const op = fc.oneof(fc.constantFrom(...FILTER_OPERATORS, '$regex', '$where', '$exists', '$or'), text);
  const scalar = fc.oneof(
    text,
    fc.constantFrom('active', 'expired', 'error', 'revoked', '2025-01-31T00:00:00Z', '2024-12-01'),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
  );
  const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 5 }), fc.jsonValue({ maxDepth: 3 }));
  const spec = fc.oneof(value, fc.dictionary(op, value, { maxKeys: 4 }));
  const filterObject = fc.oneof(fc.dictionary(key, spec, { maxKeys: 5 }), fc.jsonValue({ maxDepth: 4 }));

  function checkCompiled(conditions: FilterCondition[]): void {
    for (const c of conditions) {
      expect(FILTER_FIELDS).toContain(c.field);
      expect(FILTER_OPERATORS).toContain(c.op);
      const values = Array.isArray(c.value) ? c.value : [c.value];
      for (const v of values) {
        if (c.field === 'createdAt' || c.field === 'updatedAt')
          expect(Number.isFinite((v as Date).getTime())).toBe(true);
        else expect(typeof v).toBe('string');
        if (c.field === 'status') expect(['active', 'expired', 'error', 'revoked']).toContain(v);
      }
    }
    const q = toSql(conditions);
    expect(q.sql.replace(ALLOWED_COLUMN, '')).toMatch(GRAMMAR);
    const bound = conditions.reduce((n, c) => n + (Array.isArray(c.value) ? c.value.length : 1), 0);
    expect(q.params).toHaveLength(bound);
  }

  it('property: any JSON either is refused with a 400 or compiles to whitelisted columns with bound values', () => {
    fc.assert(
      fc.property(filterObject, (raw) => {
        let conditions: FilterCondition[];
        try {
          conditions = parseFilter(raw);
        } catch (err) {
          expect(err).toBeInstanceOf(BadRequestError);
          expect((err as BadRequestError).message).toMatch(/^Invalid filter: /);
          return;
        }
        checkCompiled(conditions);
      }),
      { numRuns: 3000 },
    );
  });

  it('property: any text as `filter` either is refused with a 400 or compiles safely', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 200 }),
          filterObject.map((o) => JSON.stringify(o) ?? ''),
        ),
        (t) => {
          try {
            checkCompiled(parseFilterJson(t));
          } catch (err) {
            if (!(err instanceof BadRequestError)) throw err;
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('property: valid filters always pass (the generator reaches the accepting side too)', () => {
    const field = fc.constantFrom(...FILTER_FIELDS);
    const validCondition = field.chain((f): fc.Arbitrary<readonly [string, unknown]> => {
      if (f === 'status') {
        const s = fc.constantFrom('active', 'expired', 'error', 'revoked');
        return fc
          .oneof(
            s,
            fc.record({ $ne: s }),
            fc.record({ $in: fc.array(s, { maxLength: 4 }) }),
            fc.record({ $nin: fc.array(s, { maxLength: 4 }) }),
          )
          .map((v) => [f, v] as const);
      }
      if (f === 'providerId') {
        const id = fc.string({ minLength: 1, maxLength: 100 });
        return fc.oneof(id, fc.record({ $in: fc.array(id, { maxLength: 5 }) })).map((v) => [f, v] as const);
      }
      const date = fc
        .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((d) => d.toISOString());
      return fc
        .record({ $gte: date, $lt: date }, { requiredKeys: [] })
        .filter((r) => Object.keys(r).length > 0)
        .map((v) => [f, v] as const);
    });
    fc.assert(
      fc.property(fc.array(validCondition, { maxLength: 4 }), (pairs) => {
        const filter = Object.fromEntries(pairs);
        checkCompiled(parseFilter(filter));
      }),
      { numRuns: 1000 },
    );
  });
});
