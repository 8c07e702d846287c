import { eq, sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { call, createHarness, createUser, publicContext, type TestHarness } from '../../../test/harness.ts';
import { accounts, creditHolds, creditTransactions } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { newId } from '../../lib/ids.ts';
import { addCredits } from './service.ts';

// 1 credit per prompt token, 2 per completion token.
const MODELS = 'fake-model=1000000/2000000';

/**
 * Issue 46: the balance a client reads (`creditBalance`) is the balance it was told (`X-Credits-Remaining`), at
 * once, while leases are out, on either instance; it never shows a lease's unspent credits as spent.
 */
describe('the balance a client reads is the balance it was told', () => {
  let fake: FakeLlm;
  let h: TestHarness;
  let other: App;
  const bases: string[] = [];
  beforeAll(async () => {
    fake = await startFakeLlm();
    h = await createHarness({ LLM_BASE_URL: fake.url, LLM_MODELS: MODELS });
    other = await h.extraApp({});
    for (const app of [h.app, other]) {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const addr = app.server.address();
      bases.push(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/api/v1`);
    }
  });
  afterAll(async () => {
    await h.close();
    await fake.close();
  });

  const db = () => h.database.db;

  /** A client of one account on one instance: the three kinds of credit-consuming call, and the balance read. */
  const client = async (instance = 0) => {
    const u = await createUser(h.app);
    const token = await u.pat(['llm-all', 'agents-all', 'account']);
    const base = bases[instance] ?? '';
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown, status = 200) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
      const text = await res.text();
      expect(res.status, text).toBe(status);
      return { headers: res.headers, body: JSON.parse(text) as Record<string, unknown> };
    };
    const agent = (await post('/agents', { name: 'Balance', llm: 'fake-model', enabledBuiltInTools: [] }, 201)).body;
    const tool = await fetch(`${base}/tools`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        name: 'add_one',
        description: 'Adds one',
        code: 'return args.n + 1;',
        language: 'javascript',
        parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
        requiredSecrets: [],
      }),
    });
    expect(tool.status).toBe(201);
    const toolId = ((await tool.json()) as { id: string }).id;
    const openai = new OpenAI({ baseURL: base, apiKey: token, maxRetries: 0 });
    const figures = (headers: Headers) => ({
      consumed: Number(headers.get('x-credits-consumed') ?? Number.NaN),
      remaining: Number(headers.get('x-credits-remaining') ?? Number.NaN),
    });
    const kinds = {
      gateway: async () => {
        const { response } = await openai.chat.completions
          .create({ model: 'fake-model', messages: [{ role: 'user', content: 'q' }], max_tokens: 20 })
          .withResponse();
        return figures(response.headers);
      },
      agent: async () =>
        figures(
          (await post(`/agents/${agent.id}/chat/completions`, { messages: [{ role: 'user', content: 'hi' }] })).headers,
        ),
      tool: async () => figures((await post(`/tools/${toolId}/test`, { arguments: { n: 1 } })).headers),
    };
    const shown = async () => {
      const res = await fetch(`${base}/accounts/me`, { headers: auth });
      expect(res.status).toBe(200);
      return ((await res.json()) as { creditBalance: number }).creditBalance;
    };
    return { u, kinds, shown, id: u.account.id };
  };

  const ledger = async (id: string) => {
    const rows = await db().select().from(creditTransactions).where(eq(creditTransactions.accountId, id));
    return { rows: rows.length, sum: rows.reduce((a, r) => a + r.amount, 0) };
  };
  /** The ledger once `charges` charge rows (beyond the starting grant) are written, leases still out. */
  const ledgerWith = async (id: string, charges: number) => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const l = await ledger(id);
      if (l.rows >= charges + 1 || Date.now() > deadline) return l;
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const order = ['gateway', 'agent', 'tool'] as const;

  it('a token look-up that saw the balance exhausted is not the last word: credits back or added since are spent', async () => {
    // Tokens resolve from a cache whose balance is a hint (AUTH_CACHE_TTL_MS); nothing evicts it when a lease is
    // handed back or credits arrive through another instance.
    const cached = await h.extraApp({ AUTH_CACHE_TTL_MS: '60000' });
    const u = await createUser(h.app);
    const token = await u.pat(['llm-all']);
    const setStored = (creditBalance: number) =>
      db().update(accounts).set({ creditBalance }).where(eq(accounts.id, u.account.id));
    const ask = () =>
      call(cached, 'POST', '/api/v1/chat/completions', {
        token,
        body: { model: 'fake-model', messages: [{ role: 'user', content: 'q' }], max_tokens: 20 },
      });
    await setStored(0);
    const refused = await ask();
    expect(refused.statusCode).toBe(402);
    expect(refused.json().error.type).toBe('CreditsExhaustedError');
    await setStored(5000);
    const paid = await ask();
    expect(paid.statusCode, paid.body).toBe(200);
    const consumed = Number(paid.headers['x-credits-consumed']);
    expect(consumed).toBeGreaterThan(0);
    expect(Number(paid.headers['x-credits-remaining'])).toBe(5000 - consumed);
  });

  it('after each of 20 sequential calls, creditBalance read at once is the X-Credits-Remaining just told', async () => {
    const c = await client();
    let consumed = 0;
    for (let i = 0; i < 20; i++) {
      const kind = order[i % 3] ?? 'gateway';
      const told = await c.kinds[kind]();
      expect(told.consumed, kind).toBeGreaterThan(0);
      consumed += told.consumed;
      expect(told.remaining, kind).toBe(100_000 - consumed);
      expect(await c.shown(), `${kind}, call ${i + 1}`).toBe(told.remaining);
    }
    const l = await ledgerWith(c.id, 20);
    expect(l.sum).toBe(100_000 - consumed);
    expect(await c.shown()).toBe(l.sum);
  }, 60_000);

  it('after 20 parallel calls, creditBalance is the last X-Credits-Remaining told, and the ledger sum', async () => {
    const c = await client();
    // Each of the seven agent turns holds its worst case (17,300 credits) while it runs: overlapping, they can
    // hold more than the signup's 100,000, and refusing one then is right. Another 100,000 covers them all.
    const start = 200_000;
    await addCredits(publicContext(h.app), {
      accountId: c.id,
      amount: start - 100_000,
      idempotencyKey: newId('creditTransaction'),
    });
    // The upstream answers after different delays: the calls overlap, and leases hold their worst cases.
    fake.enqueue(...Array.from({ length: 20 }, (_, i) => ({ content: 'ok', delayMs: 30 + ((i * 7) % 40) })));
    const told = await Promise.all(Array.from({ length: 20 }, (_, i) => c.kinds[order[i % 3] ?? 'gateway']()));
    const shown = await c.shown();
    const consumed = told.reduce((a, t) => a + t.consumed, 0);
    // Each answer told the balance after its own charge and every one answered before it: the last told is the
    // lowest, and it is the balance after all of them.
    expect(Math.min(...told.map((t) => t.remaining))).toBe(start - consumed);
    expect(shown).toBe(start - consumed);
    for (const t of told) expect(t.remaining).toBeGreaterThanOrEqual(shown);
    const l = await ledgerWith(c.id, 21); // the top-up and 20 charges
    expect(l.sum).toBe(shown);
    expect(await c.shown()).toBe(shown);
  }, 60_000);

  it('another instance’s leases and a crashed instance’s lease do not lower what users see', async () => {
    const c = await client(1);
    let last = 0;
    for (let i = 0; i < 6; i++) last = (await c.kinds[order[i % 3] ?? 'gateway']()).remaining;
    // Written by the other instance (its leases still out): this instance shows the same balance.
    const l = await ledgerWith(c.id, 6);
    expect(l.sum).toBe(last);
    const first = await fetch(`${bases[0]}/accounts/me`, { headers: c.u.headers });
    expect(((await first.json()) as { creditBalance: number }).creditBalance).toBe(last);

    // An instance that died holding a lease of 5,000 credits (taken from the stored balance, never charged).
    await db().execute(sql`UPDATE accounts SET credit_balance = credit_balance - 5000 WHERE id = ${c.id}`);
    await db()
      .insert(creditHolds)
      .values({ id: newId('creditHold'), accountId: c.id, amount: 5000, expiresAt: new Date(Date.now() - 1000) });
    const stored = (await db().select().from(accounts).where(eq(accounts.id, c.id)))[0]?.creditBalance ?? 0;
    expect(stored).toBeLessThanOrEqual(last - 5000);
    const again = await fetch(`${bases[0]}/accounts/me`, { headers: c.u.headers });
    expect(((await again.json()) as { creditBalance: number }).creditBalance).toBe(last);
    // The next call sweeps the expired lease back; what it tells is the balance after its own cost.
    const next = await c.kinds.gateway();
    expect(next.remaining).toBe(last - next.consumed);
    expect(await c.shown()).toBe(next.remaining);
  }, 60_000);

  it('a top-up (the CLI’s `credits add`) records and prints the balance users see, leases counted', async () => {
    const c = await client();
    const told = (await c.kinds.gateway()).remaining;
    // Its charge written (a ledger row's balanceAfter follows the ledger's order of writing).
    expect((await ledgerWith(c.id, 1)).sum).toBe(told);
    // Another instance's live lease of 3,000 credits: out of the stored balance, not spent.
    await db().execute(sql`UPDATE accounts SET credit_balance = credit_balance - 3000 WHERE id = ${c.id}`);
    await db()
      .insert(creditHolds)
      .values({ id: newId('creditHold'), accountId: c.id, amount: 3000, expiresAt: new Date(Date.now() + 60_000) });
    const { transaction } = await addCredits(publicContext(h.app), {
      accountId: c.u.account.id,
      amount: 500,
      idempotencyKey: newId('creditTransaction'),
    });
    expect(transaction.balanceAfter).toBe(told + 500);
    expect(await c.shown()).toBe(told + 500);
  }, 60_000);
});
