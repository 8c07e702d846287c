/** What a credit_transactions row records (its `type`). */
export const CREDIT_TRANSACTION_TYPES = [
  'grant',
  'llm',
  'mcp',
  'agent',
  'task',
  'sandbox',
  'knowledge',
  'topup',
  'refund',
] as const;
export type CreditTransactionType = (typeof CREDIT_TRANSACTION_TYPES)[number];

/**
 * What each ledger row was, in words a person reads on the account page. The stored `type` names the kind: a
 * scheduled task run is `task`, not `agent` (rows written before that kind existed say `agent`).
 */
export const CREDIT_KIND_LABELS: Record<CreditTransactionType, string> = {
  llm: 'LLM gateway',
  agent: 'Agent chat',
  task: 'Scheduled task run',
  mcp: 'MCP use-agent',
  sandbox: 'Sandbox and custom tools',
  knowledge: 'Knowledge compilation',
  grant: 'Credit grant',
  topup: 'Top-up',
  refund: 'Refund',
};

/** The kinds that spend credits, in the order the usage chart stacks them. */
export const USAGE_KINDS = ['llm', 'agent', 'mcp', 'task', 'sandbox', 'knowledge'] as const;
export type UsageKind = (typeof USAGE_KINDS)[number];

/** Usage of one UTC day: the credits spent per kind (0 where nothing was spent). */
export interface UsageDay {
  /** YYYY-MM-DD, UTC. */
  day: string;
  credits: Record<UsageKind, number>;
  total: number;
}
