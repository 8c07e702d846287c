import type { BaseLogger, Bindings, ChildLoggerOptions } from 'pino';

/**
 * The structured logger every layer below HTTP takes: pino's methods, which is what fastify hands out as
 * `app.log`. Services and jobs name this type rather than fastify's, so they never depend on the transport.
 */
export interface Logger
  extends Pick<BaseLogger, 'level' | 'info' | 'error' | 'debug' | 'fatal' | 'warn' | 'trace' | 'silent'> {
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger;
}

/**
 * A request's logger (fastify's `childLoggerFactory`): the child bound to the request id is made on the first line
 * the request writes, not for every request: at `LOG_LEVEL=warn` a request writes none unless it fails, and making
 * pino's child showed in the gateway's CPU profile (docs/gateway-speed.md). Until then the level read is the
 * one the child would have.
 */
export class RequestLogger implements Logger {
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): Logger {
    if (!this.made) this.made = this.parent.child(this.bindings, this.options);
    return this.made;
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.real.child(bindings, options);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(...args: unknown[]): void {
    this.write('silent', args);
  }

  private write(level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent', args: unknown[]): void {
    const real = this.real;
    Reflect.apply(real[level], real, args);
  }
}
