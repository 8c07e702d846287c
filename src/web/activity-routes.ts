import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { App } from '../http/types.ts';
import { listActivity } from '../modules/activity/index.ts';
import { type ActivityFilter, activityPage, EMPTY_ACTIVITY_FILTER } from './activity-pages.ts';
import { formIssues, send } from './common.ts';
import { text as field, pageRouter } from './page-route.ts';

const PAGE_SIZE = 25;
const DAY_MS = 86_400_000;

const day = z.union([
  z.literal(''),
  z.iso.date().refine((d) => d >= '1970-01-01' && d <= '9998-12-31', 'must be a day between 1970 and 9998'),
]);
const text = z.string().trim().max(200);
/** The page's query: every field may be empty (the form sends them all). */
const PageQuery = z.object({
  connectionId: text,
  agentId: text,
  tool: text,
  status: z.union([z.literal(''), z.enum(['ok', 'error', 'refused', 'blocked'])]),
  from: day,
  to: day,
  page: z.union([z.literal(''), z.coerce.number().int().min(1).max(100_000)]),
});

/** The page's query as the form sends it (one text value a field). */
const FormQuery = z.object({
  connectionId: field,
  agentId: field,
  tool: field,
  status: field,
  from: field,
  to: field,
  page: field,
});

/** `/account/activity`: the activity log, pre-filtered by a connection's or an agent's page links. */
export async function activityPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);
  pages.get('/account/activity', { query: FormQuery }, async ({ reply, current, ctx, csrf, query }) => {
    const parsed = PageQuery.safeParse(query);
    const q = parsed.success ? parsed.data : { ...EMPTY_ACTIVITY_FILTER, status: '' as const, page: '' as const };
    const filter: ActivityFilter = {
      connectionId: q.connectionId,
      agentId: q.agentId,
      tool: q.tool,
      status: q.status,
      from: q.from,
      to: q.to,
    };
    const activity = await listActivity(ctx, {
      page: q.page || 1,
      limit: PAGE_SIZE,
      connectionId: q.connectionId || undefined,
      agentId: q.agentId || undefined,
      tool: q.tool || undefined,
      status: q.status || undefined,
      from: q.from ? `${q.from}T00:00:00.000Z` : undefined,
      // The "to" day is included: the bound is the end of that day.
      to: q.to ? new Date(Date.parse(`${q.to}T00:00:00.000Z`) + DAY_MS - 1).toISOString() : undefined,
    });
    const error = parsed.success ? undefined : `The filter was not applied: ${formIssues(parsed.error)}`;
    return send(
      reply,
      activityPage({
        user: current.user,
        csrf: csrf(),
        filter,
        activity,
        retentionDays: app.deps.config.jobs.activityRetentionDays,
        error,
      }),
      parsed.success ? 200 : 422,
    );
  });
}
