// The Python sandbox process: Pyodide in a child process that runs ONE run and exits (nothing of one run can
// wait for the next). The parent starts it with an empty environment, Node's permission model (reads of this
// file, output.mjs and the Pyodide package only; no writes, child processes or workers) and no code generation
// from strings; once Pyodide is loaded the globals that reach the host (process, fetch, WebSocket ...) are
// removed, and `import js` sees an empty object. Python's `fetch` goes through the parent (the SSRF guard), over IPC.
import { constants as fsConstants, readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Output } from './output.mjs';

// Kept in this module's scope before the globals are removed: the IPC channel and the exit.
const proc = process;
const send = (msg) => proc.send(msg);
const exit = (code) => proc.exit(code);

// `snapshot`: load Pyodide, answer a memory snapshot of the fresh interpreter and exit (made once per service
// process, before any tool code runs). `run`: load from that snapshot (about ten times faster) and serve a run.
const [pyodideUrl, mode, snapshotPath] = proc.argv.slice(2);
// Emscripten's NODEFS reads fs flags through process.binding, which the permission model refuses: the same
// constants from node:fs instead.
const denied = proc.binding;
proc.binding = (name) => (name === 'constants' ? { fs: fsConstants, os: osConstants } : denied.call(proc, name));
const { loadPyodide } = await import(pyodideUrl);

let stdout = null;
let stderr = null;
const pyodide = await loadPyodide({
  jsglobals: Object.create(null),
  env: { HOME: '/home/pyodide', LANG: 'C.UTF-8' },
  stdout: (line) => stdout?.write(`${line}\n`),
  stderr: (line) => stderr?.write(`${line}\n`),
  ...(mode === 'snapshot' ? { _makeSnapshot: true } : {}),
  ...(mode === 'run' && snapshotPath ? { _loadSnapshot: readFileSync(snapshotPath) } : {}),
});
if (mode === 'snapshot') {
  send({ type: 'snapshot', bytes: pyodide.makeMemorySnapshot() });
  await new Promise(() => {}); // the parent kills it once the snapshot is written
}

// `import js` and `import pyodide_js` would hand Python the host's JavaScript objects: unregistered.
pyodide.unregisterJsModule('js');
pyodide.unregisterJsModule('pyodide_js');
pyodide.runPython(`
import sys
for name in [m for m in sys.modules if m == 'js' or m.startswith(('js.', 'pyodide_js'))]:
    del sys.modules[name]
del sys, name
`);

for (const name of [
  'process',
  'fetch',
  'WebSocket',
  'EventSource',
  'Request',
  'Response',
  'Headers',
  'XMLHttpRequest',
  'require',
  'module',
  'Buffer',
  'global',
  'navigator',
]) {
  try {
    delete globalThis[name];
  } catch {}
}

// The process object stays reachable from this module only, and without what would reach further.
for (const name of ['binding', '_linkedBinding', 'dlopen', 'getBuiltinModule', 'chdir', 'kill', 'setuid', 'setgid']) {
  try {
    proc[name] = undefined;
  } catch {}
}

const pendingFetches = new Map();
let nextCallId = 0;

proc.on('message', async (msg) => {
  if (msg.type === 'fetch-result') {
    pendingFetches.get(msg.callId)?.(msg);
    pendingFetches.delete(msg.callId);
    return;
  }
  if (msg.type !== 'run') return;
  stdout = new Output(msg.outputLimit);
  stderr = new Output(msg.outputLimit);
  let fetches = 0;
  // `await fetch(url, method=..., headers=..., body=...)` in Python: a dict {status, ok, url, headers, body}.
  const hostFetch = (url, init) =>
    new Promise((resolve, reject) => {
      if (++fetches > msg.maxFetches) {
        reject(new Error(`At most ${msg.maxFetches} fetches per run`));
        return;
      }
      const callId = ++nextCallId;
      pendingFetches.set(callId, (answer) => {
        if (answer.ok) resolve(JSON.stringify(answer.response));
        else reject(new Error(answer.message));
      });
      send({ type: 'fetch', callId, url: String(url), init: JSON.parse(String(init)) });
    });
  const started = performance.now();
  let result = null;
  let error = null;
  let ran = true;
  try {
    const globals = pyodide.globals.get('dict')();
    globals.set('__host_fetch', hostFetch);
    globals.set('__args_json', JSON.stringify(msg.args ?? null));
    globals.set('__secrets_json', JSON.stringify(msg.secrets ?? {}));
    await pyodide.runPythonAsync(
      `
import json as __json
from types import MappingProxyType as __Frozen
args = __json.loads(__args_json)
secrets = __Frozen(__json.loads(__secrets_json))
class FetchError(Exception):
    pass
def __make_fetch(host):
    async def fetch(url, method='GET', headers=None, body=None):
        """fetch(url, method='GET', headers=None, body=None) -> {status, ok, url, headers, body}; through the SSRF guard."""
        init = __json.dumps({'method': method, 'headers': dict(headers or {}), 'body': body})
        try:
            raw = await host(str(url), init)
        except Exception as e:
            raise FetchError(str(getattr(e, 'message', e)).removeprefix('Error: ')) from None
        answer = __json.loads(raw)
        answer['ok'] = 200 <= answer['status'] < 300
        return answer
    return fetch
fetch = __make_fetch(__host_fetch)
del __make_fetch, __host_fetch, __args_json, __secrets_json, __Frozen
result = None
`,
      { globals },
    );
    // A syntax error is found before anything runs (and the run is not billed).
    globals.set('__code', msg.code);
    const syntax = pyodide.runPython(
      `
import ast as __ast
try:
    compile(__code, 'tool.py', 'exec', flags=__ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    __syntax = None
except SyntaxError as e:
    __syntax = f'{e.msg} (line {e.lineno})'
del __code
__syntax`,
      { globals },
    );
    if (syntax) {
      ran = false;
      throw Object.assign(new Error(syntax), { sandboxName: 'SyntaxError' });
    }
    await pyodide.runPythonAsync(msg.code, { globals, filename: 'tool.py' });
    const encoded = pyodide.runPython(
      `
try:
    __out = __json.dumps(result, default=str)
except Exception as e:
    raise TypeError(f'result is not JSON: {e}') from None
__out`,
      { globals },
    );
    if (encoded.length > msg.resultLimit) {
      error = {
        name: 'ResultTooLargeError',
        message: `The result is ${encoded.length} characters as JSON; at most ${msg.resultLimit}`,
      };
    } else {
      result = JSON.parse(encoded);
    }
  } catch (err) {
    error = pythonError(err);
  }
  send({
    type: 'done',
    stdout: stdout.text(),
    stderr: stderr.text(),
    result,
    error,
    ran,
    durationMs: performance.now() - started,
  });
});

/** A PythonError as {name, message}: the exception's type and its text, from the traceback's last line. */
function pythonError(err) {
  const text = String(err?.message ?? err);
  if (err?.sandboxName) return { name: err.sandboxName, message: text };
  if (err?.type) {
    const lines = text.trim().split('\n');
    const last = lines.at(-1) ?? '';
    const at = last.indexOf(': ');
    const message = at >= 0 && last.slice(0, at).endsWith(err.type) ? last.slice(at + 2) : last;
    const where = lines.filter((l) => l.includes('File "tool.py"')).at(-1);
    const line = where ? /line (\d+)/.exec(where)?.[1] : undefined;
    return { name: err.type, message: (line ? `${message} (line ${line})` : message).slice(0, 4000) };
  }
  return { name: 'Error', message: text.slice(0, 4000) };
}

// Exercise the interpreter once before saying ready: the first calls compile and tier up much of Pyodide's
// WebAssembly, which would otherwise happen inside (and be billed to) the first run.
await pyodide.runPythonAsync(
  "import json, ast\ncompile('x = 1', 'warm.py', 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)\njson.loads(json.dumps({'a': [sum(i for i in range(20000))]}))",
  { globals: pyodide.globals.get('dict')() },
);
send({ type: 'ready' });
void exit; // exits when the parent disconnects or kills it
