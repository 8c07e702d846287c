import { serviceContextOf } from '../auth/guard.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import type { App } from '../http/types.ts';
import { getAccount } from '../modules/accounts/service.ts';
import { listAgents } from '../modules/agents/service.ts';
import { listPats } from '../modules/auth/service.ts';
import { listConnections } from '../modules/connections/service.ts';
import { listCreditTransactions } from '../modules/credits/service.ts';
import { setupNotices } from '../modules/system/setup.ts';
import { pageHelpers, send } from './common.ts';
import { accountPage, homePage } from './home-pages.ts';

/** `/` (what the service is, or on to the dashboard when signed in) and `/account`, the dashboard: what to do next, the balance and recent credit history. */
export async function homePageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { csrf, currentUser, signedIn } = pageHelpers(app, oauth);
  const page = { schema: { hide: true }, config: { auth: 'public' as const } };
  // Settings are read once at start: what is missing stays missing until a restart.
  const notices = setupNotices(app.deps.config);

  app.get('/', page, async (req, reply) => {
    if (await currentUser(req)) return reply.redirect('/account', 303);
    return send(reply, homePage(notices));
  });

  app.get('/account', page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const ctx = serviceContextOf(req, current.actor);
    const first = { page: 1, limit: 1, sortOrder: 'desc' as const };
    const [account, history, connections, tokens, agents] = await Promise.all([
      getAccount(ctx, current.actor.accountId),
      listCreditTransactions(ctx, { page: 1, limit: 10, sortBy: 'createdAt', sortOrder: 'desc', type: undefined }),
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
      accountPage({ user: current.user, csrf: csrf(req, reply), account, history: history.data, notices, steps }),
    );
  });
}
