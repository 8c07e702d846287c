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
});
