import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BackgroundTasks } from './background.ts';
import { GroupCommit, WriteSchedule } from './group-commit.ts';
import type { Logger } from './logger.ts';

/**
 * A queue written by a WriteSchedule whose every batch takes `writeMs`; records when each batch started and ended
 * (ms since the schedule was made).
 */
function scheduled(windowMs: number, writeMs: number, max = 1000) {
  const queue: number[] = [];
  const batches: Array<{ items: number[]; start: number; end: number }> = [];
  const t0 = Date.now();
  const schedule = new WriteSchedule({
    windowMs,
    max,
    writeOne: async () => {
      if (!queue.length) return; // nothing due: a flush wrote it
      const batch = { items: queue.splice(0), start: Date.now() - t0, end: 0 };
      await new Promise((r) => setTimeout(r, writeMs));
      batch.end = Date.now() - t0;
      batches.push(batch);
    },
    more: () => queue.length > 0,
    onError: (err) => {
      throw err;
    },
  });
  const add = (n: number) => {
    queue.push(n);
    schedule.queued(queue.length);
  };
  return { queue, batches, schedule, add };
}

describe('WriteSchedule', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('under a steady stream writes one batch a window, not one as soon as the last one ended', async () => {
    const { batches, add } = scheduled(20, 5);
    for (let n = 0; n < 100; n++) {
      add(n);
      await vi.advanceTimersByTimeAsync(2);
    }
    await vi.advanceTimersByTimeAsync(100);
    // Every item once, in order.
    expect(batches.flatMap((b) => b.items)).toEqual(Array.from({ length: 100 }, (_, n) => n));
    // The first waited its window; each later one started at least a window after the one before.
    expect(batches[0]?.start).toBe(20);
    for (let i = 1; i < batches.length; i++) {
      expect((batches[i]?.start ?? 0) - (batches[i - 1]?.start ?? 0)).toBeGreaterThanOrEqual(20);
    }
    // 200 ms of items: about one batch a window, where writing back to back made one every 5 ms.
    expect(batches.length).toBeLessThanOrEqual(11);
  });

  it('writes nothing before the window, and nothing at all when nothing was queued', async () => {
    const { batches, add } = scheduled(20, 5);
    await vi.advanceTimersByTimeAsync(100);
    expect(batches).toHaveLength(0);
    add(1);
    await vi.advanceTimersByTimeAsync(19);
    expect(batches).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(6);
    expect(batches.map((b) => b.items)).toEqual([[1]]);
  });

  it('writes a full batch at once, without waiting for the window', async () => {
    const { batches, add } = scheduled(20, 5, 3);
    add(1);
    add(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toHaveLength(0);
    add(3);
    await vi.advanceTimersByTimeAsync(5);
    expect(batches.map((b) => [b.items, b.start])).toEqual([[[1, 2, 3], 1]]);
  });

  it('flush writes at once, also what arrives while it writes, and resolves once nothing is left', async () => {
    const { batches, schedule, add, queue } = scheduled(20, 5);
    add(1);
    add(2);
    const flushed = schedule.flush();
    expect(schedule.writing).toBeDefined();
    add(3); // arrives during the write
    await vi.advanceTimersByTimeAsync(10);
    await flushed;
    expect(batches.map((b) => b.items)).toEqual([[1, 2], [3]]);
    expect(batches[0]?.start).toBe(0);
    expect(queue).toHaveLength(0);
    expect(schedule.writing).toBeUndefined();
    // The window's timer was cleared: nothing more is written.
    await vi.advanceTimersByTimeAsync(100);
    expect(batches).toHaveLength(2);
  });
});

describe('GroupCommit.writeQueued', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A group commit whose every write takes `writeMs`, recording its batches and when each started. */
  const commit = (windowMs: number, writeMs: number) => {
    const log = pino({ level: 'silent' }) as unknown as Logger;
    const batches: Array<{ items: number[]; start: number }> = [];
    const t0 = Date.now();
    const gc = new GroupCommit<number>({
      what: 'test writes',
      windowMs,
      log,
      background: new BackgroundTasks(log),
      write: async (items) => {
        batches.push({ items, start: Date.now() - t0 });
        await new Promise((r) => setTimeout(r, writeMs));
      },
    });
    return { gc, batches };
  };

  it('writes what is queued at once, and what is queued after it in its window', async () => {
    const { gc, batches } = commit(20, 5);
    void gc.add(1);
    const two = gc.add(2);
    void gc.writeQueued();
    void gc.add(3);
    await vi.advanceTimersByTimeAsync(5);
    expect(await two).toBe(true);
    expect(batches).toEqual([{ items: [1, 2], start: 0 }]);
    await vi.advanceTimersByTimeAsync(30);
    expect(batches).toEqual([
      { items: [1, 2], start: 0 },
      { items: [3], start: 20 },
    ]);
  });

  it('after the batch being written, writes only what was queued when it was called', async () => {
    const { gc, batches } = commit(20, 5);
    void gc.add(1);
    void gc.writeQueued(); // a batch in progress: [1]
    const two = gc.add(2);
    void gc.writeQueued(); // waits for [1], then writes [2] alone
    void gc.add(3);
    void gc.add(4);
    await vi.advanceTimersByTimeAsync(10);
    expect(await two).toBe(true);
    expect(batches).toEqual([
      { items: [1], start: 0 },
      { items: [2], start: 5 },
    ]);
    await vi.advanceTimersByTimeAsync(30);
    expect(batches.at(-1)).toEqual({ items: [3, 4], start: 20 });
  });

  it('with pick, writes at once only what it picks of what is queued, ahead of the rest, which keeps its window', async () => {
    const { gc, batches } = commit(20, 5);
    const even = (n: number) => n % 2 === 0;
    const written: number[] = [];
    for (const n of [1, 2, 3, 4]) void gc.add(n).then(() => written.push(n));
    void gc.writeQueued(even);
    void gc.add(6).then(() => written.push(6)); // queued after the call: keeps its window
    await vi.advanceTimersByTimeAsync(5);
    expect(batches).toEqual([{ items: [2, 4], start: 0 }]);
    expect(written).toEqual([2, 4]);
    await vi.advanceTimersByTimeAsync(30);
    expect(batches).toEqual([
      { items: [2, 4], start: 0 },
      { items: [1, 3, 6], start: 20 },
    ]);
    expect(written).toEqual([2, 4, 1, 3, 6]);
  });

  it('with pick, after the batch being written, writes only what it picks of what was queued when called', async () => {
    const { gc, batches } = commit(20, 5);
    void gc.add(2);
    void gc.writeQueued(); // a batch in progress: [2]
    void gc.add(3);
    void gc.add(4);
    void gc.writeQueued((n) => n % 2 === 0); // waits for [2], then writes [4] alone
    void gc.add(8);
    await vi.advanceTimersByTimeAsync(10);
    expect(batches).toEqual([
      { items: [2], start: 0 },
      { items: [4], start: 5 },
    ]);
    await vi.advanceTimersByTimeAsync(30);
    expect(batches.at(-1)).toEqual({ items: [3, 8], start: 20 });
  });

  it('with pick and nothing to pick, writes nothing at once', async () => {
    const { gc, batches } = commit(20, 5);
    void gc.add(1);
    await gc.writeQueued((n) => n % 2 === 0);
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(25);
    expect(batches).toEqual([{ items: [1], start: 20 }]);
  });
});
