import { DEFAULT_SANDBOX_OPTIONS, Sandbox } from './sandbox.ts';
import type { SandboxRequest, SandboxResult } from './types.ts';

/**
 * The code sandbox: a tool's code runs with its arguments and declared secrets and nothing else of the host.
 *
 * - `javascript` / `typescript` (types stripped by esbuild): the code is the body of an async function of
 *   `args` and `secrets`; what it returns is the result. It runs in QuickJS inside a worker thread: a fresh
 *   QuickJS instance per run, its WebAssembly memory bounded, interrupted at the wall-clock limit. In scope:
 *   `args`, `secrets` (frozen), `console.log/info/debug` (stdout), `console.warn/error` (stderr), `fetch`
 *   (http(s) through the SSRF guard; `Response` with `status`, `ok`, `headers.get`, `text()`, `json()`).
 * - `python`: in Pyodide, one locked-down child process per run (python-pool.ts); the code sets `result`.
 *
 * `runSandbox` is pure runtime (no billing, no database); services bill through modules/sandbox/service.ts
 * and use their app's own `deps.sandbox` (started lazily, closed with the app).
 */
export {
  compileFunction,
  DEFAULT_SANDBOX_OPTIONS,
  effectiveTimeout,
  Sandbox,
  type SandboxOptions,
} from './sandbox.ts';
export {
  SANDBOX_DEFAULT_TIMEOUT_MS,
  SANDBOX_LANGUAGES,
  SANDBOX_MAX_TIMEOUT_MS,
  SANDBOX_OUTPUT_LIMIT,
  SANDBOX_RESULT_LIMIT,
  type SandboxLanguage,
  type SandboxRequest,
  type SandboxResult,
  type SandboxTier,
  tierOf,
} from './types.ts';

let shared: Sandbox | undefined;

/** Runs code in the process-wide sandbox (default options, started on first use). */
export function runSandbox(req: SandboxRequest): Promise<SandboxResult> {
  shared ??= new Sandbox(DEFAULT_SANDBOX_OPTIONS);
  return shared.run(req);
}

/** Stops the process-wide sandbox of `runSandbox` (the next call starts a new one). */
export async function closeSharedSandbox(): Promise<void> {
  const s = shared;
  shared = undefined;
  await s?.close();
}
