import { createHash, randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { Scope } from '../src/access/scopes.ts';
import { buildApp } from '../src/app.ts';
import { type Config, loadConfig } from '../src/config.ts';
import type { Actor, PublicContext, ServiceContext } from '../src/context.ts';
import { type Database, openDatabase } from '../src/db/client.ts';
import { accounts } from '../src/db/schema/index.ts';
import type { App } from '../src/http/types.ts';
import type { JobCatalog } from '../src/jobs/definition.ts';
import { createKeyRing, type KeyRing, parseKeys } from '../src/lib/crypto.ts';
import { newId } from '../src/lib/ids.ts';
import type { Account } from '../src/modules/accounts/schema.ts';
import type { CreatePat } from '../src/modules/auth/schema.ts';
import { createPat, signup } from '../src/modules/auth/service.ts';
import { returnIdleLeases } from '../src/modules/credits/service.ts';
import { FAKE_ANTHROPIC_KEY, type FakeAnthropic, startFakeAnthropic } from './fakes/anthropic.ts';
import { type FakeLlm, startFakeLlm } from './fakes/llm-upstream.ts';
import { adminQuery, databaseUrl, PG_TEST_DATABASE_SETTINGS } from './global-setup.ts';
import { testDatabaseTarget } from './test-database.ts';
import { testTmpDir } from './tmp-dir.ts';

/**
 * The test file's database (the worker's PGlite database or its worker slot's PostgreSQL database, both shared with the
 * other files; or one of its own), any number of apps over it, and factories that give each test a fresh account.
 */
export interface TestHarness {
  app: App;
  config: Config;
  database: Database;
  keyRing: KeyRing;
  /** Another app over the same database, e.g. with other limits. Closed with the harness. */
  extraApp(env?: Record<string, string>): Promise<App>;
  close(): Promise<void>;
}

/**
 * One encryption key for every test worker of every run: on PostgreSQL a worker slot's database is shared by
 * every worker process that takes the slot, and a secret one sealed there (OAuth signing keys, provider tokens)
 * must open in the others.
 */
export const TEST_ENCRYPTION_KEYS = `test:${createHash('sha256').update('switchboard test key').digest('base64')}`;
const KEYS = TEST_ENCRYPTION_KEYS;

/** Test settings: quiet logs, limits high enough that only rate-limit tests meet them. */
export function testConfig(dataDir: string, env: Record<string, string> = {}): Config {
  const target = testDatabaseTarget();
  return loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    BASE_URL: 'http://localhost:8080',
    ENCRYPTION_KEYS: KEYS,
    // Tests change rows under the app's feet (expiry, balances): resolve every token afresh.
    AUTH_CACHE_TTL_MS: '0',
    RATE_LIMIT_GLOBAL: '100000',
    RATE_LIMIT_AUTH: '100000',
    RATE_LIMIT_LLM: '100000',
    RATE_LIMIT_MCP: '100000',
    RATE_LIMIT_REGISTER: '100000',
    // Background jobs would run across every test file's rows on the slot's shared PostgreSQL database; the jobs
    // tests turn them on, over a database of their own (`createHarness(env, { privateDatabase: true })`).
    JOBS_ENABLED: 'false',
    // argon2 at its least cost: a test signs up thousands of accounts (src/config.ts; production keeps OWASP's).
    INSECURE_TEST_PASSWORD_HASHING: 'true',
    ...(target.kind === 'pg' ? { DATABASE_URL: target.url } : {}),
    ...env,
  });
}

export interface TestDatabase {
  /** The open database (after `handOver`, `open()` it again first). */
  readonly database: Database;
  dataDir: string;
  /** The settings that reach this database (`DATA_DIR`, and `DATABASE_URL` on PostgreSQL), for other processes. */
  env: Record<string, string>;
  /**
   * Lets another process (a CLI command, a worker) use the database: the embedded one serves one process at a
   * time, so it is closed here; PostgreSQL needs nothing.
   */
  handOver(): Promise<void>;
  /** The database, opened again if it was handed over. */
  open(): Promise<Database>;
  /** Closes it and removes what it created (the data directory; a private PostgreSQL database). */
  close(): Promise<void>;
}

/**
 * The PGlite database the test files of this worker share, as on PostgreSQL they share the run's database: a copy
 * of the template, opened by the first harness and left open for the next file (opening one costs a second or
 * more of CPU: a thread, PGlite's WebAssembly, its start). In the run's directory, which the global set-up removes.
 */
let workerPglite: Promise<Database> | undefined;

function sharedPglite(target: { template: string; runDir: string }): Promise<Database> {
  workerPglite ??= (async () => {
    const dir = mkdtempSync(join(target.runDir, `worker-${process.pid}-`));
    cpSync(target.template, dir, { recursive: true });
    return openDatabase({ dataDir: dir });
  })();
  return workerPglite;
}

/**
 * A database for a test file: by default a copy of the migrated PGlite template, or the worker slot's PostgreSQL database.
 * With `privateDatabase`, on PostgreSQL a fresh migrated database of its own (a clone of the run's template), for
 * tests whose work spans every account (recurring jobs) and must not meet other files' rows. With `shared` (what
 * `createHarness` asks for), on PGlite the worker's shared database (above) instead of a copy: closing it leaves it
 * open, and it cannot be handed over.
 */
export async function openTestDatabase(
  opts: { privateDatabase?: boolean; shared?: boolean } = {},
): Promise<TestDatabase> {
  const target = testDatabaseTarget();
  const dataDir = mkdtempSync(join(testTmpDir(), 'sb-test-'));
  let dropDatabase: (() => Promise<void>) | undefined;
  let env: Record<string, string> = { DATA_DIR: dataDir };
  let database: Database;
  if (target.kind === 'pglite' && opts.shared && !opts.privateDatabase) {
    const shared = await sharedPglite(target);
    return {
      database: shared,
      dataDir,
      env,
      async handOver() {
        throw new Error('The shared test database cannot be handed over: openTestDatabase({ privateDatabase: true })');
      },
      async open() {
        return shared;
      },
      async close() {
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  if (target.kind === 'pg') {
    let url = target.url;
    if (opts.privateDatabase) {
      // A clone of the run's migrated template (test/global-setup.ts): a file copy, no migrations to run.
      const name = `sb_private_${Date.now()}_${randomBytes(3).toString('hex')}`;
      await adminQuery(target.url, `CREATE DATABASE ${name} TEMPLATE ${target.template}`);
      await adminQuery(target.url, `ALTER DATABASE ${name} ${PG_TEST_DATABASE_SETTINGS}`);
      dropDatabase = () => adminQuery(target.url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      url = databaseUrl(target.url, name);
    }
    env = { ...env, DATABASE_URL: url };
    database = await openDatabase({ databaseUrl: url, dataDir, poolMax: 5 });
  } else {
    cpSync(target.template, dataDir, { recursive: true });
    database = await openDatabase({ dataDir });
  }
  let current: Database | undefined = database;
  return {
    get database() {
      if (!current) throw new Error('The test database was handed over: await open() first');
      return current;
    },
    dataDir,
    env,
    async handOver() {
      if (current?.driver !== 'pglite') return;
      await current.close();
      current = undefined;
    },
    async open() {
      current ??= await openDatabase({ dataDir });
      return current;
    },
    async close() {
      await current?.close();
      current = undefined;
      await dropDatabase?.();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function createHarness(
  env: Record<string, string> = {},
  opts: { privateDatabase?: boolean; jobCatalog?: JobCatalog } = {},
): Promise<TestHarness> {
  const testDb = await openTestDatabase({ ...opts, shared: true });
  const { database, dataDir } = testDb;
  if (testDb.env.DATABASE_URL) env = { DATABASE_URL: testDb.env.DATABASE_URL, ...env };
  const keyRing = createKeyRing(parseKeys(KEYS));
  const apps: App[] = [];
  const make = async (extra: Record<string, string>) => {
    const config = testConfig(dataDir, { ...env, ...extra });
    const app = await buildApp({
      config,
      database,
      keyRing,
      ...(opts.jobCatalog ? { jobCatalog: opts.jobCatalog } : {}),
    });
    await app.ready();
    apps.push(app);
    return app;
  };
  const app = await make({});
  return {
    app,
    config: app.deps.config,
    database,
    keyRing,
    extraApp: make,
    async close() {
      for (const a of apps) await a.close();
      await testDb.close();
    },
  };
}

export function publicContext(app: App): PublicContext {
  return { deps: app.deps, db: app.deps.database.db, log: app.log, requestId: newId('request'), ip: '127.0.0.1' };
}

export interface TestUser {
  account: Account;
  password: string;
  sessionToken: string;
  /** A service context acting as this user's session (every scope). */
  ctx: ServiceContext;
  /** Mints a PAT with these scopes (and optional provider permissions) through the real service. */
  pat(scopes: Scope[], extra?: Partial<CreatePat>): Promise<string>;
  /** `{authorization: 'Bearer <session token>'}` */
  headers: { authorization: string };
}

let counter = 0;

/** A fresh account with its own session: tests never share rows. */
export async function createUser(app: App, opts: { name?: string; email?: string } = {}): Promise<TestUser> {
  const password = `pw-${randomBytes(6).toString('hex')}`;
  const email = opts.email ?? `user${++counter}-${randomBytes(5).toString('hex')}@example.test`;
  const session = await signup(publicContext(app), { email, password, name: opts.name ?? 'Test User' });
  const actor: Actor = {
    kind: 'session',
    accountId: session.account.id,
    tokenId: 'test',
    scopes: new Set(Object.keys((await import('../src/access/scopes.ts')).SCOPES) as Scope[]),
    providerPermissions: {},
    defaultProviderPermission: 'read-write',
    creditBalance: session.account.creditBalance,
  };
  const ctx: ServiceContext = { ...publicContext(app), accountId: actor.accountId, actor, scopes: actor.scopes };
  return {
    account: session.account,
    password,
    sessionToken: session.session_token,
    ctx,
    headers: { authorization: `Bearer ${session.session_token}` },
    async pat(scopes, extra = {}) {
      const created = await createPat(ctx, { name: 'test token', scopes, ...extra });
      return created.personal_access_token;
    },
  };
}

/** `app.inject` with a bearer token and JSON body. */
export function call(
  app: App,
  method: InjectOptions['method'],
  url: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string>; remoteAddress?: string } = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    ...(opts.remoteAddress ? { remoteAddress: opts.remoteAddress } : {}),
    headers: { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...opts.headers },
    ...(opts.body !== undefined ? { payload: opts.body as InjectOptions['payload'] } : {}),
  });
}

/**
 * A client address of its own (10.x.y.z) for a test that spends a per-address budget: the sign-in budget is kept
 * in the shared database (and Redis), where every test file's sign-ins from 127.0.0.1 are counted too.
 */
export function uniqueAddress(): string {
  const [a = 0, b = 0, c = 0] = randomBytes(3);
  return `10.${a}.${b}.${c}`;
}

/** The fake upstream's one model at its usual rates (1 credit a prompt token, 2 a completion token). */
export const FAKE_MODELS = 'fake-model=1000000/2000000';

/**
 * A suite on a harness whose LLM upstream is the scripted fake: both started before the suite and closed after
 * it, the fake's script and recorded requests cleared before each test. `bind` receives them once started
 * (`fakeLlmSuite((s) => ({ h, llm } = s))`); `env` adds settings (`LLM_MODELS` defaults to FAKE_MODELS), or is a
 * function read when the suite starts (for the address of another fake started before). `listen: true` has the
 * app listen on a loopback port, for real clients: `base` is then its address (else '').
 */
export function fakeLlmSuite(
  bind: (suite: { h: TestHarness; llm: FakeLlm; base: string }) => void,
  env: Record<string, string> | (() => Record<string, string>) = {},
  opts: { listen?: boolean } = {},
): void {
  let llm: FakeLlm | undefined;
  let h: TestHarness | undefined;
  beforeAll(async () => {
    llm = await startFakeLlm();
    h = await createHarness({
      LLM_BASE_URL: llm.url,
      LLM_MODELS: FAKE_MODELS,
      ...(typeof env === 'function' ? env() : env),
    });
    let base = '';
    if (opts.listen) {
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      const addr = h.app.server.address();
      base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    }
    bind({ h, llm, base });
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
  });
  beforeEach(() => {
    llm?.reset();
    if (llm) llm.requests.length = 0;
  });
}

/**
 * The fake Anthropic API for a suite: started before it, closed after it, its script and recorded requests
 * cleared before each test. Call it before fakeLlmSuite, whose `env` (a function) can then point at it.
 */
export function fakeAnthropicSuite(bind: (anthropic: FakeAnthropic) => void): void {
  let anthropic: FakeAnthropic | undefined;
  beforeAll(async () => {
    anthropic = await startFakeAnthropic();
    bind(anthropic);
  });
  afterAll(async () => {
    await anthropic?.close();
  });
  beforeEach(() => {
    if (anthropic) anthropic.requests.length = 0;
    anthropic?.reset();
  });
}

/** What `gatewaySuite` gives each test: the suite's fakes and app, and a fresh user with an `llm-all` token. */
export interface GatewaySuite {
  h: TestHarness;
  llm: FakeLlm;
  anthropic: FakeAnthropic;
  base: string;
  user: TestUser;
  pat: string;
}

/**
 * A suite for the gateway's real clients: the fake OpenAI-compatible upstream (`models`) and the fake Anthropic
 * API, an app listening on loopback that uses both, and before each test a fresh user and its `llm-all` token.
 * `bind` receives them before each test, ahead of the file's own `beforeEach`.
 */
export function gatewaySuite(models: string, bind: (suite: GatewaySuite) => void): void {
  let anthropic: FakeAnthropic | undefined;
  let started: { h: TestHarness; llm: FakeLlm; base: string } | undefined;
  fakeAnthropicSuite((a) => (anthropic = a));
  fakeLlmSuite(
    (s) => (started = s),
    () => ({ LLM_MODELS: models, ANTHROPIC_API_KEY: FAKE_ANTHROPIC_KEY, ANTHROPIC_BASE_URL: anthropic?.url ?? '' }),
    { listen: true },
  );
  beforeEach(async () => {
    if (!started || !anthropic) throw new Error('the gateway suite did not start');
    const user = await createUser(started.h.app);
    bind({ ...started, anthropic, user, pat: await user.pat(['llm-all']) });
  });
}

/** Bills settle just after the answer: waits for that on `apps`, and for their leased credits to go back. */
export async function settleBills(apps: readonly App[]): Promise<void> {
  await Promise.all(
    apps.map(async (a) => {
      await a.deps.background.drain();
      await returnIdleLeases(a.deps);
    }),
  );
}

/** An account's credit balance once its bills have settled (settleBills on `apps`, default h's app). */
export async function settledBalance(
  h: TestHarness,
  accountId: string,
  apps: readonly App[] = [h.app],
): Promise<number | undefined> {
  await settleBills(apps);
  const rows = await h.database.db
    .select({ b: accounts.creditBalance })
    .from(accounts)
    .where(eq(accounts.id, accountId));
  return rows[0]?.b;
}
