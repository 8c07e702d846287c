import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import {
  type FakeOAuthProvider,
  fakeProvidersEnv,
  startFakeOAuthProvider,
} from '../../../test/fakes/oauth-provider.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { runQueuedJobs } from '../../../test/jobs.ts';
import { webhookEndpoints } from '../../db/schema/index.ts';
import { connectAcme } from '../connections/test-support.ts';
import { knowledgeJobs } from '../knowledge/jobs.ts';
import { taskJobs } from '../scheduled-tasks/jobs.ts';
import { webhookJobs } from './jobs.ts';

/** A webhook receiver on loopback: records what it is sent and answers the scripted statuses (then 200). */
interface Receiver {
  url: string;
  hostPort: string;
  received: { headers: IncomingHttpHeaders; body: string; path: string }[];
  answers: number[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const received: Receiver['received'] = [];
  const answers: number[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '' });
      const status = answers.shift() ?? 200;
      const redirect = status >= 300 && status < 400 ? { location: '/elsewhere' } : {};
      res.writeHead(status, { 'content-type': 'text/plain', ...redirect });
      res.end(status === 200 ? 'ok' : 'receiver broke');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    received,
    answers,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describe('outbound webhooks', () => {
  let h: TestHarness;
  let fake: FakeOAuthProvider;
  let receiver: Receiver;
  let llm: FakeLlm;
  beforeAll(async () => {
    receiver = await startReceiver();
    fake = await startFakeOAuthProvider();
    llm = await startFakeLlm();
    h = await createHarness(
      fakeProvidersEnv(fake, {
        SSRF_ALLOW_HOSTS: receiver.hostPort,
        LLM_BASE_URL: llm.url,
        LLM_MODELS: 'fake-model=1000000/2000000',
      }),
    );
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
    await llm?.close();
    await receiver?.close();
  });

  const register = async (u: TestUser, body: Record<string, unknown>) =>
    call(h.app, 'POST', '/api/v1/webhooks', { token: u.sessionToken, body });
  const deliver = (u: TestUser) => runQueuedJobs(h.app, webhookJobs, 'webhooks.deliver', { accountId: u.account.id });
  const deliveries = async (u: TestUser, webhookId: string) => {
    const res = await call(h.app, 'GET', `/api/v1/webhooks/${webhookId}/deliveries`, { token: u.sessionToken });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { data: Record<string, unknown>[]; pagination: Record<string, unknown> };
  };
  const sentTo = (path: string) => receiver.received.filter((r) => r.path === path);

  it('a new connection is delivered signed (Standard Webhooks), and its revocation after', async () => {
    const u = await createUser(h.app);
    const created = await register(u, {
      url: `${receiver.url}/journey`,
      events: ['connection.created', 'connection.revoked'],
      description: 'CRM sync',
    });
    expect(created.statusCode, created.body).toBe(201);
    const hook = created.json();
    expect(hook).toEqual({
      id: expect.stringMatching(/^wh_/),
      url: `${receiver.url}/journey`,
      description: 'CRM sync',
      events: ['connection.created', 'connection.revoked'],
      enabled: true,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const connectionId = await connectAcme(h.app, u);
    expect(await deliver(u)).toEqual([{ status: 'succeeded', attempt: 1, responseStatus: 200 }]);
    const [first] = sentTo('/journey');
    expect(first).toBeDefined();
    const verifier = new StandardWebhook(hook.secret);
    // The library throws unless the signature, id and timestamp headers check out.
    const payload = verifier.verify(first?.body ?? '', first?.headers as Record<string, string>);
    expect(payload).toEqual({
      type: 'connection.created',
      timestamp: expect.any(String),
      data: { connectionId, providerId: 'acme', status: 'active', reconnected: false },
    });
    expect(first?.headers['content-type']).toBe('application/json');
    expect(first?.headers['webhook-id']).toMatch(/^whmsg_/);
    // A wrong secret fails verification: the signature is really keyed.
    expect(() =>
      new StandardWebhook(`whsec_${Buffer.alloc(24, 1).toString('base64')}`).verify(
        first?.body ?? '',
        first?.headers as Record<string, string>,
      ),
    ).toThrow();

    // The provider revokes the grant: the refresh makes the connection revoked, and the endpoint hears it.
    fake.revokeEverything();
    const refreshed = await call(h.app, 'PUT', `/api/v1/connections/${connectionId}/refresh`, {
      token: u.sessionToken,
    });
    expect(refreshed.json().status, refreshed.body).toBe('revoked');
    await deliver(u);
    const second = sentTo('/journey')[1];
    expect(verifier.verify(second?.body ?? '', second?.headers as Record<string, string>)).toMatchObject({
      type: 'connection.revoked',
      data: { connectionId, providerId: 'acme', status: 'revoked', lastError: expect.any(String) },
    });

    const listed = await deliveries(u, hook.id);
    expect(listed.pagination).toEqual({ page: 1, limit: 20, total: 2, hasMore: false });
    expect(listed.data.map((d) => [d.eventType, d.status, d.attempts, d.responseStatus])).toEqual([
      ['connection.revoked', 'succeeded', 1, 200],
      ['connection.created', 'succeeded', 1, 200],
    ]);
  });

  it('an endpoint answering 500 is retried on the schedule; the delivery lists both attempts', async () => {
    const u = await createUser(h.app);
    const hook = (await register(u, { url: `${receiver.url}/flaky`, events: ['connection.created'] })).json();
    receiver.answers.push(500);
    await connectAcme(h.app, u);
    const before = Date.now();
    expect(await deliver(u)).toEqual([
      { status: 'retrying', attempt: 1, responseStatus: 500, nextAttemptAt: expect.any(String) },
    ]);
    const [failed] = (await deliveries(u, hook.id)).data;
    expect(failed).toMatchObject({
      status: 'pending',
      attempts: 1,
      responseStatus: 500,
      lastError: 'The endpoint answered HTTP 500: receiver broke',
      deliveredAt: null,
    });
    const next = Date.parse(String(failed?.nextAttemptAt));
    expect(next).toBeGreaterThanOrEqual(before + 5_000);
    expect(next).toBeLessThan(Date.now() + 5_000 + 1_000);

    expect(await deliver(u)).toEqual([{ status: 'succeeded', attempt: 2, responseStatus: 200 }]);
    const [done] = (await deliveries(u, hook.id)).data;
    expect(done).toMatchObject({
      status: 'succeeded',
      attempts: 2,
      responseStatus: 200,
      lastError: null,
      nextAttemptAt: null,
      deliveredAt: expect.any(String),
    });
    const attempts = sentTo('/flaky');
    expect(attempts).toHaveLength(2);
    // The same message both times: one webhook-id, one body.
    expect(attempts[1]?.headers['webhook-id']).toBe(attempts[0]?.headers['webhook-id']);
    expect(attempts[1]?.body).toBe(attempts[0]?.body);
    // A repeated job of an attempt already made sends nothing more.
    expect(await deliver(u)).toEqual([]);
  });

  it("a scheduled task's run is delivered as task_run.finished with its answer", async () => {
    const u = await createUser(h.app);
    const hook = (await register(u, { url: `${receiver.url}/tasks`, events: ['task_run.finished'] })).json();
    const agent = (
      await call(h.app, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'Helper' } })
    ).json();
    const tasks = `/api/v1/agents/${agent.id}/scheduled-tasks`;
    const task = await call(h.app, 'POST', tasks, {
      token: u.sessionToken,
      body: { name: 'Digest', prompt: 'Summarize my week.', cronExpression: '0 9 * * 1' },
    });
    expect(task.statusCode, task.body).toBe(201);
    llm.enqueue({ content: 'A calm week.' });
    const run = await call(h.app, 'POST', `${tasks}/${task.json().id}/run`, { token: u.sessionToken });
    expect(run.statusCode, run.body).toBe(202);
    await runQueuedJobs(h.app, taskJobs, 'tasks.run', { accountId: u.account.id });
    expect(await deliver(u)).toEqual([{ status: 'succeeded', attempt: 1, responseStatus: 200 }]);
    const [sent] = sentTo('/tasks');
    expect(new StandardWebhook(hook.secret).verify(sent?.body ?? '', sent?.headers as Record<string, string>)).toEqual({
      type: 'task_run.finished',
      timestamp: expect.any(String),
      data: {
        runId: run.json().id,
        taskId: task.json().id,
        trigger: 'manual',
        status: 'succeeded',
        error: null,
        output: 'A calm week.',
        outputTruncated: false,
        creditsConsumed: expect.any(Number),
        conversationId: expect.stringMatching(/^conv_/),
        scheduledFor: expect.any(String),
        finishedAt: expect.any(String),
      },
    });
  });

  it('knowledge sources are delivered as knowledge_source.compiled and .failed', async () => {
    const u = await createUser(h.app);
    const hook = (
      await register(u, {
        url: `${receiver.url}/kb`,
        events: ['knowledge_source.compiled', 'knowledge_source.failed'],
      })
    ).json();
    const bases = await call(h.app, 'GET', '/api/v1/knowledge/bases', { token: u.sessionToken });
    const kbId = (bases.json().data as { id: string; isDefault: boolean }[]).find((b) => b.isDefault)?.id ?? '';
    const add = async (body: Record<string, unknown>) => {
      const res = await call(h.app, 'POST', `/api/v1/knowledge/bases/${kbId}/sources`, {
        token: u.sessionToken,
        body,
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().id as string;
    };
    const good = await add({ type: 'text', name: 'notes', rawContent: 'Acme Corp makes anvils.' });
    llm.enqueue({ content: JSON.stringify({ pages: [{ name: 'Acme Corp', facts: ['Makes anvils.'] }] }) });
    await runQueuedJobs(h.app, knowledgeJobs, 'knowledge.compile', { accountId: u.account.id });
    // Not allow-listed: the source fails for good.
    const bad = await add({ type: 'url', name: 'intranet', url: 'http://127.0.0.1:9/' });
    await runQueuedJobs(h.app, knowledgeJobs, 'knowledge.compile', { accountId: u.account.id });
    await deliver(u);
    const verifier = new StandardWebhook(hook.secret);
    const events = sentTo('/kb').map((r) => verifier.verify(r.body, r.headers as Record<string, string>));
    expect(events).toEqual([
      {
        type: 'knowledge_source.compiled',
        timestamp: expect.any(String),
        data: {
          sourceId: good,
          kbId,
          name: 'notes',
          type: 'text',
          status: 'compiled',
          unchanged: false,
          created: ['acme-corp'],
          updated: [],
        },
      },
      {
        type: 'knowledge_source.failed',
        timestamp: expect.any(String),
        data: {
          sourceId: bad,
          kbId,
          name: 'intranet',
          type: 'url',
          status: 'failed',
          error: expect.stringContaining('127.0.0.1 is not a public address'),
        },
      },
    ]);
  });

  it('an endpoint that did not pick the event, or is disabled, is sent nothing', async () => {
    const u = await createUser(h.app);
    const other = (await register(u, { url: `${receiver.url}/other`, events: ['task_run.finished'] })).json();
    const off = (
      await register(u, { url: `${receiver.url}/off`, events: ['connection.created'], enabled: false })
    ).json();
    await connectAcme(h.app, u);
    expect(await deliver(u)).toEqual([]);
    expect((await deliveries(u, other.id)).data).toEqual([]);
    expect((await deliveries(u, off.id)).data).toEqual([]);
  });

  it('an endpoint disabled while a delivery waits fails it, saying how to get the next ones', async () => {
    const u = await createUser(h.app);
    const hook = (await register(u, { url: `${receiver.url}/paused`, events: ['connection.created'] })).json();
    await connectAcme(h.app, u);
    const off = await call(h.app, 'PATCH', `/api/v1/webhooks/${hook.id}`, {
      token: u.sessionToken,
      body: { enabled: false },
    });
    expect(off.statusCode, off.body).toBe(200);
    expect(await deliver(u)).toEqual([{ status: 'failed', reason: 'endpoint disabled' }]);
    expect(sentTo('/paused')).toEqual([]);
    expect((await deliveries(u, hook.id)).data).toMatchObject([
      {
        status: 'failed',
        lastError:
          'The endpoint was disabled when this delivery was due, so it is not sent; enable the webhook ' +
          '(PATCH /api/v1/webhooks/{id} with enabled: true) to receive the events that follow',
      },
    ]);
  });

  it('a redirect is not followed: the attempt fails, saying which URL to register', async () => {
    const u = await createUser(h.app);
    const hook = (await register(u, { url: `${receiver.url}/moved`, events: ['connection.created'] })).json();
    receiver.answers.push(302);
    await connectAcme(h.app, u);
    expect(await deliver(u)).toMatchObject([{ status: 'retrying', attempt: 1, responseStatus: null }]);
    expect(sentTo('/elsewhere')).toEqual([]);
    expect((await deliveries(u, hook.id)).data).toMatchObject([
      {
        status: 'pending',
        lastError: 'The endpoint answered with a redirect, which is not followed: register the URL it redirects to',
      },
    ]);
  });

  it('an account has at most 20 webhooks: the next is a 409 saying to delete one first', async () => {
    const u = await createUser(h.app);
    for (let i = 0; i < 20; i++) {
      const res = await register(u, { url: `${receiver.url}/n${i}`, events: ['connection.created'] });
      expect(res.statusCode, res.body).toBe(201);
    }
    const res = await register(u, { url: `${receiver.url}/n20`, events: ['connection.created'] });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({
      error: 'ConflictError',
      message: 'An account has at most 20 webhooks: delete one (DELETE /api/v1/webhooks/{id}) before adding another',
      statusCode: 409,
    });
  });

  it('URLs the SSRF guard refuses are a 422 at registration and on update, unless allow-listed', async () => {
    const u = await createUser(h.app);
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://localhost/hook',
      'http://10.0.0.7/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]:8080/hook',
      'ftp://example.com/hook',
      'http://user:pw@example.com/hook',
    ]) {
      const res = await register(u, { url, events: ['connection.created'] });
      expect(res.statusCode, url).toBe(422);
      expect(res.json()).toMatchObject({
        error: 'ValidationError',
        statusCode: 422,
        details: [{ field: 'body.url', message: expect.any(String) }],
      });
    }
    expect(
      (await register(u, { url: 'http://127.0.0.1:9/hook', events: ['connection.created'] })).json().message,
    ).toContain('SSRF_ALLOW_HOSTS');
    const ok = await register(u, { url: `${receiver.url}/allowed`, events: ['connection.created'] });
    expect(ok.statusCode).toBe(201);
    const patched = await call(h.app, 'PATCH', `/api/v1/webhooks/${ok.json().id}`, {
      token: u.sessionToken,
      body: { url: 'http://192.168.1.1/hook' },
    });
    expect(patched.statusCode).toBe(422);
    const got = await call(h.app, 'GET', `/api/v1/webhooks/${ok.json().id}`, { token: u.sessionToken });
    expect(got.json().url).toBe(`${receiver.url}/allowed`);
  });

  it('the URL is checked again at delivery: a host no longer allowed is refused and not reached', async () => {
    const u = await createUser(h.app);
    const hook = (await register(u, { url: `${receiver.url}/recheck`, events: ['connection.created'] })).json();
    // Another instance without the allow-list (as after DNS moved the name to a private address).
    const strict = await h.extraApp({ SSRF_ALLOW_HOSTS: '' });
    await connectAcme(h.app, u);
    expect(await runQueuedJobs(strict, webhookJobs, 'webhooks.deliver', { accountId: u.account.id })).toMatchObject([
      { status: 'retrying', attempt: 1, responseStatus: null },
    ]);
    expect(sentTo('/recheck')).toEqual([]);
    const [d] = (await deliveries(u, hook.id)).data;
    expect(d).toMatchObject({ status: 'pending', attempts: 1, lastError: expect.stringContaining('SSRF_ALLOW_HOSTS') });
  });

  it('the secret is returned once, never again, and stored sealed', async () => {
    const u = await createUser(h.app);
    const created = (await register(u, { url: `${receiver.url}/s`, events: ['connection.error'] })).json();
    const got = await call(h.app, 'GET', `/api/v1/webhooks/${created.id}`, { token: u.sessionToken });
    expect(got.statusCode).toBe(200);
    expect(got.json()).not.toHaveProperty('secret');
    const list = await call(h.app, 'GET', '/api/v1/webhooks', { token: u.sessionToken });
    expect(list.json()).toEqual({
      data: [{ ...created, secret: undefined }].map(({ secret: _s, ...rest }) => rest),
      pagination: { page: 1, limit: 20, total: 1, hasMore: false },
    });
    const patched = await call(h.app, 'PATCH', `/api/v1/webhooks/${created.id}`, {
      token: u.sessionToken,
      body: { events: ['connection.expired', 'connection.error'], enabled: false },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ events: ['connection.expired', 'connection.error'], enabled: false });
    expect(patched.json()).not.toHaveProperty('secret');
    const [row] = await h.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, created.id));
    expect(row?.secretEnc).not.toContain(created.secret.slice(6));
    expect(JSON.stringify(row)).not.toContain(created.secret.slice(6));
    expect(h.keyRing.decrypt(row?.secretEnc ?? '', created.id)).toBe(created.secret);

    const del = await call(h.app, 'DELETE', `/api/v1/webhooks/${created.id}`, { token: u.sessionToken });
    expect(del.statusCode).toBe(204);
    expect((await call(h.app, 'GET', `/api/v1/webhooks/${created.id}`, { token: u.sessionToken })).statusCode).toBe(
      404,
    );
  });

  it('refuses unknown events and empty lists (422)', async () => {
    const u = await createUser(h.app);
    expect((await register(u, { url: `${receiver.url}/x`, events: ['connection.deleted'] })).statusCode).toBe(422);
    expect((await register(u, { url: `${receiver.url}/x`, events: [] })).statusCode).toBe(422);
  });

  const owned = async (owner: TestUser) => {
    const res = await register(owner, { url: `${receiver.url}/owned`, events: ['connection.created'] });
    return `/api/v1/webhooks/${res.json().id}`;
  };
  guardTests(
    () => h,
    [
      {
        method: 'POST',
        url: '/api/v1/webhooks',
        scopes: ['account'],
        body: { url: 'https://example.com/hook', events: ['connection.created'] },
      },
      { method: 'GET', url: '/api/v1/webhooks', scopes: ['account'] },
      { method: 'GET', url: '/api/v1/webhooks/wh_x', scopes: ['account'], ownedUrl: owned },
      {
        method: 'PATCH',
        url: '/api/v1/webhooks/wh_x',
        scopes: ['account'],
        body: { description: 'changed' },
        ownedUrl: owned,
      },
      { method: 'DELETE', url: '/api/v1/webhooks/wh_x', scopes: ['account'], ownedUrl: owned },
      {
        method: 'GET',
        url: '/api/v1/webhooks/wh_x/deliveries',
        scopes: ['account'],
        ownedUrl: async (o) => `${await owned(o)}/deliveries`,
      },
    ],
  );
});
