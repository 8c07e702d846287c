import type { BaseLogger, Bindings, ChildLoggerOptions } from 'pino';

/**
 * The structured logger every layer below HTTP takes: pino's methods, which is what fastify hands out as
 * `app.log`. Services and jobs name this type rather than fastify's, so they never depend on the transport.
 */
export interface Logger
  extends Pick<BaseLogger, 'level' | 'info' | 'error' | 'debug' | 'fatal' | 'warn' | 'trace' | 'silent'> {
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger;
}
