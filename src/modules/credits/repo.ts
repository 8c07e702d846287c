import type { Executor } from '../../db/client.ts';
import { creditTransactions } from '../../db/schema/index.ts';
import { newId } from '../../lib/ids.ts';

export type CreditTransactionType = 'grant' | 'llm' | 'mcp' | 'agent' | 'sandbox' | 'topup' | 'refund' | 'reserve';

export interface NewCreditTransaction {
  accountId: string;
  amount: number;
  balanceAfter: number;
  type: CreditTransactionType;
  description?: string;
  model?: string | null;
  promptTokens?: number | null;
  completionTokens?: number | null;
  requestId?: string | null;
  idempotencyKey?: string | null;
}

/** Records one balance change; callers write it in the same transaction as the balance update. */
export async function insertCreditTransaction(db: Executor, tx: NewCreditTransaction): Promise<string> {
  const id = newId('creditTransaction');
  await db.insert(creditTransactions).values({ id, description: '', ...tx });
  return id;
}
