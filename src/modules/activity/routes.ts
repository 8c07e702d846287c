import type { App } from '../../http/types.ts';
import { paginated } from '../../lib/pagination.ts';
import { Activity, ActivityParams, ActivityQuery } from './schema.ts';
import * as service from './service.ts';

/** SPEC §4 "Activity": the log of what was done on the account's behalf. */
export async function activityRoutes(app: App): Promise<void> {
  const tags = ['Activity'];
  const config = { scopes: ['account' as const] };
  app.get(
    '/activity',
    {
      schema: {
        tags,
        summary: 'List the activity log',
        description:
          'Tool calls, agent runs and connection events, newest first; filter by `connectionId`, `tool`, `agentId`, `status`, `kind` and a `from`/`to` time range. Arguments and results are redacted summaries.',
        querystring: ActivityQuery,
        response: { 200: paginated(Activity) },
      },
      config,
    },
    (req) => service.listActivity(req.ctx, req.query),
  );
  app.get(
    '/activity/:activityId',
    {
      schema: {
        tags,
        summary: 'Get one activity row',
        description: "404 for an id that is not the account's.",
        params: ActivityParams,
        response: { 200: Activity },
      },
      config,
    },
    (req) => service.getActivity(req.ctx, req.params.activityId),
  );
}
