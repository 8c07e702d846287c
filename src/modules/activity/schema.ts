import { z } from 'zod';
import { pageQuery, Timestamp } from '../../lib/pagination.ts';

/** SPEC §4 "Activity": what was done on the account's behalf. */

export const ActivityKind = z.enum(['tool-call', 'agent-run', 'connection']);
export const ActivityStatus = z.enum(['ok', 'error', 'refused', 'blocked']);

export const Activity = z
  .object({
    id: z.string(),
    kind: ActivityKind,
    via: z.string().describe('api, mcp, use-agent, agent-chat, task, channel or system'),
    actor: z.object({
      kind: z.string().describe('session, pat, oauth, cli or system'),
      name: z.string().describe("The agent's, OAuth app's or PAT's name"),
      tokenId: z.string().nullable(),
      clientId: z.string().nullable(),
    }),
    agentId: z.string().nullable(),
    agentName: z.string().nullable(),
    connectionId: z.string().nullable(),
    providerId: z.string().nullable(),
    tool: z
      .string()
      .nullable()
      .describe('The tool, or the connection event (created, refreshed, expired, error, revoked)'),
    mode: z.enum(['read', 'write']).nullable(),
    status: ActivityStatus,
    durationMs: z.number().int().nullable(),
    credits: z.number().int(),
    arguments: z.string().nullable().describe('Redacted summary of the arguments (at most 500 characters)'),
    result: z.string().nullable().describe('Redacted summary of the result (at most 500 characters)'),
    error: z.string().nullable(),
    createdAt: Timestamp,
  })
  .meta({ id: 'Activity' });
export type Activity = z.infer<typeof Activity>;

const id = z.string().trim().min(1).max(200);

export const ActivityQuery = pageQuery().extend({
  connectionId: id.optional(),
  tool: id.optional(),
  agentId: id.optional(),
  status: ActivityStatus.optional(),
  kind: ActivityKind.optional(),
  from: z.iso.datetime({ offset: true }).optional().describe('Rows created at or after this time'),
  to: z.iso.datetime({ offset: true }).optional().describe('Rows created at or before this time'),
});
export type ActivityQuery = z.infer<typeof ActivityQuery>;

export const ActivityParams = z.object({ activityId: z.string().max(200) });
