import { z } from 'zod';
import { listQuery } from '../../lib/pagination.ts';
import { CREDIT_TRANSACTION_TYPES } from './repo.ts';

export const CreditTransaction = z
  .object({
    id: z.string(),
    amount: z.number().int().describe('credits; negative for a charge, positive for an addition'),
    balanceAfter: z.number().int(),
    type: z.enum(CREDIT_TRANSACTION_TYPES),
    description: z.string(),
    model: z.string().nullable(),
    promptTokens: z.number().int().nullable(),
    completionTokens: z.number().int().nullable(),
    requestId: z.string().nullable(),
    idempotencyKey: z.string().nullable(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'CreditTransaction' });
export type CreditTransaction = z.infer<typeof CreditTransaction>;

export const CreditTransactionQuery = listQuery(['createdAt']).extend({
  type: z
    .string()
    .optional()
    .describe(`comma-separated: ${CREDIT_TRANSACTION_TYPES.join(', ')}`)
    .transform((v, ctx) => {
      if (!v) return undefined;
      const types = v.split(',').map((t) => t.trim());
      const bad = types.filter((t) => !(CREDIT_TRANSACTION_TYPES as readonly string[]).includes(t));
      if (bad.length) {
        ctx.addIssue({
          code: 'custom',
          message: `unknown type ${bad.join(', ')}; use ${CREDIT_TRANSACTION_TYPES.join(', ')}`,
        });
        return z.NEVER;
      }
      return types as (typeof CREDIT_TRANSACTION_TYPES)[number][];
    }),
  from: z.iso.datetime({ offset: true }).optional().describe('inclusive lower bound on createdAt'),
  to: z.iso.datetime({ offset: true }).optional().describe('exclusive upper bound on createdAt'),
});
export type CreditTransactionQuery = z.infer<typeof CreditTransactionQuery>;
