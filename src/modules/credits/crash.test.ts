import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { startTestServer, type TestServer } from '../../../test/server-process.ts';
import { accounts, creditHolds, creditTransactions } from '../../db/schema/index.ts';
import { LEASE_TTL_MS } from './lease.ts';
import { releaseExpiredHolds } from './repo.ts';

/**
 * The service as its own process, killed with SIGKILL while it holds leases and requests are in flight: the
 * credits it had leased come back once the leases expire, and the balance equals the ledger.
 */
describe('credit leases across a crash', () => {
  let fake: FakeLlm | undefined;
  let t: TestServer | undefined;
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('SIGKILL with leases out loses no credits: expired leases go back and the balance equals the ledger', async () => {
    fake = await startFakeLlm();
    t = await startTestServer({
      env: { LLM_BASE_URL: fake.url, LLM_MODELS: 'fake-model=1000000/2000000', JOBS_ENABLED: 'false' },
    });
    const base = t.url;
    const signup = await fetch(`${base}/api/v1/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `crash-${Date.now()}@example.test`, password: 'crash-password', name: 'Crash' }),
    });
    const { session_token: session } = (await signup.json()) as { session_token: string };
    const patRes = await fetch(`${base}/api/v1/auth/pat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${session}` },
      body: JSON.stringify({ name: 'crash', scopes: ['llm-all'] }),
    });
    const pat = ((await patRes.json()) as { personal_access_token: string }).personal_access_token;
    const complete = () =>
      fetch(`${base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${pat}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'q' }], max_tokens: 20 }),
      });

    // A burst answered (the lease grows with the rate), then requests the upstream holds: leases stay out.
    const answered = await Promise.all(Array.from({ length: 40 }, complete));
    expect(answered.map((r) => r.status)).toEqual(answered.map(() => 200));
    const stuck = fake.requests.length;
    fake.enqueue(...Array.from({ length: 10 }, () => ({ content: 'late', delayMs: 60_000 })));
    const inFlight = Array.from({ length: 10 }, () => complete().catch(() => undefined));
    const deadline = Date.now() + 20_000;
    while (fake.requests.length < stuck + 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(fake.requests.length).toBe(stuck + 10);

    const ended = await t.server.stop('SIGKILL');
    expect(ended.signal).toBe('SIGKILL');
    await Promise.all(inFlight);

    const db = (await t.testDb.open()).db;
    const [account] = await db.select().from(accounts);
    if (!account) throw new Error('no account');
    const leases = await db.select().from(creditHolds).where(eq(creditHolds.accountId, account.id));
    const ledger = async () =>
      (await db.select().from(creditTransactions).where(eq(creditTransactions.accountId, account.id))).reduce(
        (a, r) => a + r.amount,
        0,
      );
    const balance = async () =>
      (await db.select().from(accounts).where(eq(accounts.id, account.id)))[0]?.creditBalance ?? Number.NaN;
    // Leases were out when it died, holding the ten requests' worst cases at least.
    expect(leases.length).toBeGreaterThan(0);
    const leased = leases.reduce((a, r) => a + r.amount, 0);
    expect(leased).toBeGreaterThan(0);
    expect((await balance()) + leased).toBe(await ledger());

    // Nothing is given back before the leases expire; after, the sweep (the job's statement) returns them.
    expect(await releaseExpiredHolds(db, new Date())).toBe(0);
    expect(await releaseExpiredHolds(db, new Date(Date.now() + LEASE_TTL_MS + 1000))).toBe(leases.length);
    expect(await db.select().from(creditHolds).where(eq(creditHolds.accountId, account.id))).toEqual([]);
    expect(await balance()).toBe(await ledger());
    // At most the answered requests were charged (a charge not yet written when it died is lost, never credits).
    expect(await balance()).toBeGreaterThanOrEqual(100000 - 40 * 9);
  }, 120_000);
});
