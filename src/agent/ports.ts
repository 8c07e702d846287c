import type { ServiceContext } from '../context.ts';
import type { Executor } from '../db/client.ts';
import type { ActivityEntry } from '../lib/activity.ts';
import type { CancelSignal } from '../lib/cancel.ts';
import type { Billing, ChatCompletion, ChatRequest, Credits } from '../llm-upstreams/types.ts';

/**
 * What the agent runtime calls beyond itself, given by the composition root (src/composition.ts): the billed
 * model call of modules/llm and the activity log of modules/activity. The runtime imports no area.
 */
export interface AgentPorts {
  /** One model call, its credits held and settled on the account (`runCompletion`). */
  complete(
    ctx: ServiceContext,
    request: ChatRequest,
    opts: { signal: CancelSignal; billing: Billing; onDelta?: ((text: string) => void | Promise<void>) | undefined },
  ): Promise<{ completion: ChatCompletion; credits: Credits }>;
  /** One row of the account's activity log (`recordActivity`): written in the background. */
  recordActivity(ctx: ServiceContext, entry: ActivityEntry): Promise<boolean>;
}

/**
 * What another area does when an agent is deleted (areas above agents: channels, scheduled tasks), listed by the
 * composition root in `deps.agentDeletion` (modules/agents `deleteAgent` runs them).
 */
export interface AgentDeletionHook {
  /** Before the agent's rows go, outside the transaction (a failure here is the hook's to log). */
  before?(ctx: ServiceContext, agentId: string): Promise<void>;
  /** In the deletion's transaction: it commits or fails with the deletion. */
  within?(tx: Executor, ctx: ServiceContext, agentId: string): Promise<void>;
}
