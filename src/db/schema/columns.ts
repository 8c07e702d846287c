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
