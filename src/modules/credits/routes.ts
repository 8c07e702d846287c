import type { App } from '../../http/types.ts';
import { paginated } from '../../lib/pagination.ts';
import { CreditTransaction, CreditTransactionQuery } from './schema.ts';
import * as service from './service.ts';

export async function creditRoutes(app: App): Promise<void> {
  app.get(
    '/credit-transactions',
    {
      schema: {
        tags: ['Credits'],
        summary: 'History of credit charges and additions, newest first',
        querystring: CreditTransactionQuery,
        response: { 200: paginated(CreditTransaction) },
      },
      config: { scopes: ['account'] },
    },
    (req) => service.listCreditTransactions(req.ctx, req.query),
  );
}
