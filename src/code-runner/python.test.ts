import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SANDBOX_OPTIONS, Sandbox, type SandboxRequest } from './index.ts';
import { type FakeWeb, startFakeWeb } from './test-support.ts';

/**
 * Python in Pyodide, one locked-down child process per run: the same promises as JavaScript's
 * (sandbox.test.ts) — arguments in and a value out, limits, nothing of the host in reach.
 */

let web: FakeWeb;
let sandbox: Sandbox;

beforeAll(async () => {
  web = await startFakeWeb();
  sandbox = new Sandbox({ ...DEFAULT_SANDBOX_OPTIONS, allowHosts: [web.allowHost], pythonMemoryBytes: 384 << 20 });
  // The first run loads Pyodide (seconds of CPU, many more on a busy machine): here, under the hook's limit.
  await sandbox.run({ language: 'python', code: 'result = 1', args: {}, secrets: {} });
});

/** Each run waits for a fresh process: generous on a machine running other suites at once. */
const SLOW = { timeout: 90_000 };

afterAll(async () => {
  await sandbox.close();
  web.close();
});

const py = (code: string, extra: Partial<SandboxRequest> = {}) =>
  sandbox.run({ language: 'python', code, args: {}, secrets: {}, ...extra });

describe('Python in Pyodide', SLOW, () => {
  it('arguments in, `result` out, print captured', async () => {
    const r = await py(
      'import sys\nprint("adding", args["a"], "and", args["b"])\nprint("to stderr", file=sys.stderr)\nresult = {"sum": args["a"] + args["b"], "items": [1, "two", None]}',
      { args: { a: 2, b: 40 } },
    );
    expect(r).toMatchObject({
      stdout: 'adding 2 and 40\n',
      stderr: 'to stderr\n',
      result: { sum: 42, items: [1, 'two', null] },
      error: null,
    });
  });

  it('no result is null; top-level await works', async () => {
    expect((await py('x = 1')).result).toBeNull();
    expect((await py('import asyncio\nawait asyncio.sleep(0.01)\nresult = "awaited"')).result).toBe('awaited');
  });

  it("the code's exception is answered with its type, message and line; syntax errors too", async () => {
    expect((await py('x = 1\nraise ValueError("bad input")')).error).toEqual({
      name: 'ValueError',
      message: 'bad input (line 2)',
    });
    const syntax = await py('x = (');
    expect(syntax.error).toEqual({ name: 'SyntaxError', message: "'(' was never closed (line 1)" });
    expect((await py('result = object()')).error).toBeNull(); // not JSON: its str() instead
  });

  it('output past the limit is cut with a marker, as in JavaScript', async () => {
    const r = await py('line = "y" * 10000\nfor i in range(200):\n    print(line)\nresult = 1');
    expect(r.stdout.length).toBeLessThan(1024 * 1024 + 200);
    expect(r.stdout).toMatch(/\[output cut at 1048576 characters\]\n$/);
    expect(r.result).toBe(1);
  });

  it("an error's name is cut like its message, and a result nested deeper than 64 levels is an error", async () => {
    const named = await py('raise type("N" * 3000000, (Exception,), {})("m" * 10000)');
    expect(named.error?.name).toBe('N'.repeat(200));
    expect(named.error?.message.length).toBeLessThanOrEqual(4000);
    const deep = await py('v = 1\nfor i in range(3000):\n    v = [v]\nresult = v');
    expect(deep).toMatchObject({
      result: null,
      error: {
        name: 'ResultTooDeepError',
        message: 'The returned value nests arrays and objects more than 64 levels deep',
      },
    });
  });

  it('an infinite loop is stopped at the limit', async () => {
    const r = await py('while True:\n    pass', { timeoutMs: 1000 });
    expect(r.error).toEqual({
      name: 'TimeoutError',
      message: 'The run took longer than its 1000 ms limit and was stopped',
    });
    expect(r.durationMs).toBeGreaterThanOrEqual(1000);
  });

  it('a memory bomb is stopped by the memory watch, and the next run is fine', async () => {
    const r = await py('keep = []\nwhile True:\n    keep.append(bytearray(8 * 1024 * 1024))');
    expect(r.error).toEqual({ name: 'MemoryLimitError', message: 'The run used more than its 384 MB of memory' });
    expect((await py('result = "still here"')).result).toBe('still here');
  });
});

describe('what Python code can reach', SLOW, () => {
  it('neither the host environment nor its files, JavaScript globals or sockets', async () => {
    process.env.SANDBOX_TEST_HOST_SECRET = 'host-secret-value';
    const r = await py(`
import os, sys
out = {}
def attempt(name, f):
    try:
        out[name] = 'reached: ' + repr(f())[:80]
    except BaseException as e:
        out[name] = type(e).__name__
attempt('js', lambda: __import__('js'))
attempt('pyodide_js', lambda: __import__('pyodide_js'))
def run_js():
    from pyodide.code import run_js
    return run_js('process.env')
attempt('run_js', run_js)
def via_function():
    return fetch.__closure__[0].cell_contents.constructor('return process')()
attempt('via_function', via_function)
attempt('passwd', lambda: open('/etc/passwd').read())
attempt('host_file', lambda: open('${import.meta.filename}').read())
def connect():
    import socket
    socket.create_connection(('127.0.0.1', ${web.internalPort}), timeout=2)
attempt('socket', connect)
def urlopen():
    import urllib.request
    return urllib.request.urlopen('http://127.0.0.1:${web.internalPort}/', timeout=2).read()
attempt('urlopen', urlopen)
out['environ'] = sorted(os.environ)
result = out
`);
    expect(r.error).toBeNull();
    const out = r.result as Record<string, unknown>;
    for (const key of ['js', 'pyodide_js', 'run_js', 'via_function', 'passwd', 'host_file', 'socket', 'urlopen']) {
      expect(String(out[key]), key).not.toMatch(/^reached/);
    }
    expect(out.via_function).toBe('JsException'); // EvalError: code generation from strings is disallowed
    expect(JSON.stringify(r)).not.toContain('host-secret-value');
    expect(out.environ).not.toContain('SANDBOX_TEST_HOST_SECRET');
    delete process.env.SANDBOX_TEST_HOST_SECRET;
  });

  it('secrets are read-only and the run’s own; a run that patches the interpreter leaves nothing for the next', async () => {
    const first = await py(
      'import builtins, json\nbuiltins.stolen = dict(secrets)\njson.loads = lambda *a, **k: {"patched": True}\ntry:\n    secrets["API_KEY"] = "x"\n    writable = True\nexcept TypeError:\n    writable = False\nresult = {"key": secrets["API_KEY"], "writable": writable}',
      { secrets: { API_KEY: 'key-of-tool-a' } },
    );
    expect(first.result).toEqual({ key: 'key-of-tool-a', writable: false });
    const second = await py(
      'import builtins\nresult = {"stolen": getattr(builtins, "stolen", None), "keys": list(secrets)}',
      { secrets: { OTHER: 'key-of-tool-b' } },
    );
    expect(second).toMatchObject({ result: { stolen: null, keys: ['OTHER'] }, error: null });
  });

  it('concurrent runs are isolated', async () => {
    const runs = await Promise.all(
      [0, 1, 2].map((n) =>
        py(
          'import builtins\nbuiltins.mine = args["n"]\nresult = {"n": args["n"], "mine": builtins.mine, "s": secrets["S"]}',
          {
            args: { n: n },
            secrets: { S: `s${n}` },
          },
        ),
      ),
    );
    expect(runs.map((r) => r.result)).toEqual([0, 1, 2].map((n) => ({ n, mine: n, s: `s${n}` })));
  });

  it('fetch works in a run whose limit is under the fetch cap (15 s): the time left is whole milliseconds', async () => {
    const r = await py('r = await fetch(args["url"] + "/short")\nresult = __import__("json").loads(r["body"])["url"]', {
      args: { url: web.origin },
      timeoutMs: 8000,
    });
    expect(r).toMatchObject({ error: null, result: '/short' });
  });

  it('fetch reaches an allowed host and refuses loopback in every spelling, private ranges and metadata', async () => {
    const ok = await py(
      'r = await fetch(args["url"] + "/echo", method="POST", headers={"authorization": "Bearer " + secrets["T"]}, body="hi")\nresult = {"status": r["status"], "ok": r["ok"], "header": r["headers"]["x-fake"], "json": __import__("json").loads(r["body"])}',
      { args: { url: web.origin }, secrets: { T: 't0k' } },
    );
    expect(ok).toMatchObject({
      error: null,
      result: {
        status: 200,
        ok: true,
        header: 'yes',
        json: { method: 'POST', url: '/echo', body: 'hi', auth: 'Bearer t0k' },
      },
    });
    const refused = await py(
      'out = {}\nfor url in args["urls"]:\n    try:\n        r = await fetch(url)\n        out[url] = "fetched " + r["body"]\n    except FetchError as e:\n        out[url] = "FetchError: " + str(e)\nresult = out',
      { args: { urls: web.refusedUrls }, timeoutMs: 20_000 },
    );
    expect(refused.error).toBeNull();
    const outcome = refused.result as Record<string, string>;
    for (const url of web.refusedUrls) expect(outcome[url], url).toMatch(/^FetchError: /);
    expect(outcome['http://169.254.169.254/latest/meta-data/']).toMatch(/not a public address/);
  });
});
