import { randomBytes } from 'node:crypto';
import type { ServiceContext } from '../../context.ts';
import { sha256Hex } from '../../lib/ids.ts';
import * as repo from './repo.ts';
import type { ToolRun } from './schema.ts';

/**
 * A test run's result kept for the page the test form redirects to, in the database: behind a balancer that
 * page is often served by another instance than the one that ran (and billed) the test. The key travels in the
 * page's URL; only its SHA-256 is stored, and the run is sealed (a tool may print the secrets it was given).
 */

/** How long a test run's result can be shown after the run. */
export const TEST_RUN_TTL_MS = 10 * 60_000;

export interface KeptTestRun {
  run: ToolRun;
  /** The arguments as typed in the form. */
  args: string;
}

const sealedWith = (id: string) => `tool_test_runs:${id}`;

/** Keeps the run of one of the caller's tools; answers the key that shows it (22 URL-safe characters). */
export async function keepTestRun(ctx: ServiceContext, toolId: string, kept: KeptTestRun): Promise<string> {
  const key = randomBytes(16).toString('base64url');
  const id = sha256Hex(key);
  await repo.insertTestRun(ctx.db, {
    id,
    accountId: ctx.accountId,
    toolId,
    runEnc: ctx.deps.keyRing.encrypt(JSON.stringify(kept), sealedWith(id)),
    expiresAt: new Date(Date.now() + TEST_RUN_TTL_MS),
  });
  return key;
}

/** The run the key names, when it is the caller's, of this tool, and not expired; on any instance. */
export async function findTestRun(ctx: ServiceContext, toolId: string, key: string): Promise<KeptTestRun | undefined> {
  const id = sha256Hex(key);
  const sealed = await repo.findTestRun(ctx.db, ctx.accountId, toolId, id, new Date());
  return sealed === undefined
    ? undefined
    : (JSON.parse(ctx.deps.keyRing.decrypt(sealed, sealedWith(id))) as KeptTestRun);
}
