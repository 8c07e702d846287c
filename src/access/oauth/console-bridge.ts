import type { Logger } from '../../lib/logger.ts';

const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
const PREFIX = /^oidc-provider (WARNING|NOTICE): /;

let target: Logger | undefined;

/**
 * oidc-provider prints its warnings and notices ("Unsupported runtime", experimental features ...) with
 * console.warn and console.info: raw lines amid our JSON log, which log shippers cannot parse. Those lines go
 * through the logger instead (the latest one given: one per process in production); anything else printed
 * with console passes untouched.
 */
export function routeOidcConsole(log: Logger): void {
  const installed = target !== undefined;
  target = log;
  if (installed) return;
  for (const method of ['warn', 'info'] as const) {
    const original = console[method].bind(console);
    console[method] = (...args: unknown[]) => {
      const text = typeof args[0] === 'string' ? args[0].replace(ANSI_COLOUR, '') : '';
      const match = PREFIX.exec(text);
      if (!match || !target) return original(...args);
      const message = text.slice(match[0].length);
      if (match[1] === 'WARNING') target.warn({ source: 'oidc-provider' }, message);
      else target.info({ source: 'oidc-provider' }, message);
    };
  }
}
