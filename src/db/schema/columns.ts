import { customType, timestamp } from 'drizzle-orm/pg-core';

/** Column kinds the schema files share. */

/** A timestamp with time zone, read as a Date. */
export const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** A full-text search document, written by the repos (never read back). */
export const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });

/** Bytes, always read back as a Buffer (PGlite answers a plain Uint8Array, node-postgres a Buffer). */
export const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (value) => (Buffer.isBuffer(value) ? value : Buffer.from(value)),
});

/**
 * The storage setting of every GIN index searches read. GIN gathers new entries in an unsorted pending list
 * (up to `gin_pending_list_limit`, 4 MB by default) that every search scans whole until vacuum merges it into the
 * index, and PGlite runs no autovacuum: a small list keeps searches fast for a little slower writes, and no list
 * (`fastupdate = off`) writes far slower (docs/benchmarks.md, "Knowledge search").
 */
export const GIN_SEARCHED = { gin_pending_list_limit: 128 };

/**
 * A token's restriction set kept with work done later in its name (`run_as` of tasks and channels), as written
 * by auth/delegation.ts. Rows written before the whole set was kept lack some fields; that file reads them.
 */
export interface StoredDelegation {
  scopes?: string[];
  providerPermissions?: Record<string, 'read' | 'read-write'>;
  defaultProviderPermission?: 'read' | 'read-write';
  /** null: every knowledge base of the account. */
  allowedKnowledgeBaseIds?: string[] | null;
}
