import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { type Logger, RequestLogger } from './logger.ts';

/** A pino logger at `level` whose lines land in `lines`, parsed. */
function capture(level: string): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: pino({ level }, sink), lines };
}

describe('RequestLogger', () => {
  it('makes the child only when a line is written, and its lines carry the bindings', () => {
    const { log, lines } = capture('warn');
    const child = vi.spyOn(log, 'child');
    const req = new RequestLogger(log, { reqId: 'req_1' }, {});
    expect(req.level).toBe('warn');
    expect(child).not.toHaveBeenCalled();
    req.warn({ statusCode: 502 }, 'upstream failed');
    req.error('second');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toMatchObject([
      { level: 40, reqId: 'req_1', statusCode: 502, msg: 'upstream failed' },
      { level: 50, reqId: 'req_1', msg: 'second' },
    ]);
  });

  it('writes nothing below its level, reads a level given to it, and makes children of its own', () => {
    const { log, lines } = capture('info');
    const quiet = new RequestLogger(log, { reqId: 'req_2' }, { level: 'error' });
    expect(quiet.level).toBe('error');
    quiet.info('hidden');
    expect(lines).toEqual([]);
    const req = new RequestLogger(log, { reqId: 'req_3' }, {});
    req.child({ step: 'upstream' }).info('nested');
    req.level = 'error';
    expect(req.level).toBe('error');
    req.info('hidden too');
    expect(lines).toMatchObject([{ level: 30, reqId: 'req_3', step: 'upstream', msg: 'nested' }]);
    expect(lines).toHaveLength(1);
  });
});
