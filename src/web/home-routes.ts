import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { App } from '../http/types.ts';
import { getAccount } from '../modules/accounts/index.ts';
import { listAgents } from '../modules/agents/index.ts';
import { listPats } from '../modules/auth/index.ts';
import { listConnections } from '../modules/connections/index.ts';
import { CREDIT_TRANSACTION_TYPES, creditUsage, listCreditTransactions } from '../modules/credits/index.ts';
import { setupNotices } from '../modules/system/index.ts';
import { formIssues, send } from './common.ts';
import { creditsPage, type HistoryFilter } from './credits-pages.ts';
import { accountPage, homePage } from './home-pages.ts';
import { pageRouter, text } from './page-route.ts';

const USAGE_DAYS = 30;
const HISTORY_PAGE_SIZE = 25;
const DAY_MS = 86_400_000;

// Years the database and the next-day bound both take (PostgreSQL has no year 0, ISO strings no year 10000).
const day = z.union([
  z.literal(''),
  z.iso.date().refine((d) => d >= '1970-01-01' && d <= '9998-12-31', 'must be a day between 1970 and 9998'),
]);
/** The history page's query: every field may be empty (the form sends them all). */
const HistoryQuery = z.object({
  kind: z.union([z.literal(''), z.enum(CREDIT_TRANSACTION_TYPES)]),
  from: day,
  to: day,
  page: z.union([z.literal(''), z.coerce.number().int().min(1).max(100_000)]),
});

/** The history form's query as sent (one text value a field). */
const FormQuery = z.object({ kind: text, from: text, to: text, page: text });

/** `/` (what the service is, or on to the dashboard when signed in) and `/account`, the dashboard: what to do next, the balance and recent credit history. */
export async function homePageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);
  // Settings are read once at start: what is missing stays missing until a restart.
  const notices = setupNotices(app.deps.config);

  pages.publicGet('/', {}, async ({ req, reply }) => {
    if (await pages.helpers.currentUser(req)) return reply.redirect('/account', 303);
    return send(reply, homePage(notices));
  });

  pages.get('/account', {}, async ({ reply, current, ctx, csrf }) => {
    const first = { page: 1, limit: 1, sortOrder: 'desc' as const };
    const [account, history, usage, connections, tokens, agents] = await Promise.all([
      getAccount(ctx, current.actor.accountId),
      listCreditTransactions(ctx, { page: 1, limit: 10, sortBy: 'createdAt', sortOrder: 'desc', type: undefined }),
      creditUsage(ctx, USAGE_DAYS),
      listConnections(ctx, { ...first, sortBy: 'createdAt' }),
      listPats(ctx, first),
      listAgents(ctx, { ...first, sortBy: 'createdAt' }),
    ]);
    const steps = {
      connected: connections.pagination.total > 0,
      tokenMade: tokens.pagination.total > 0,
      agentMade: agents.pagination.total > 0,
    };
    return send(
      reply,
      accountPage({
        user: current.user,
        csrf: csrf(),
        account,
        history: history.data,
        usage,
        notices,
        steps,
      }),
    );
  });
  /** The credits page: the usage chart and the whole history, filtered by kind and UTC days, a page at a time. */
  pages.get('/account/credits', { query: FormQuery }, async ({ reply, current, ctx, csrf, query }) => {
    const parsed = HistoryQuery.safeParse(query);
    const q = parsed.success ? parsed.data : { kind: '' as const, from: '', to: '', page: '' as const };
    const filter: HistoryFilter = { kind: q.kind, from: q.from, to: q.to };
    const [account, usage, history] = await Promise.all([
      getAccount(ctx, current.actor.accountId),
      creditUsage(ctx, USAGE_DAYS),
      listCreditTransactions(ctx, {
        page: q.page || 1,
        limit: HISTORY_PAGE_SIZE,
        sortBy: 'createdAt',
        sortOrder: 'desc',
        type: q.kind ? [q.kind] : undefined,
        from: q.from ? `${q.from}T00:00:00.000Z` : undefined,
        // The "to" day is included: the bound is the start of the next day.
        to: q.to ? new Date(Date.parse(`${q.to}T00:00:00.000Z`) + DAY_MS).toISOString() : undefined,
      }),
    ]);
    const error = parsed.success ? undefined : `The filter was not applied: ${formIssues(parsed.error)}`;
    return send(
      reply,
      creditsPage({
        user: current.user,
        csrf: csrf(),
        balance: account.creditBalance,
        usage,
        filter: parsed.success ? filter : { kind: '', from: '', to: '' },
        history,
        error,
      }),
      parsed.success ? 200 : 422,
    );
  });
}
