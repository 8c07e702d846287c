import { effectiveTimeout, type SandboxRequest, type SandboxResult, tierOf } from '../../code-runner/index.ts';
import type { ServiceContext } from '../../context.ts';
import { holdCredits, settleCredits } from '../credits/index.ts';

/** The run, what it cost, and the balance after it (the answer's `X-Credits-Remaining`). */
export type BilledSandboxResult = SandboxResult & { creditsCharged: number; creditsRemaining: number };

/** Credits a second of sandbox time costs for a language (SPEC §8: 2 in QuickJS, 4 in the process sandbox). */
export function sandboxRate(ctx: Pick<ServiceContext, 'deps'>, language: SandboxRequest['language']): number {
  const rates = ctx.deps.config.sandbox;
  return tierOf(language) === 'process' ? rates.processCreditsPerSecond : rates.creditsPerSecond;
}

/** What a run of `durationMs` costs: per started second, at least one. */
export function sandboxCost(durationMs: number, rate: number): number {
  return Math.max(1, Math.ceil(durationMs / 1000)) * rate;
}

/**
 * Runs code in the app's sandbox for the account and charges it: refused with 402 at a zero balance before
 * anything runs; the worst case (the whole time limit) is held while it runs, then exactly one `sandbox` credit
 * transaction records the real cost, per started second (at least one) at the language's rate. Code that never
 * reached the sandbox (a syntax error, an unknown language) and runs refused for a full queue cost nothing.
 * The caller checks scopes: this serves tool tests, linked tools and the `execute-code` agent tool alike.
 */
export async function runBilled(
  ctx: ServiceContext,
  req: SandboxRequest,
  opts: { description?: string } = {},
): Promise<BilledSandboxResult> {
  const rate = sandboxRate(ctx, req.language);
  const timeoutMs = effectiveTimeout(req.timeoutMs);
  // A run may overrun its limit by the worker's kill grace before it is stopped: hold for that too.
  const hold = await holdCredits(ctx, sandboxCost(timeoutMs + 2000, rate));
  let outcome: { result: SandboxResult; ran: boolean };
  try {
    outcome = await ctx.deps.sandbox.runDetailed({ ...req, timeoutMs });
  } catch (err) {
    ctx.deps.background.track(
      'settle credits',
      settleCredits(ctx, hold, { type: 'sandbox', cost: 0, description: '' }).written,
    );
    throw err;
  }
  const { result, ran } = outcome;
  const cost = ran ? sandboxCost(result.durationMs, rate) : 0;
  const seconds = Math.max(1, Math.ceil(result.durationMs / 1000));
  // Written with the next batch, after the answer (as the gateway's charges): shutdown drains it, and a hold
  // the process dies with expires and is given back.
  const settled = settleCredits(ctx, hold, {
    type: 'sandbox',
    cost,
    description: `${opts.description ?? 'Code sandbox run'} (${req.language}, ${ran ? seconds : 0} s)`.slice(0, 500),
  });
  ctx.deps.background.track('settle credits', settled.written);
  return { ...result, creditsCharged: cost, creditsRemaining: settled.remaining };
}
