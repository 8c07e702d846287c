import { describe, expect, it } from 'vitest';
import { BackgroundTasks } from './background.ts';
import type { Logger } from './logger.ts';

describe('BackgroundTasks', () => {
  it('drain waits for tracked work, also work started by it; a failure is logged, never thrown', async () => {
    const logged: unknown[] = [];
    const background = new BackgroundTasks({ error: (...args: unknown[]) => logged.push(args) } as unknown as Logger);
    const done: string[] = [];
    const later = (ms: number, what: string) => new Promise<void>((r) => setTimeout(() => r(void done.push(what)), ms));
    background.track('first', later(20, 'first'));
    background.track(
      'chained',
      later(5, 'chained').then(() => background.track('second', later(20, 'second'))),
    );
    background.track('failing', Promise.reject(new Error('boom')));
    await background.drain();
    expect(done.sort()).toEqual(['chained', 'first', 'second']);
    expect(logged).toEqual([[{ err: new Error('boom'), what: 'failing' }, 'background task failed']]);
    await background.drain(); // nothing left: resolves at once
  });

  it('work tracked twice (one batch of charges, many callers) is waited for and logged once', async () => {
    const logged: unknown[] = [];
    const background = new BackgroundTasks({ error: (...args: unknown[]) => logged.push(args) } as unknown as Logger);
    let fail: (err: Error) => void = () => {};
    const batch = new Promise<void>((_, reject) => {
      fail = reject;
    });
    for (let i = 0; i < 3; i++) background.track('settle credits', batch);
    let drained = false;
    const draining = background.drain().then(() => {
      drained = true;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(drained).toBe(false);
    fail(new Error('batch failed'));
    await draining;
    expect(logged).toEqual([[{ err: new Error('batch failed'), what: 'settle credits' }, 'background task failed']]);
  });
});
