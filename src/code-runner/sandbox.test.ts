import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TooManyRequestsError } from '../lib/errors.ts';
import {
  closeSharedSandbox,
  DEFAULT_SANDBOX_OPTIONS,
  runSandbox,
  SANDBOX_LANGUAGES,
  Sandbox,
  type SandboxRequest,
} from './index.ts';
import { type FakeWeb, startFakeWeb } from './test-support.ts';

/**
 * The sandbox runtime alone (no database, no billing): what a tool's code sees, what it cannot reach, and how
 * runs share the workers. A loopback HTTP server stands in for the internet; the sandbox may reach it only
 * because it is listed in allowHosts (as SSRF_ALLOW_HOSTS would), every other loopback port stays refused.
 * Python's side of the same promises is python.test.ts.
 */

let web: FakeWeb;
let sandbox: Sandbox;

beforeAll(async () => {
  web = await startFakeWeb();
  sandbox = new Sandbox({ ...DEFAULT_SANDBOX_OPTIONS, allowHosts: [web.allowHost] });
});

afterAll(async () => {
  await sandbox.close();
  await closeSharedSandbox();
  web.close();
});

const js = (code: string, extra: Partial<SandboxRequest> = {}) =>
  sandbox.run({ language: 'javascript', code, args: {}, secrets: {}, ...extra });

describe('JavaScript and TypeScript in QuickJS', () => {
  it('lists the supported languages', () => {
    expect(SANDBOX_LANGUAGES).toEqual(['javascript', 'typescript', 'python']);
  });

  it('JavaScript: arguments in, the returned value out, console captured', async () => {
    const r = await js(
      'console.log("adding", args.a, "and", args.b); console.error("to stderr", {x: 1}); return { sum: args.a + args.b, items: [1, "two", null] };',
      { args: { a: 2, b: 40 } },
    );
    expect(r).toMatchObject({
      stdout: 'adding 2 and 40\n',
      stderr: 'to stderr {"x":1}\n',
      result: { sum: 42, items: [1, 'two', null] },
      error: null,
    });
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('TypeScript: types are stripped and the code runs', async () => {
    const r = await sandbox.run({
      language: 'typescript',
      code: 'interface In { words: string[] }\nconst input = args as In;\nconst count = (w: string[]): number => w.length;\nreturn { count: count(input.words), first: input.words[0]!.toUpperCase() };',
      args: { words: ['alpha', 'beta'] },
      secrets: {},
    });
    expect(r).toMatchObject({ result: { count: 2, first: 'ALPHA' }, error: null });
  });

  it('an undefined result is null; awaiting inside the code works', async () => {
    expect((await js('await Promise.resolve(1);')).result).toBeNull();
    expect((await js('const v = await new Promise((r) => r(7)); return v * 6;')).result).toBe(42);
  });

  it("the code's error is answered with its name and message", async () => {
    expect((await js('throw new TypeError("bad input")')).error).toEqual({ name: 'TypeError', message: 'bad input' });
    expect((await js('null.x')).error?.name).toBe('TypeError');
    expect((await js('await Promise.reject(new RangeError("nope"))')).error).toEqual({
      name: 'RangeError',
      message: 'nope',
    });
  });

  it('a syntax error names the line of the tool code', async () => {
    const r = await js('const a = 1;\nreturn (a +;');
    expect(r.error?.name).toBe('SyntaxError');
    expect(r.error?.message).toMatch(/line 2/);
    const ts = await sandbox.run({ language: 'typescript', code: 'let x: = 1', args: {}, secrets: {} });
    expect(ts.error?.name).toBe('SyntaxError');
  });

  it('an unsupported language is an error, not a crash', async () => {
    const r = await sandbox.run({ language: 'ruby' as 'javascript', code: 'puts 1', args: {}, secrets: {} });
    expect(r.error).toEqual({ name: 'LanguageError', message: 'Unsupported language ruby' });
  });

  it('an infinite loop is stopped at the limit', async () => {
    const r = await js('let i = 0; while (true) { i++; }', { timeoutMs: 300 });
    expect(r.error).toEqual({
      name: 'TimeoutError',
      message: 'The run took longer than its 300 ms limit and was stopped',
    });
    expect(r.durationMs).toBeGreaterThanOrEqual(300);
    // The worker serves the next run.
    expect((await js('return 1')).result).toBe(1);
  });

  it('a promise that never settles is stopped at the limit too', async () => {
    const r = await js('await new Promise(() => {}); return 1;', { timeoutMs: 200 });
    expect(r.error?.name).toBe('TimeoutError');
  });

  it('a memory bomb is stopped by the memory cap, and the next run is fine', async () => {
    const typed = await js('const keep = []; while (true) keep.push(new Uint8Array(4 * 1024 * 1024));');
    expect(typed.error?.name).toBe('MemoryLimitError');
    const arrays = await js('const keep = []; while (true) keep.push(new Array(100000).fill({ a: 1 }));');
    expect(arrays.error?.name).toBe('MemoryLimitError');
    const strings = await js('let s = "x"; while (true) s += s;');
    expect(strings.error).not.toBeNull();
    expect((await js('return "still here"')).result).toBe('still here');
  });

  it('output past the limit is cut with a marker; an oversized result is an error', async () => {
    const r = await js('const line = "y".repeat(10000); for (let i = 0; i < 200; i++) console.log(line); return 1;');
    expect(r.stdout.length).toBeLessThan(1024 * 1024 + 200);
    expect(r.stdout).toMatch(/\[output cut at 1048576 characters\]\n$/);
    expect(r.result).toBe(1);
    const big = await js('return "z".repeat(2 * 1024 * 1024);');
    expect(big.error?.name).toBe('ResultTooLargeError');
  });
});

describe('what comes back is bounded (security review, items 4 and 5a)', () => {
  it("an error's name is cut like its message: a 3 MB name comes back at 200 characters", async () => {
    const r = await js('const e = new Error("m".repeat(10000)); e.name = "N".repeat(3 * 1024 * 1024); throw e;');
    expect(r.error).toEqual({ name: 'N'.repeat(200), message: 'm'.repeat(4000) });
  });

  it('a result nested deeper than 64 levels is an error, not a value every later walk would choke on', async () => {
    for (const depth of [65, 3000]) {
      const r = await js(`let v = 1; for (let i = 0; i < ${depth}; i++) v = [v]; return v;`);
      expect(r).toMatchObject({
        result: null,
        error: {
          name: 'ResultTooDeepError',
          message: 'The returned value nests arrays and objects more than 64 levels deep',
        },
      });
    }
    const fine = await js('let v = 1; for (let i = 0; i < 64; i++) v = [v]; return v;');
    expect(fine.error).toBeNull();
  });
});

describe('what the code can reach', () => {
  it('no process, require, module loader, file system or timers; the host environment is out of reach', async () => {
    process.env.SANDBOX_TEST_HOST_SECRET = 'host-secret-value';
    const r = await js(`
      const seen = {};
      for (const name of ['process', 'require', 'module', 'setTimeout', 'setInterval', 'Deno', 'Bun', 'std', 'os', 'WebAssembly']) {
        seen[name] = typeof globalThis[name];
      }
      let viaFunction;
      try { viaFunction = typeof Function('return this')().process; } catch (e) { viaFunction = e.name; }
      let imported;
      try { await import('fs'); imported = 'loaded'; } catch (e) { imported = e.name; }
      return { seen, viaFunction, imported, globals: Object.getOwnPropertyNames(globalThis).join(',') };
    `);
    expect(r.error).toBeNull();
    const out = r.result as { seen: Record<string, string>; viaFunction: string; imported: string; globals: string };
    expect(Object.values(out.seen).every((t) => t === 'undefined')).toBe(true);
    expect(out.viaFunction).toBe('undefined');
    expect(out.imported).not.toBe('loaded');
    expect(JSON.stringify(r)).not.toContain('host-secret-value');
    delete process.env.SANDBOX_TEST_HOST_SECRET;
  });

  it("secrets are the run's own and frozen; nothing stays behind for the next run", async () => {
    const first = await js('globalThis.leak = secrets; Object.prototype.polluted = true; return secrets.API_KEY;', {
      secrets: { API_KEY: 'key-of-tool-a' },
    });
    expect(first.result).toBe('key-of-tool-a');
    const second = await js(
      'secrets.OTHER = "changed"; return { leak: typeof globalThis.leak, polluted: ({}).polluted ?? null, keys: Object.keys(secrets), frozen: Object.isFrozen(secrets), value: secrets.OTHER };',
      { secrets: { OTHER: 'key-of-tool-b' } },
    );
    expect(second.result).toEqual({
      leak: 'undefined',
      polluted: null,
      keys: ['OTHER'],
      frozen: true,
      value: 'key-of-tool-b',
    });
  });

  it('concurrent runs are isolated from one another', async () => {
    const runs = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        js(
          `const before = typeof globalThis.mine; globalThis.mine = args.n; let t = 0; for (let k = 0; k < 20000; k++) t += k; await Promise.resolve(); return { before, n: args.n, mine: globalThis.mine, secret: secrets.S };`,
          { args: { n: i }, secrets: { S: `s${i}` } },
        ),
      ),
    );
    expect(runs.map((r) => r.result)).toEqual(
      // A run never sees what an earlier one left: each starts in a fresh context.
      Array.from({ length: 6 }, (_, i) => ({ before: 'undefined', n: i, mine: i, secret: `s${i}` })),
    );
  });

  it('fetch reaches an allowed host: status, headers, JSON, POST bodies', async () => {
    const r = await js(
      `const res = await fetch(args.url + '/echo?q=1', { method: 'POST', headers: { authorization: 'Bearer ' + secrets.TOKEN }, body: JSON.stringify({ hello: 'world' }) });
       return { status: res.status, ok: res.ok, header: res.headers.get('X-Fake'), json: await res.json() };`,
      { args: { url: web.origin }, secrets: { TOKEN: 't0k' } },
    );
    expect(r.error).toBeNull();
    expect(r.result).toEqual({
      status: 200,
      ok: true,
      header: 'yes',
      json: { method: 'POST', url: '/echo?q=1', body: '{"hello":"world"}', auth: 'Bearer t0k' },
    });
  });

  it('fetch works in a run whose limit is under the fetch cap (15 s): the time left is whole milliseconds', async () => {
    const r = await js("const res = await fetch(args.url + '/short'); return (await res.json()).url;", {
      args: { url: web.origin },
      timeoutMs: 5000,
    });
    expect(r).toMatchObject({ error: null, result: '/short' });
  });

  it('fetch to loopback in every spelling, private ranges and the metadata address is refused', async () => {
    const refused = web.refusedUrls;
    const r = await js(
      `const out = {};
       for (const url of args.urls) {
         try { const res = await fetch(url); out[url] = 'fetched ' + res.status + ' ' + (await res.text()); }
         catch (e) { out[url] = e.name + ': ' + e.message; }
       }
       return out;`,
      { args: { urls: refused }, timeoutMs: 20_000 },
    );
    expect(r.error).toBeNull();
    const outcome = r.result as Record<string, string>;
    for (const url of refused) {
      expect(outcome[url], url).toMatch(/^FetchError: /);
      expect(outcome[url], url).not.toContain('internal secret');
    }
    expect(outcome['http://169.254.169.254/latest/meta-data/']).toMatch(/not a public address/);
    expect(outcome['file:///etc/passwd']).toMatch(/Only http and https/);
  });
});

describe('workers and the queue', () => {
  it('starts nothing until the first run', async () => {
    const lazy = new Sandbox(DEFAULT_SANDBOX_OPTIONS);
    expect(lazy.started).toBe(false);
    await lazy.close();
  });

  it('runs beyond the workers wait their turn; past the bound the caller gets a 429 at once', async () => {
    const one = new Sandbox({ ...DEFAULT_SANDBOX_OPTIONS, workers: 1, queueMax: 1 });
    try {
      const blocking = one.run({
        language: 'javascript',
        code: 'await new Promise(() => {})',
        args: {},
        secrets: {},
        timeoutMs: 3000,
      });
      await vi.waitFor(() => expect(one.stats()).toEqual({ running: 1, queued: 0 }));
      const queued = one.run({ language: 'javascript', code: 'return "my turn came"', args: {}, secrets: {} });
      await vi.waitFor(() => expect(one.stats()).toEqual({ running: 1, queued: 1 }));
      const refused = one.run({ language: 'javascript', code: 'return 1', args: {}, secrets: {} });
      await expect(refused).rejects.toBeInstanceOf(TooManyRequestsError);
      await expect(refused).rejects.toMatchObject({ statusCode: 429, headers: { 'Retry-After': '5' } });
      expect((await blocking).error?.name).toBe('TimeoutError');
      expect((await queued).result).toBe('my turn came');
    } finally {
      await one.close();
    }
  });

  it('a run that waits longer than the queue time-out gets a 429 instead of hanging', async () => {
    const one = new Sandbox({ ...DEFAULT_SANDBOX_OPTIONS, workers: 1, queueMax: 5, queueTimeoutMs: 50 });
    try {
      const blocking = one.run({
        language: 'javascript',
        code: 'await new Promise(() => {})',
        args: {},
        secrets: {},
        timeoutMs: 1500,
      });
      await vi.waitFor(() => expect(one.stats().running).toBe(1));
      await expect(one.run({ language: 'javascript', code: 'return 1', args: {}, secrets: {} })).rejects.toMatchObject({
        statusCode: 429,
        message: expect.stringMatching(/stayed busy/),
      });
      await blocking;
    } finally {
      await one.close();
    }
  });

  it('runSandbox runs in the process-wide sandbox', async () => {
    const r = await runSandbox({
      language: 'javascript',
      code: 'return args.map((x) => x * 2)',
      args: [1, 2],
      secrets: {},
    });
    expect(r.result).toEqual([2, 4]);
  });
});
