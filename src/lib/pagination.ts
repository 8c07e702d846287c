import { z } from 'zod';

/**
 * The one list shape of the REST API: `{data, pagination: {page, limit, total, hasMore}}`. Each resource
 * passes its own allow-list of sort columns; anything else is a 422 naming the allowed values.
 */
export function listQuery<const S extends readonly [string, ...string[]]>(sortable: S, maxLimit = 100) {
  return z.object({
    page: z.coerce.number().int().min(1).default(1),
    limit: z.coerce.number().int().min(1).max(maxLimit).default(20),
    sortBy: z.enum(sortable).default(sortable[0]),
    sortOrder: z.enum(['asc', 'desc']).default('desc'),
  });
}

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
