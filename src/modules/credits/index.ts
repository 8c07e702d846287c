/** The credits area's front door: what other areas, transports and the composition root use from it. */
export { creditJobs } from './jobs.ts';
export type { CreditTransactionType, UsageDay, UsageKind } from './kinds.ts';
export { CREDIT_KIND_LABELS, CREDIT_TRANSACTION_TYPES, USAGE_KINDS } from './kinds.ts';
export { creditRoutes } from './routes.ts';
export type { CreditTransaction } from './schema.ts';
export type { CreditHold } from './service.ts';
export {
  addCredits,
  availableCredits,
  balanceAfter,
  closeCredits,
  createCreditBank,
  creditBalance,
  creditStats,
  creditUsage,
  holdCredits,
  leasedCredits,
  listCreditTransactions,
  recordWelcomeCredits,
  recoverCharges,
  settleCredits,
} from './service.ts';
