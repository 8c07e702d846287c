import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../lib/logger.ts';
import type { LogOp } from './events.service.ts';
import { CONVERSATION_JOURNAL_DIR, ConversationJournal } from './journal.ts';

const at = new Date('2026-11-29T12:00:00.000Z');
const conversation: LogOp = {
  kind: 'conversation',
  row: { id: 'conv_1', accountId: 'acc_1', agentId: 'agt_1', endUserId: 'owner', title: 'Hi', at, lastActivityAt: at },
};
const message: LogOp = {
  kind: 'message',
  row: {
    id: 'msg_1',
    conversationId: 'conv_1',
    role: 'user',
    content: 'Hi',
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    error: null,
    at,
  },
};
const run: LogOp = { kind: 'run', row: { id: 'run_1', conversationId: 'conv_1', leaseMs: 60_000 } };
const runEnd: LogOp = { kind: 'runEnd', id: 'run_1' };

/** A write the test settles: `done(true)` written, `done(false)` given up. */
function write() {
  let done!: (ok: boolean) => void;
  const written = new Promise<boolean>((resolve) => {
    done = resolve;
  });
  return { written, done };
}
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('the conversation journal (PGlite: rows on disk until the database has them)', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const errors: unknown[] = [];
  const log = { error: (...args: unknown[]) => errors.push(args) } as unknown as Logger;
  const journalIn = () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-conv-journal-'));
    dirs.push(dataDir);
    return { dataDir, file: join(dataDir, CONVERSATION_JOURNAL_DIR, `${process.pid}.jsonl`) };
  };
  const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

  it('saves held rows on demand, keeps those not written yet, and is removed once all are written', async () => {
    const { dataDir, file } = journalIn();
    const journal = new ConversationJournal(dataDir, log);
    const [w0, w1, w2, w3] = [write(), write(), write(), write()];
    journal.hold(conversation, w0.written);
    journal.hold(message, w1.written);
    expect(existsSync(file)).toBe(false); // held only: nothing on disk until an answer needs it
    expect(journal.save()).toBe(true);
    expect(lines(file)).toHaveLength(2);
    journal.hold(run, w2.written);
    journal.hold(runEnd, w3.written);
    expect(journal.save()).toBe(true);
    // What a process killed now would leave: every row, in order, with its dates.
    expect(journal.recover().ops).toEqual([conversation, message, run, runEnd]);

    w0.done(true);
    w1.done(true);
    await tick();
    expect(lines(file).map((l) => (JSON.parse(l) as LogOp).kind)).toEqual(['run', 'runEnd']);
    w2.done(true);
    w3.done(true);
    await tick();
    expect(existsSync(file)).toBe(false);
  });

  it('never puts on disk rows written before an answer needed them', async () => {
    const { dataDir, file } = journalIn();
    const journal = new ConversationJournal(dataDir, log);
    const first = write();
    journal.hold(conversation, first.written);
    first.done(true);
    await tick();
    journal.hold(message, write().written);
    expect(journal.save()).toBe(true);
    expect(journal.recover().ops).toEqual([message]);
    expect(lines(file)).toHaveLength(1);
  });

  it('keeps a row the database gave up on for the next start, and skips a line cut short by a crash', async () => {
    const { dataDir, file } = journalIn();
    const journal = new ConversationJournal(dataDir, log);
    const lost = write();
    const fine = write();
    journal.hold(conversation, lost.written);
    journal.hold(message, fine.written);
    expect(journal.save()).toBe(true);
    lost.done(false);
    fine.done(true);
    await tick();
    appendFileSync(file, '{"kind":"message","row":{"id":"msg_2","conv');
    // The next start (here with the same pid, as a container's repeats) reads it, and removes it once written.
    const next = new ConversationJournal(dataDir, log);
    const { ops, files } = next.recover();
    expect(ops).toEqual([conversation]);
    expect(files).toEqual([file]);
    next.forget(files);
    expect(existsSync(file)).toBe(false);
  });

  it('answers false, logged once, where DATA_DIR cannot be written (the answer then waits for the database)', () => {
    const { dataDir } = journalIn();
    writeFileSync(join(dataDir, CONVERSATION_JOURNAL_DIR), 'not a folder');
    const journal = new ConversationJournal(dataDir, log);
    errors.length = 0;
    journal.hold(conversation, write().written);
    expect(journal.save()).toBe(false);
    expect(journal.save()).toBe(false);
    expect(errors).toHaveLength(1);
  });
});
