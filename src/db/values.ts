/**
 * The constant lists of the schema's enum-like columns: plain values, no drizzle, so areas' zod schemas read
 * them without importing the database (src/db/schema re-exports them).
 */

export const CONNECTION_STATUSES = ['active', 'expired', 'error', 'revoked'] as const;
export type ConnectionStatus = (typeof CONNECTION_STATUSES)[number];
export const PAGE_TYPES = ['entity', 'concept', 'summary', 'index', 'custom'] as const;
export type PageType = (typeof PAGE_TYPES)[number];
export const RELATIONSHIP_TYPES = [
  'related_to',
  'works_at',
  'employed_by',
  'founded',
  'co_founded',
  'attended',
  'part_of',
  'depends_on',
  'mentioned_in',
] as const;
export type RelationshipType = (typeof RELATIONSHIP_TYPES)[number];
export const SOURCE_TYPES = ['text', 'url', 'file', 'conversation'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];
export const SOURCE_STATUSES = ['pending', 'processing', 'compiled', 'failed'] as const;
export type SourceStatus = (typeof SOURCE_STATUSES)[number];
export const TASK_RUN_STATUSES = ['queued', 'running', 'retrying', 'succeeded', 'failed'] as const;
export type TaskRunStatus = (typeof TASK_RUN_STATUSES)[number];
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];
