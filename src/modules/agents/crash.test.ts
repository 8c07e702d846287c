import { afterAll, describe, expect, it } from 'vitest';
import { launchBrowser, runBrowser, type TestBrowser } from '../../../test/e2e/browser.ts';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { FAKE_MODELS } from '../../../test/harness.ts';
import { startTestServer, type TestServer } from '../../../test/server-process.ts';
import { readConversationEvents } from '../../../test/sse.ts';
import { INTERRUPTED_RUN_ERROR } from './runs.service.ts';
import { failedTurnMessages } from './test-support.ts';

const LEASE_MS = 1000;

/**
 * The service as its own process, killed with SIGKILL while an agent chat waits on a model that never answers,
 * then started again on the same database: the turn's lease runs out and the new process's start-up sweep marks
 * the turn failed: the messages list shows the marker, the conversation's event stream carries `run.failed`,
 * and the chat page shows the failure (in chromium).
 */
describe('an agent chat turn interrupted by a crash', () => {
  let llm: FakeLlm | undefined;
  let t: TestServer | undefined;
  let browser: TestBrowser | undefined;
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await llm?.close();
  });

  it('is marked failed after a restart, with run.failed on its events and the failure on the chat page', async () => {
    llm = await startFakeLlm();
    // A database of its own (startTestServer's): the sweep acts on every account's turns.
    t = await startTestServer({
      env: { LLM_BASE_URL: llm.url, LLM_MODELS: FAKE_MODELS, AGENT_RUN_LEASE_MS: String(LEASE_MS) },
    });
    const first = t.url;
    const email = `orphan-${Date.now()}@example.test`;
    const password = 'orphan-password';
    const signup = await fetch(`${first}/api/v1/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password, name: 'Orphan' }),
    });
    expect(signup.status).toBe(201);
    const { session_token: token } = (await signup.json()) as { session_token: string };
    const api = (base: string, path: string, init: RequestInit = {}) =>
      fetch(`${base}/api/v1${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      });
    const agent = (
      (await (await api(first, '/agents', { method: 'POST', body: '{"name":"Night owl"}' })).json()) as {
        id: string;
      }
    ).id;

    // The model never answers: the process is killed while it waits.
    llm.enqueue({ content: 'never delivered', delayMs: 10 * 60_000 });
    const streaming = new AbortController();
    const chat = await api(first, `/agents/${agent}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Are you there?' }], stream: true }),
      signal: streaming.signal,
    });
    expect(chat.status).toBe(200);
    const conversation = chat.headers.get('x-conversation-id') ?? '';
    expect(conversation).toMatch(/^conv_/);
    await expect.poll(() => llm?.requests.length, { timeout: 20_000, interval: 20 }).toBe(1);
    const messagesPath = `/agents/${agent}/conversations/${conversation}/messages`;
    const before = (await (await api(first, messagesPath)).json()) as { data: Array<Record<string, unknown>> };
    expect(before.data.map((m) => [m.role, m.content])).toEqual([['user', 'Are you there?']]);

    expect((await t.server.stop('SIGKILL')).signal).toBe('SIGKILL');
    streaming.abort();
    // Its lease runs out (no instance renews it any more); then an instance starts again on the database.
    await new Promise((r) => setTimeout(r, LEASE_MS + 250));
    const second = (await t.start()).url;

    let messages: Array<Record<string, unknown>> = [];
    await expect
      .poll(
        async () => {
          messages = ((await (await api(second, messagesPath)).json()) as { data: typeof messages }).data;
          return messages.length;
        },
        { timeout: 20_000, interval: 50 },
      )
      .toBe(2);
    const [asked, failed] = messages;
    expect(messages).toEqual(failedTurnMessages('Are you there?', INTERRUPTED_RUN_ERROR));

    // A subscriber to the conversation's events gets the failure (stored, so it is there for any subscriber).
    const events = await readConversationEvents(
      `${second}/api/v1/agents/${agent}/conversations/${conversation}/events`,
      token,
      (all) => all.some((e) => e.event === 'run.failed'),
    );
    expect(events.map((e) => e.event)).toEqual(['message.created', 'message.created', 'run.failed']);
    expect(events.map((e) => e.data)).toEqual([
      { message: asked, createdAt: expect.any(String) },
      { message: failed, createdAt: expect.any(String) },
      { error: INTERRUPTED_RUN_ERROR, messageId: failed?.id, createdAt: expect.any(String) },
    ]);
    // The model was asked once: nothing ran the turn again.
    expect(llm.requests).toHaveLength(1);

    if (!runBrowser) return;
    browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`${second}/account/agents/${agent}?c=${conversation}`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Night owl', level: 1 }).waitFor();
    // Signing in comes back to the conversation the link named.
    expect(new URL(page.url()).searchParams.get('c')).toBe(conversation);
    await page.locator('ol.chat li.failed').waitFor();
    expect(await page.locator('ol.chat li').allTextContents()).toEqual([
      'YouAre you there?',
      `AgentThe agent could not answer: ${INTERRUPTED_RUN_ERROR}`,
    ]);
  }, 180_000);
});
