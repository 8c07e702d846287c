import { z } from 'zod';

/**
 * The one list shape of the REST API: `{data, pagination: {page, limit, total, hasMore}}`. Each resource
 * passes its own allow-list of sort columns; anything else is a 422 naming the allowed values.
 */
export function listQuery<const S extends readonly [string, ...string[]]>(sortable: S, maxLimit = 100) {
  return pageQuery(maxLimit).extend({
    sortBy: z.enum(sortable).default(sortable[0]),
    sortOrder: z.enum(['asc', 'desc']).default('desc'),
  });
}

/** `page` and `limit` alone, for lists in a fixed order (messages, runs, memories). */
export function pageQuery(maxLimit = 100) {
  return z.object({
    page: z.coerce.number().int().min(1).default(1),
    limit: z.coerce.number().int().min(1).max(maxLimit).default(20),
  });
}

/** Every timestamp of the API: an ISO 8601 string in UTC. */
export const Timestamp = z.iso.datetime().meta({ examples: ['2026-11-24T09:30:00.000Z'] });

export interface ListParams<S extends string = string> {
  page: number;
  limit: number;
  sortBy: S;
  sortOrder: 'asc' | 'desc';
}

export const Pagination = z.object({
  page: z.number().int(),
  limit: z.number().int(),
  total: z.number().int(),
  hasMore: z.boolean(),
});

export function paginated<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), pagination: Pagination });
}

export interface Page<T> {
  data: T[];
  pagination: z.infer<typeof Pagination>;
}

export function toPage<T>(data: T[], total: number, p: { page: number; limit: number }): Page<T> {
  return { data, pagination: { page: p.page, limit: p.limit, total, hasMore: p.page * p.limit < total } };
}

export function offsetOf(p: { page: number; limit: number }): number {
  return (p.page - 1) * p.limit;
}
