import { z } from 'zod';
import { pageQuery, Timestamp } from '../../lib/pagination.ts';

/** SPEC §4 "Activity": what was done on the account's behalf. */

export const ActivityKind = z.enum(['tool-call', 'agent-run', 'connection']);
export const ActivityStatus = z.enum(['ok', 'error', 'refused', 'blocked']);

const ex = (example: string) => ({ examples: [example] });

export const Activity = z
  .object({
    id: z.string().meta(ex('act_8f3k2m9q1x')),
    kind: ActivityKind,
    via: z.string().describe('api, mcp, use-agent, agent-chat, task, channel or system').meta(ex('agent-chat')),
    actor: z.object({
      kind: z.string().describe('session, pat, oauth, cli or system').meta(ex('pat')),
      name: z.string().describe("The agent's, OAuth app's or PAT's name").meta(ex('Agent Helper')),
      tokenId: z.string().nullable().meta(ex('tok_4n7p2w8r')),
      clientId: z.string().nullable().meta(ex('app_5k2m8q')),
    }),
    agentId: z.string().nullable().meta(ex('agt_3h8d2k')),
    agentName: z.string().nullable().meta(ex('Helper')),
    connectionId: z.string().nullable().meta(ex('conn_7b2x9p')),
    providerId: z.string().nullable().meta(ex('github')),
    tool: z
      .string()
      .nullable()
      .describe('The tool, or the connection event (created, refreshed, expired, error, revoked)')
      .meta(ex('github_create_issue')),
    mode: z.enum(['read', 'write']).nullable(),
    status: ActivityStatus,
    durationMs: z.number().int().nullable(),
    credits: z.number().int(),
    arguments: z
      .string()
      .nullable()
      .describe('Redacted summary of the arguments (at most 500 characters)')
      .meta(ex('{"title":"Login fails on Safari"}')),
    result: z
      .string()
      .nullable()
      .describe('Redacted summary of the result (at most 500 characters)')
      .meta(ex('{"number":42,"title":"Login fails on Safari"}')),
    error: z.string().nullable().meta(ex('GitHub refused the request (422): Validation Failed')),
    createdAt: Timestamp,
  })
  .meta({ id: 'Activity' });
export type Activity = z.infer<typeof Activity>;

const id = z.string().trim().min(1).max(200);

export const ActivityQuery = pageQuery().extend({
  connectionId: id.optional().meta(ex('conn_7b2x9p')),
  tool: id.optional().meta(ex('github_create_issue')),
  agentId: id.optional().meta(ex('agt_3h8d2k')),
  status: ActivityStatus.optional(),
  kind: ActivityKind.optional(),
  from: z.iso.datetime({ offset: true }).optional().describe('Rows created at or after this time'),
  to: z.iso.datetime({ offset: true }).optional().describe('Rows created at or before this time'),
});
export type ActivityQuery = z.infer<typeof ActivityQuery>;

export const ActivityParams = z.object({ activityId: z.string().max(200).meta(ex('act_8f3k2m9q1x')) });
