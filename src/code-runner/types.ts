/** The languages a tool's code may be written in. */
export const SANDBOX_LANGUAGES = ['javascript', 'typescript', 'python'] as const;
export type SandboxLanguage = (typeof SANDBOX_LANGUAGES)[number];

/** A run's wall-clock limit when none is given. */
export const SANDBOX_DEFAULT_TIMEOUT_MS = 30_000;
/** The longest wall-clock limit a run may ask for; longer requests are cut to it. */
export const SANDBOX_MAX_TIMEOUT_MS = 120_000;
/** stdout and stderr are each cut past this many characters (with a marker saying so). */
export const SANDBOX_OUTPUT_LIMIT = 1024 * 1024;
/** The returned value, as JSON, may be at most this many characters. */
export const SANDBOX_RESULT_LIMIT = 1024 * 1024;
/** An error's name and message come back cut to these many characters. */
export const SANDBOX_ERROR_NAME_LIMIT = 200;
export const SANDBOX_ERROR_MESSAGE_LIMIT = 4000;
/** Fetches one run may make. */
export const SANDBOX_MAX_FETCHES = 50;
/** The largest body one fetch reads. */
export const SANDBOX_FETCH_MAX_BYTES = 5 * 1024 * 1024;

export interface SandboxRequest {
  language: SandboxLanguage;
  /** JavaScript/TypeScript: the body of an async function (`return` gives the result). Python: sets `result`. */
  code: string;
  /** The tool's validated arguments: `args` in the code. */
  args: unknown;
  /** Only the secrets the tool declares: `secrets` in the code. */
  secrets: Record<string, string>;
  /** Wall-clock limit (default SANDBOX_DEFAULT_TIMEOUT_MS, at most SANDBOX_MAX_TIMEOUT_MS). */
  timeoutMs?: number;
}

export interface SandboxResult {
  stdout: string;
  stderr: string;
  /** What the code returned (JavaScript) or set as `result` (Python), as JSON; null when nothing. */
  result: unknown;
  /** Why the run failed: the code's own error, `TimeoutError`, `MemoryLimitError`, `SyntaxError` ... */
  error: { name: string; message: string } | null;
  /** Time the code ran (what is billed), milliseconds. */
  durationMs: number;
}

/** Which sandbox a language runs in: the in-process QuickJS workers or the Python process pool. */
export type SandboxTier = 'quickjs' | 'process';

export function tierOf(language: SandboxLanguage): SandboxTier {
  return language === 'python' ? 'process' : 'quickjs';
}
