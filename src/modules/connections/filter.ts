import { CONNECTION_STATUSES, type ConnectionStatus } from '../../db/values.ts';
import { BadRequestError } from '../../lib/errors.ts';

/**
 * The `filter` of `GET /connections`: MongoDB-style JSON restricted to four fields and eight operators.
 * Parsing answers a typed list of conditions (ANDed) or a 400 saying exactly what is wrong; only that list
 * ever reaches SQL, where each field maps to a column and each operator to a query-builder function, with
 * every value bound as a parameter (repo.ts `connectionFilterSql`).
 */

export const FILTER_FIELDS = ['status', 'providerId', 'createdAt', 'updatedAt'] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];

export const FILTER_OPERATORS = ['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

type ScalarOp = '$eq' | '$ne';
type ListOp = '$in' | '$nin';
type RangeOp = '$gt' | '$gte' | '$lt' | '$lte';

export type FilterCondition =
  | { field: 'status'; op: ScalarOp; value: ConnectionStatus }
  | { field: 'status'; op: ListOp; value: ConnectionStatus[] }
  | { field: 'providerId'; op: ScalarOp; value: string }
  | { field: 'providerId'; op: ListOp; value: string[] }
  | { field: 'createdAt' | 'updatedAt'; op: ScalarOp | RangeOp; value: Date }
  | { field: 'createdAt' | 'updatedAt'; op: ListOp; value: Date[] };

/** Bounds that keep one filter cheap to parse and to run. */
export const FILTER_LIMITS = { maxLength: 4000, maxConditions: 20, maxListItems: 100, maxStringLength: 100 };

const OPS_OF: Record<FilterField, readonly FilterOperator[]> = {
  status: ['$eq', '$ne', '$in', '$nin'],
  providerId: ['$eq', '$ne', '$in', '$nin'],
  createdAt: FILTER_OPERATORS,
  updatedAt: FILTER_OPERATORS,
};

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/i;

const fail = (message: string): never => {
  throw new BadRequestError(`Invalid filter: ${message}`);
};

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const show = (v: unknown) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
};

function statusValue(v: unknown, at: string): ConnectionStatus {
  if (typeof v !== 'string' || !(CONNECTION_STATUSES as readonly string[]).includes(v)) {
    return fail(`${at} must be one of ${CONNECTION_STATUSES.join(', ')}, not ${show(v)}`);
  }
  return v as ConnectionStatus;
}

function stringValue(v: unknown, at: string): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > FILTER_LIMITS.maxStringLength) {
    return fail(`${at} must be a non-empty string of at most ${FILTER_LIMITS.maxStringLength} characters`);
  }
  return v;
}

function dateValue(v: unknown, at: string): Date {
  const ms = typeof v === 'string' && DATE.test(v) ? Date.parse(v) : Number.NaN;
  if (!Number.isFinite(ms)) {
    return fail(`${at} must be an ISO 8601 date or date-time such as 2025-01-31T00:00:00Z, not ${show(v)}`);
  }
  return new Date(ms);
}

function listOf<T>(v: unknown, at: string, item: (x: unknown, at: string) => T): T[] {
  if (!Array.isArray(v) || v.length > FILTER_LIMITS.maxListItems) {
    return fail(`${at} must be an array of at most ${FILTER_LIMITS.maxListItems} values`);
  }
  return v.map((x, i) => item(x, `${at}[${i}]`));
}

function condition(field: FilterField, op: FilterOperator, value: unknown): FilterCondition {
  const at = `${field}.${op}`;
  if (!OPS_OF[field].includes(op)) {
    return fail(`${field} supports ${OPS_OF[field].join(', ')}; ${op} compares only dates (createdAt, updatedAt)`);
  }
  const list = op === '$in' || op === '$nin';
  switch (field) {
    case 'status':
      return list
        ? { field, op, value: listOf(value, at, statusValue) }
        : { field, op: op as ScalarOp, value: statusValue(value, at) };
    case 'providerId':
      return list
        ? { field, op, value: listOf(value, at, stringValue) }
        : { field, op: op as ScalarOp, value: stringValue(value, at) };
    default:
      return list
        ? { field, op, value: listOf(value, at, dateValue) }
        : { field, op: op as ScalarOp | RangeOp, value: dateValue(value, at) };
  }
}

/** Parses the JSON of `filter` (already URL-decoded by the query parser). */
export function parseFilterJson(text: string): FilterCondition[] {
  if (text.length > FILTER_LIMITS.maxLength) fail(`at most ${FILTER_LIMITS.maxLength} characters`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return fail('filter must be URL-encoded JSON, e.g. filter=%7B%22status%22%3A%22active%22%7D ({"status":"active"})');
  }
  return parseFilter(raw);
}

/** Checks a parsed filter object; every rule it breaks is a 400 naming the field and the rule. */
export function parseFilter(raw: unknown): FilterCondition[] {
  if (!isPlainObject(raw)) return fail('filter must be a JSON object such as {"status":"active"}');
  const out: FilterCondition[] = [];
  for (const [key, spec] of Object.entries(raw)) {
    if (key.startsWith('$')) {
      fail(`${show(key)} is not supported; the fields of one filter object are combined with AND`);
    }
    if (!(FILTER_FIELDS as readonly string[]).includes(key)) {
      fail(`unknown field ${show(key)}; filterable fields are ${FILTER_FIELDS.join(', ')}`);
    }
    const field = key as FilterField;
    if (isPlainObject(spec)) {
      const entries = Object.entries(spec);
      if (entries.length === 0) fail(`${field} needs an operator (${OPS_OF[field].join(', ')})`);
      for (const [op, value] of entries) {
        if (!(FILTER_OPERATORS as readonly string[]).includes(op)) {
          fail(`unknown operator ${show(op)} on ${field}; use ${OPS_OF[field].join(', ')}`);
        }
        out.push(condition(field, op as FilterOperator, value));
      }
    } else if (Array.isArray(spec) || spec === null) {
      fail(`${field} takes a value or an operator object; for a list use {"$in": [...]}`);
    } else {
      out.push(condition(field, '$eq', spec));
    }
    if (out.length > FILTER_LIMITS.maxConditions) fail(`at most ${FILTER_LIMITS.maxConditions} conditions`);
  }
  return out;
}

/** A shorthand (`status=active`, `filter[status]=active,error`, or the parameter repeated). */
function statusShorthand(value: string | string[], name: string): FilterCondition {
  const values = (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((v) => v.trim());
  const statuses = values.map((v) => statusValue(v, name));
  return statuses.length === 1 && statuses[0]
    ? { field: 'status', op: '$eq', value: statuses[0] }
    : { field: 'status', op: '$in', value: statuses };
}

export interface FilterQuery {
  filter?: string | undefined;
  status?: string | string[] | undefined;
  'filter[status]'?: string | string[] | undefined;
}

/** Every condition of a list request: `filter`, and the two status shorthands, all ANDed. */
export function connectionFilterOf(q: FilterQuery): FilterCondition[] {
  const out = q.filter !== undefined ? parseFilterJson(q.filter) : [];
  if (q.status !== undefined) out.push(statusShorthand(q.status, 'status'));
  if (q['filter[status]'] !== undefined) out.push(statusShorthand(q['filter[status]'], 'filter[status]'));
  return out;
}
