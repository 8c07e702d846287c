import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';
import { generateKeySpec } from './lib/crypto.ts';

/** The variables a ConfigError names, in order. */
function badVariables(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.map((p) => p.split(':')[0] ?? '');
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('has documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      baseUrl: 'http://localhost:8080',
      appUrl: 'http://localhost:8080',
      dataDir: './data',
      databaseUrl: undefined,
      redisUrl: undefined,
      encryptionKeys: undefined,
      logLevel: 'info',
      trustProxy: false,
      sessionTtlSeconds: 604800,
      patDefaultExpiresIn: 90 * 24 * 3600,
      patMaxExpiresIn: 365 * 24 * 3600,
      bodyLimitBytes: 1048576,
      rateLimits: { global: 100, auth: 10, llm: 30, mcp: 30, register: 5, windowMs: 60000, enabled: true },
      initialCredits: 100000,
    });
  });

  it("hashes passwords at OWASP's argon2id floor unless the test-only setting lowers it", () => {
    const strong = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };
    expect(loadConfig({}).passwordHashing).toEqual(strong);
    expect(loadConfig({ INSECURE_TEST_PASSWORD_HASHING: 'false' }).passwordHashing).toEqual(strong);
    expect(loadConfig({ INSECURE_TEST_PASSWORD_HASHING: 'true' }).passwordHashing).toEqual({
      memoryCost: 8,
      timeCost: 1,
      parallelism: 1,
    });
    expect(badVariables({ INSECURE_TEST_PASSWORD_HASHING: 'maybe' })).toEqual(['INSECURE_TEST_PASSWORD_HASHING']);
  });

  it('derives BASE_URL from PORT and APP_URL from BASE_URL, without a trailing slash', () => {
    expect(loadConfig({ PORT: '9000' }).baseUrl).toBe('http://localhost:9000');
    const c = loadConfig({ PORT: '9000', BASE_URL: 'https://sb.example.com/' });
    expect([c.baseUrl, c.appUrl]).toEqual(['https://sb.example.com', 'https://sb.example.com']);
    expect(loadConfig({ APP_URL: 'https://app.example.com//' }).appUrl).toBe('https://app.example.com');
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '', LOG_LEVEL: '' })).toMatchObject({
      port: 8080,
      databaseUrl: undefined,
      logLevel: 'info',
    });
  });

  it('names every bad variable at once, cross-variable rules included', () => {
    const problems = badVariables({
      PORT: 'eighty',
      LOG_LEVEL: 'loud',
      DATABASE_URL: 'mysql://x',
      BASE_URL: 'not a url',
      REDIS_URL: 'http://cache',
      TRUST_PROXY: 'yes',
      RATE_LIMIT_GLOBAL: '0',
      PAT_DEFAULT_EXPIRES_IN: '1000',
      PAT_MAX_EXPIRES_IN: '10',
    });
    expect([...problems].sort()).toEqual([
      'BASE_URL',
      'DATABASE_URL',
      'ENCRYPTION_KEYS',
      'LOG_LEVEL',
      'PAT_DEFAULT_EXPIRES_IN',
      'PORT',
      'RATE_LIMIT_GLOBAL',
      'REDIS_URL',
      'TRUST_PROXY',
    ]);
  });

  it('says why, in one message an operator can act on', () => {
    try {
      loadConfig({ PORT: '70000', TRUST_PROXY: '10.0.0.0/8, proxy.local' });
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toBe(
        'Invalid configuration:\n' +
          '  - PORT: Too big: expected number to be <=65535\n' +
          '  - TRUST_PROXY: must be true, false, a hop count or a list of addresses/CIDRs; not proxy.local',
      );
    }
  });

  it('requires well-formed ENCRYPTION_KEYS, and requires them on PostgreSQL', () => {
    expect(badVariables({ DATABASE_URL: 'postgres://localhost/x' })).toEqual(['ENCRYPTION_KEYS']);
    expect(badVariables({ ENCRYPTION_KEYS: 'k1:c2hvcnQ=' })).toEqual(['ENCRYPTION_KEYS']);
    expect(badVariables({ ENCRYPTION_KEYS: 'no-colon' })).toEqual(['ENCRYPTION_KEYS']);
    const keys = `${generateKeySpec('new')},${generateKeySpec('old')}`;
    expect(loadConfig({ DATABASE_URL: 'postgresql://db/x', ENCRYPTION_KEYS: keys }).encryptionKeys).toBe(keys);
  });

  it('turns tracing on only with an OTLP endpoint, reading the OTEL_* settings', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
      url: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: 'switchboard',
      sampler: 'parentbased_always_on',
      samplerArg: undefined,
      version: expect.any(String),
    });
    const c = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=a%3Db, team = ops',
      OTEL_SERVICE_NAME: 'edge',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    }).tracing;
    expect(c).toMatchObject({
      url: 'https://traces.example/otlp',
      headers: { 'x-api-key': 'a=b', team: 'ops' },
      serviceName: 'edge',
      sampler: 'parentbased_traceidratio',
      samplerArg: 0.25,
    });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).tracing,
    ).toBeUndefined();
    expect(
      badVariables({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
        OTEL_EXPORTER_OTLP_HEADERS: 'no-equals',
        OTEL_TRACES_SAMPLER: 'sometimes',
        OTEL_TRACES_SAMPLER_ARG: '2',
      }),
    ).toEqual([
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_TRACES_SAMPLER',
      'OTEL_TRACES_SAMPLER_ARG',
    ]);
  });

  it('reads TRUST_PROXY as a flag, a hop count or a list of addresses and CIDRs', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: 'TRUE' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '0' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1']);
    expect(loadConfig({ TRUST_PROXY: 'loopback,::1,fd00::/8,10.0.0.0/255.0.0.0' }).trustProxy).toEqual([
      'loopback',
      '::1',
      'fd00::/8',
      '10.0.0.0/255.0.0.0',
    ]);
    for (const bad of ['yes', '10.0.0.0/8/8', '10.0.0.300', 'proxy.local']) {
      expect(badVariables({ TRUST_PROXY: bad }), bad).toEqual(['TRUST_PROXY']);
    }
  });

  it('reads booleans strictly', () => {
    expect(loadConfig({ RATE_LIMIT_ENABLED: 'no', SIGNUP_ENABLED: '0' })).toMatchObject({
      rateLimits: { enabled: false },
      signupEnabled: false,
    });
    expect(badVariables({ RATE_LIMIT_ENABLED: 'off' })).toEqual(['RATE_LIMIT_ENABLED']);
  });

  it('reads the jobs settings with their defaults and bounds', () => {
    expect(loadConfig({}).jobs).toEqual({
      enabled: true,
      concurrency: 4,
      pollIntervalMs: 1000,
      leaseMs: 30_000,
      retentionDays: 7,
      deadRetentionDays: 30,
      activityRetentionDays: 30,
    });
    expect(
      loadConfig({
        JOBS_ENABLED: 'false',
        JOBS_CONCURRENCY: '8',
        JOBS_POLL_INTERVAL_MS: '250',
        JOBS_LEASE_MS: '60000',
        JOBS_RETENTION_DAYS: '1',
        JOBS_DEAD_RETENTION_DAYS: '90',
        ACTIVITY_RETENTION_DAYS: '365',
      }).jobs,
    ).toEqual({
      enabled: false,
      concurrency: 8,
      pollIntervalMs: 250,
      leaseMs: 60_000,
      retentionDays: 1,
      deadRetentionDays: 90,
      activityRetentionDays: 365,
    });
    expect(
      badVariables({
        JOBS_ENABLED: 'maybe',
        JOBS_CONCURRENCY: '0',
        JOBS_POLL_INTERVAL_MS: '5',
        JOBS_LEASE_MS: '500',
        JOBS_RETENTION_DAYS: '0',
        JOBS_DEAD_RETENTION_DAYS: 'x',
        ACTIVITY_RETENTION_DAYS: '0',
      }),
    ).toEqual([
      'JOBS_ENABLED',
      'JOBS_CONCURRENCY',
      'JOBS_POLL_INTERVAL_MS',
      'JOBS_LEASE_MS',
      'JOBS_RETENTION_DAYS',
      'JOBS_DEAD_RETENTION_DAYS',
      'ACTIVITY_RETENTION_DAYS',
    ]);
  });

  it('refuses an LLM base URL without its scheme, naming the variable', () => {
    // `localhost:11434/v1` parses as a URL whose scheme is "localhost:"; it must stop start-up instead.
    expect(badVariables({ LLM_BASE_URL: 'localhost:11434/v1' })).toEqual(['LLM_BASE_URL']);
    expect(badVariables({ OPENAI_BASE_URL: 'api.openai.com/v1', ANTHROPIC_BASE_URL: 'ftp://x.test' })).toEqual([
      'OPENAI_BASE_URL',
      'ANTHROPIC_BASE_URL',
    ]);
    expect(loadConfig({ LLM_BASE_URL: 'http://localhost:11434/v1/' }).llm.custom?.baseUrl).toBe(
      'http://localhost:11434/v1',
    );
  });
});
