import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { Cancel } from '../lib/cancel.ts';
import type { SseEvent } from '../lib/sse.ts';
import { EventStream } from './http.ts';

/** A stream's flow as undici hands it over: whether it is paused, how often it was told to, why it was aborted. */
function fakeController() {
  const state = { paused: false, pauses: 0, resumes: 0, aborted: undefined as Error | undefined };
  const controller = {
    get paused() {
      return state.paused;
    },
    aborted: false,
    reason: null,
    pause() {
      state.paused = true;
      state.pauses++;
    },
    resume() {
      state.paused = false;
      state.resumes++;
    },
    abort(reason: Error) {
      state.aborted = reason;
    },
  } as unknown as Dispatcher.DispatchController;
  return { controller, state };
}

/** A stream whose answer has begun, fed by the test as undici would feed it. */
function begun() {
  const { controller, state } = fakeController();
  const stream = new EventStream<SseEvent>(
    new Cancel(),
    (e) => e,
    async (s) => s.attach(controller),
  );
  const first = stream.next();
  return { stream, state, first };
}

describe('EventStream back-pressure', () => {
  it('pauses the upstream once its unread events hold more than 256 KB, also when each arrived in many pieces', async () => {
    const { stream, state, first } = begun();
    // A 1 MB event in 16 KB pieces: the piece that completes it is small, the event is not.
    const event = Buffer.from(`data: ${'x'.repeat(1024 * 1024)}\n\n`);
    for (let at = 0; at < event.length; at += 16 * 1024) stream.data(event.subarray(at, at + 16 * 1024));
    expect(state.paused).toBe(true);
    expect(state.pauses).toBe(1);
    // The reader takes it: the queue is empty, the upstream flows again.
    const ev = await first;
    expect(ev.done).toBe(false);
    expect((ev.value as SseEvent).data.length).toBe(1024 * 1024);
    expect(state.paused).toBe(false);
    expect(state.resumes).toBe(1);
  });

  it('lets small unread events under the bound flow without pausing', async () => {
    const { stream, state, first } = begun();
    const event = `data: ${'y'.repeat(1000)}\n\n`;
    for (let i = 0; i < 200; i++) stream.data(Buffer.from(event));
    expect(state.pauses).toBe(0);
    stream.data(Buffer.from(event.repeat(70))); // 270 events of 1,000 bytes: past 256 KB
    expect(state.pauses).toBe(1);
    expect((await first).done).toBe(false);
  });

  it('hands over the events a piece completed before failing on the one over 32 MB that follows them', async () => {
    const { stream, state, first } = begun();
    const huge = Buffer.alloc(33 * 1024 * 1024, 'x');
    stream.data(Buffer.concat([Buffer.from('data: {"n":1}\n\ndata: '), huge]));
    expect(state.aborted?.message).toBe('The model provider sent a stream event larger than 32 MB');
    stream.end(state.aborted); // undici ends the answer with the abort's reason
    expect(await first).toEqual({ done: false, value: { event: undefined, data: '{"n":1}' } });
    await expect(stream.next()).rejects.toMatchObject({ fault: 'failed', message: state.aborted?.message });
  });
});
