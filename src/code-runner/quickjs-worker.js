// The QuickJS sandbox worker (a worker_thread; plain JavaScript so the bundled service and the tests load it
// as is). One run at a time, each in a fresh QuickJS module instance whose WebAssembly memory is bounded: a
// memory bomb fails inside that memory and the instance is dropped. Nothing of the host is in scope: QuickJS
// has no process, require, file system or timers; the bridge adds console, fetch (performed by the parent
// through the SSRF guard), args and secrets. See src/code-runner/index.ts for the contract.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import RELEASE_SYNC from '@jitl/quickjs-wasmfile-release-sync';
import { newQuickJSWASMModuleFromVariant, newVariant } from 'quickjs-emscripten-core';
import { Output } from './output.mjs';

const require = createRequire(import.meta.url);
// Compiled once per worker; every run instantiates it again with its own memory.
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')));
const PAGE = 64 * 1024;

/** Fetch answers from the parent, by call id. */
const pendingFetches = new Map();
let nextCallId = 0;

// Runs inside QuickJS before the tool's code: console and fetch over the two host functions, which it hides.
const PRELUDE = `(function (hostWrite, hostFetch) {
  'use strict';
  const LIMIT = 1048576;
  const fmt = (v) => {
    if (typeof v === 'string') return v;
    if (v instanceof Error) return String(v.stack ? v.name + ': ' + v.message + '\\n' + v.stack : v);
    try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch { return String(v); }
  };
  const writer = (fd) => (...a) => { const s = a.map(fmt).join(' ') + '\\n'; hostWrite(fd, s.length > LIMIT ? s.slice(0, LIMIT) : s); };
  globalThis.console = Object.freeze({ log: writer(1), info: writer(1), debug: writer(1), warn: writer(2), error: writer(2) });
  class Headers {
    constructor(h) { this._h = {}; for (const k of Object.keys(h || {})) this._h[k.toLowerCase()] = String(h[k]); }
    get(n) { const v = this._h[String(n).toLowerCase()]; return v === undefined ? null : v; }
    has(n) { return String(n).toLowerCase() in this._h; }
    entries() { return Object.entries(this._h)[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
  }
  class Response {
    constructor(r) { this.status = r.status; this.ok = r.status >= 200 && r.status < 300; this.url = r.url; this.headers = new Headers(r.headers); this._body = r.body; }
    async text() { return this._body; }
    async json() { return JSON.parse(this._body); }
  }
  globalThis.Headers = Headers;
  globalThis.Response = Response;
  globalThis.fetch = async (input, init) => {
    const o = init || {};
    let headers = o.headers || {};
    if (headers instanceof Headers) headers = Object.fromEntries(headers.entries());
    const body = o.body === undefined || o.body === null ? undefined : String(o.body);
    const raw = await hostFetch(String(input && input.url ? input.url : input), JSON.stringify({ method: o.method, headers, body }));
    return new Response(JSON.parse(raw));
  };
})`;

const isOutOfMemory = (err) =>
  /out of memory|OOM|memory access out of bounds|Cannot enlarge memory/i.test(String(err?.message ?? err));

function memoryError(bytes) {
  return {
    name: 'MemoryLimitError',
    message: `The run used more than its ${Math.round(bytes / 1048576)} MB of memory`,
  };
}

function timeoutError(ms) {
  return { name: 'TimeoutError', message: `The run took longer than its ${ms} ms limit and was stopped` };
}

/** A QuickJS error value as {name, message}. */
function errorOf(vm, handle, memoryBytes) {
  let dumped;
  try {
    dumped = vm.dump(handle);
  } catch {
    dumped = undefined;
  }
  const name = dumped && typeof dumped === 'object' && typeof dumped.name === 'string' ? dumped.name : 'Error';
  const message = dumped && typeof dumped === 'object' && 'message' in dumped ? String(dumped.message) : String(dumped);
  if (name === 'InternalError' && message === 'out of memory') return memoryError(memoryBytes);
  if (name === 'InternalError' && message === 'interrupted') return undefined; // the caller names the time-out
  return { name, message: message.slice(0, 4000) };
}

async function run(msg) {
  const { id, source, args, secrets, timeoutMs, memoryBytes, outputLimit, resultLimit } = msg;
  const started = performance.now();
  const deadline = Date.now() + timeoutMs;
  const stdout = new Output(outputLimit);
  const stderr = new Output(outputLimit);
  const deferreds = new Set();
  let result = null;
  let error = null;
  let vm;
  let rt;
  let timer;
  try {
    const memory = new WebAssembly.Memory({ initial: 256, maximum: Math.max(256, Math.floor(memoryBytes / PAGE)) });
    const mod = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmModule, wasmMemory: memory }));
    rt = mod.newRuntime();
    rt.setMemoryLimit(Math.floor(memoryBytes * 0.75));
    rt.setMaxStackSize(512 * 1024);
    rt.setInterruptHandler(() => Date.now() > deadline);
    vm = rt.newContext();
    const ctx = vm;

    const hostWrite = vm.newFunction('write', (fdH, textH) => {
      const fd = ctx.getNumber(fdH);
      (fd === 2 ? stderr : stdout).write(ctx.getString(textH));
    });
    let fetches = 0;
    const hostFetch = vm.newFunction('fetch', (urlH, initH) => {
      const deferred = ctx.newPromise();
      deferreds.add(deferred);
      const callId = ++nextCallId;
      const url = ctx.getString(urlH);
      let init = {};
      try {
        init = JSON.parse(ctx.getString(initH));
      } catch {}
      if (++fetches > msg.maxFetches) {
        const e = ctx.newError({ name: 'FetchError', message: `At most ${msg.maxFetches} fetches per run` });
        deferred.reject(e);
        e.dispose();
        return deferred.handle;
      }
      pendingFetches.set(callId, (answer) => {
        pendingFetches.delete(callId);
        if (!ctx.alive || !deferred.alive) return;
        if (answer.ok) {
          const h = ctx.newString(JSON.stringify(answer.response));
          deferred.resolve(h);
          h.dispose();
        } else {
          const e = ctx.newError({ name: 'FetchError', message: answer.message });
          deferred.reject(e);
          e.dispose();
        }
        const jobs = rt.executePendingJobs();
        if (jobs.error) jobs.error.dispose();
      });
      parentPort.postMessage({ type: 'fetch', runId: id, callId, url, init });
      return deferred.handle;
    });
    const prelude = vm.unwrapResult(vm.evalCode(PRELUDE, 'prelude.js'));
    vm.unwrapResult(vm.callFunction(prelude, vm.undefined, hostWrite, hostFetch)).dispose();
    prelude.dispose();
    hostWrite.dispose();
    hostFetch.dispose();

    const json = vm.getProp(vm.global, 'JSON');
    const parse = vm.getProp(json, 'parse');
    const stringify = vm.getProp(json, 'stringify');
    const fromJson = (value) => {
      const text = vm.newString(JSON.stringify(value ?? null));
      const h = vm.unwrapResult(vm.callFunction(parse, vm.undefined, text));
      text.dispose();
      return h;
    };
    const argsH = fromJson(args);
    const secretsH = fromJson(secrets);
    const freeze = vm.unwrapResult(vm.evalCode('Object.freeze'));
    vm.unwrapResult(vm.callFunction(freeze, vm.undefined, secretsH)).dispose();
    freeze.dispose();

    const compiled = vm.evalCode(source, 'tool.js');
    if (compiled.error) {
      error = errorOf(vm, compiled.error, memoryBytes) ?? timeoutError(timeoutMs);
      compiled.error.dispose();
    } else {
      const called = vm.callFunction(compiled.value, vm.undefined, argsH, secretsH);
      compiled.value.dispose();
      if (called.error) {
        error = errorOf(vm, called.error, memoryBytes) ?? timeoutError(timeoutMs);
        called.error.dispose();
      } else {
        const settled = vm.resolvePromise(called.value);
        called.value.dispose();
        const jobs = rt.executePendingJobs();
        if (jobs.error) jobs.error.dispose();
        const late = new Promise((resolve) => {
          timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
        });
        const outcome = await Promise.race([settled, late]);
        if (outcome === 'timeout' || Date.now() > deadline) {
          error = timeoutError(timeoutMs);
          if (outcome !== 'timeout') (outcome.error ?? outcome.value)?.dispose();
        } else if (outcome.error) {
          error = errorOf(vm, outcome.error, memoryBytes) ?? timeoutError(timeoutMs);
          outcome.error.dispose();
        } else {
          // Serialized inside QuickJS, and measured before copying out, so a huge value never reaches the host.
          const text = vm.callFunction(stringify, vm.undefined, outcome.value);
          outcome.value.dispose();
          if (text.error) {
            error = errorOf(vm, text.error, memoryBytes) ?? timeoutError(timeoutMs);
            text.error.dispose();
          } else {
            const type = vm.typeof(text.value);
            const length = type === 'string' ? vm.getNumber(vm.getProp(text.value, 'length')) : 0;
            if (length > resultLimit) {
              error = {
                name: 'ResultTooLargeError',
                message: `The returned value is ${length} characters as JSON; at most ${resultLimit}`,
              };
            } else if (type === 'string') {
              result = JSON.parse(vm.getString(text.value));
            }
            text.value.dispose();
          }
        }
      }
    }
    for (const h of [argsH, secretsH, parse, stringify, json]) h.dispose();
  } catch (err) {
    error = isOutOfMemory(err)
      ? memoryError(memoryBytes)
      : Date.now() > deadline
        ? timeoutError(timeoutMs)
        : { name: 'SandboxError', message: String(err?.message ?? err).slice(0, 2000) };
  } finally {
    clearTimeout(timer);
  }
  pendingFetches.clear(); // answers arriving later belong to no run
  const durationMs = performance.now() - started;
  // The instance is dropped either way; disposing is tidiness, and must not turn a result into an error.
  try {
    for (const d of deferreds) if (d.alive) d.dispose();
    vm?.dispose();
    rt?.dispose();
  } catch {}
  parentPort.postMessage({
    type: 'done',
    id,
    stdout: stdout.text(),
    stderr: stderr.text(),
    result: result === undefined ? null : result,
    error,
    durationMs,
  });
}

parentPort.on('message', (msg) => {
  if (msg.type === 'run') {
    void run(msg);
  } else if (msg.type === 'fetch-result') {
    pendingFetches.get(msg.callId)?.(msg);
  }
});
