import type { BaseDeps, Deps, ServiceContext } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { MessageRow } from '../../db/schema/index.ts';
import { GROUP_COMMIT_WINDOW_MS, GroupCommit } from '../../lib/group-commit.ts';
import { newId } from '../../lib/ids.ts';
import { storable } from '../../lib/text.ts';
import { ownedConversation, toMessage } from './conversations.service.ts';
import { ConversationJournal } from './journal.ts';
import * as repo from './repo.ts';

/**
 * The events of a conversation (SPEC §4 `GET .../events`, shapes ours): stored with increasing ids, so a
 * subscriber that reconnects with `Last-Event-ID` misses nothing, and announced through the database's
 * notifications, so a subscriber on another instance than the one running the agent hears them.
 *
 * - `message.created` `{message}`: a message was stored (user, assistant, tool), as the messages list shows it;
 * - `tool.called` `{toolCallId, name, arguments}`: the agent called a tool;
 * - `tool.result` `{toolCallId, name, content}`: what the tool answered (as the model read it, capped);
 * - `message.delta` `{content}`: text of the answer being written (today the whole answer, once, before its
 *   `message.created`: model tokens are not streamed yet);
 * - `run.completed` `{messageId, creditsConsumed, limited}` and `run.failed` `{error, messageId}`: the run ended
 *   (`messageId`: the answer, or the failed turn's marker message, see `failureOps`).
 */
export const EVENT_TYPES = [
  'message.created',
  'message.delta',
  'tool.called',
  'tool.result',
  'run.completed',
  'run.failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type LogOp =
  | { kind: 'conversation'; row: repo.ConversationLogBatch['conversations'][number] }
  | { kind: 'message'; row: repo.ConversationLogBatch['messages'][number] }
  | { kind: 'event'; row: repo.ConversationLogBatch['events'][number] }
  | { kind: 'touch'; row: repo.ConversationLogBatch['touches'][number] }
  | { kind: 'run'; row: repo.ConversationLogBatch['runs'][number] }
  | { kind: 'runEnd'; id: string };

/**
 * What an answer names and another instance reads at once: a conversation, its messages, a turn's lease row. They
 * may be written ahead of the events, touches and ended leases queued before them (`commitRows`), never after:
 * an event is never visible before the row it tells of, and rows keep their order among themselves.
 */
function isRow(op: LogOp): boolean {
  return op.kind === 'conversation' || op.kind === 'message' || op.kind === 'run';
}

/** What the embedded database's journal holds: the rows, and the ends of leases (a replayed lease must end). */
function isJournaled(op: LogOp): boolean {
  return op.kind !== 'event' && op.kind !== 'touch';
}

/**
 * Ops in the order they happened as one batch: a conversation made in it takes its touches itself, and a turn
 * that starts and ends in it writes no lease row at all.
 */
function toBatch(ops: LogOp[]): repo.ConversationLogBatch {
  const batch: repo.ConversationLogBatch = {
    conversations: [],
    messages: [],
    events: [],
    touches: [],
    runs: [],
    endedRuns: [],
  };
  const created = new Map<string, repo.ConversationLogBatch['conversations'][number]>();
  for (const op of ops) {
    if (op.kind === 'conversation') {
      const row = { ...op.row };
      created.set(row.id, row);
      batch.conversations.push(row);
    } else if (op.kind === 'message') batch.messages.push(op.row);
    else if (op.kind === 'event') batch.events.push(op.row);
    else if (op.kind === 'run') batch.runs.push(op.row);
    else if (op.kind === 'runEnd') {
      const started = batch.runs.findIndex((r) => r.id === op.id);
      if (started >= 0) batch.runs.splice(started, 1);
      else batch.endedRuns.push(op.id);
    } else {
      const mine = created.get(op.row.conversationId);
      if (mine) mine.lastActivityAt = op.row.at;
      else batch.touches.push(op.row);
    }
  }
  return batch;
}

/** A new message row and its `message.created` event (the messages list's shape), as ops. */
function messageOps(row: Omit<MessageRow, 'id' | 'seq' | 'createdAt'>): { message: MessageRow; ops: LogOp[] } {
  const message: MessageRow = storable({ id: newId('message'), seq: 0, createdAt: new Date(), ...row });
  const { seq: _seq, createdAt: at, ...rest } = message;
  return {
    message,
    ops: [
      { kind: 'message', row: { ...rest, at } },
      eventOp(message.conversationId, 'message.created', { message: toMessage(message) }),
    ],
  };
}

function eventOp(conversationId: string, type: EventType, data: Record<string, unknown>): LogOp {
  return { kind: 'event', row: { conversationId, type, data: storable(data), at: new Date() } };
}

/**
 * A failed turn as it is stored, whoever records it (the run itself, or the sweep of a dead instance's runs): an
 * assistant message with no content and `error` (the messages list and the chat page show it), its
 * `message.created`, then `run.failed` `{error, messageId}`, and the conversation's activity.
 */
function failureOps(conversationId: string, error: string): { message: MessageRow; ops: LogOp[] } {
  const { message, ops } = messageOps({
    conversationId,
    role: 'assistant',
    content: null,
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    error,
  });
  ops.push(eventOp(conversationId, 'run.failed', { error: message.error, messageId: message.id }));
  ops.push({ kind: 'touch', row: { conversationId, at: new Date() } });
  return { message, ops };
}

/**
 * Records the failure of turns whose run is already gone (their lease rows were taken by `takeExpiredRuns`),
 * with `db` (the sweep's transaction): one statement for them all, their subscribers notified on commit.
 */
export async function writeFailedTurns(
  db: Executor,
  turns: ReadonlyArray<{ conversationId: string }>,
  error: string,
): Promise<void> {
  if (turns.length === 0) return;
  await repo.writeConversationLog(db, toBatch(turns.flatMap((t) => failureOps(t.conversationId, error).ops)));
}

/**
 * What a chat stores: conversations, messages and events of this instance go through one group commit
 * (GROUP_COMMIT_WINDOW_MS), in the order they happened, shared with the turns of other chats queued meanwhile.
 * Every read of conversations on this instance first waits for what is queued (`settled`), so it sees its own
 * writes. On PostgreSQL, which other instances share, a chat answers only once what its answer names is
 * committed (`commitRows`: the conversation, its messages, the turn's lease, ahead of the events queued before
 * them), so every instance behind the load balancer reads it, and continues it, as soon as the answer arrives
 * (issue 39); the rest (events, the conversation's activity, the end of the turn's lease) is written within the
 * window, when its SSE subscribers are notified. PGlite serves one process: there a crash right after an answer
 * must not lose what it named, and the rows go to a journal on disk instead (`ConversationJournal`, replayed at
 * the next start by `recover`), written to the database within the window. Shutdown writes everything queued
 * (background work is drained before the database closes). Text the database cannot store (NUL, unpaired
 * surrogates) is stored as U+FFFD.
 */
export class ConversationLog {
  private readonly commit: GroupCommit<LogOp>;
  /** Each conversation's last queued write, while it is not written yet. */
  private readonly last = new Map<string, Promise<boolean>>();
  /** On PGlite: the rows queued, on disk until they are written. */
  private readonly journal: ConversationJournal | undefined;

  constructor(private readonly deps: BaseDeps) {
    if (deps.database.driver === 'pglite') this.journal = new ConversationJournal(deps.config.dataDir, deps.log);
    // On PostgreSQL a commit that does not wait for the WAL flush (visible at once, on disk within the WAL writer's
    // delay); on PGlite, which has no WAL writer, the same handle commits synchronously (migration 0030).
    const { asyncCommitDb } = deps.database;
    this.commit = new GroupCommit<LogOp>({
      what: 'conversation writes',
      write: (ops) => {
        const batch = toBatch(ops);
        const [message] = batch.messages;
        // An answer alone (see `answer`): one prepared insert rather than the batch function.
        if (ops.length === 1 && message) return repo.writeMessage(asyncCommitDb, message);
        // Rows alone (see `commitRows`): a function of about half the batch function's cost.
        return ops.every(isRow)
          ? repo.writeConversationRows(asyncCommitDb, batch)
          : repo.writeConversationLog(asyncCommitDb, batch);
      },
      windowMs: GROUP_COMMIT_WINDOW_MS[deps.database.driver],
      log: deps.log,
      background: deps.background,
    });
  }

  /** Statements written so far. */
  get batches(): number {
    return this.commit.batches;
  }

  /** Whether writes are queued or being written. */
  get pending(): boolean {
    return this.commit.pending;
  }

  conversation(
    row: Omit<repo.ConversationLogBatch['conversations'][number], 'at' | 'lastActivityAt'>,
  ): Promise<boolean> {
    const at = new Date();
    return this.add(row.id, {
      kind: 'conversation',
      row: { ...row, title: storable(row.title), at, lastActivityAt: at },
    });
  }

  /** A message and its `message.created` event; answers the message as it is stored (written or not). */
  message(row: Omit<MessageRow, 'id' | 'seq' | 'createdAt'>): { message: MessageRow; written: Promise<boolean> } {
    const { message, ops } = messageOps(row);
    return { message, written: this.addAll(message.conversationId, ops) };
  }

  event(conversationId: string, type: EventType, data: Record<string, unknown>): Promise<boolean> {
    return this.add(conversationId, eventOp(conversationId, type, data));
  }

  /**
   * A turn's answer: the assistant message, then its `message.delta` and `message.created`, the conversation's
   * activity, `run.completed` `{messageId, creditsConsumed, limited}` and the end of the turn's lease.
   * `committed` (see `commitRows`) waits for the turn's earlier rows (`turn.written`: the conversation, the
   * user's message, the lease) and the message, written at once in a statement of its own when no other row is
   * queued; the rest keeps its window. `written` resolves once all of it is written.
   */
  answer(
    conversationId: string,
    turn: { id: string; written: Promise<boolean> },
    content: string,
    outcome: { creditsConsumed: number; limited: boolean },
  ): { message: MessageRow; committed: Promise<boolean>; written: Promise<boolean> } {
    const { message, ops } = messageOps({
      conversationId,
      role: 'assistant',
      content,
      toolCalls: null,
      toolCallId: null,
      toolName: null,
      error: null,
    });
    const [stored, created] = ops;
    const mine = this.add(conversationId, stored as LogOp);
    void this.add(conversationId, eventOp(conversationId, 'message.delta', { content }));
    void this.add(conversationId, created as LogOp);
    void this.touch(conversationId);
    const written = this.event(conversationId, 'run.completed', { messageId: message.id, ...outcome });
    void this.endRun(conversationId, turn.id);
    // Once all of it is queued: on PGlite the lease's end goes to the journal with the answer (a lease replayed
    // without it would run out, and the answered turn be marked failed).
    const committed = this.commitRows(turn.written, mine);
    return { message, committed, written };
  }

  /** A turn starts: its lease row (held `leaseMs` from when it is written) goes with what is queued before it. */
  startRun(conversationId: string, leaseMs: number): { id: string; written: Promise<boolean> } {
    const id = newId('conversationRun');
    return { id, written: this.add(conversationId, { kind: 'run', row: { id, conversationId, leaseMs } }) };
  }

  /** The turn ended with what was queued before this (its answer): its lease row goes in the same statement. */
  endRun(conversationId: string, runId: string): Promise<boolean> {
    return this.add(conversationId, { kind: 'runEnd', id: runId });
  }

  /** The turn failed: its failure is stored (see `failureOps`) and its lease row goes, in one statement. */
  failRun(conversationId: string, runId: string, error: string): { message: MessageRow; written: Promise<boolean> } {
    const { message, ops } = failureOps(conversationId, error);
    ops.push({ kind: 'runEnd', id: runId });
    return { message, written: this.addAll(conversationId, ops) };
  }

  private addAll(conversationId: string, ops: LogOp[]): Promise<boolean> {
    let written = Promise.resolve(true);
    for (const op of ops) written = this.add(conversationId, op);
    return written;
  }

  /** The conversation's last activity is now. */
  touch(conversationId: string): Promise<boolean> {
    return this.add(conversationId, { kind: 'touch', row: { conversationId, at: new Date() } });
  }

  private add(conversationId: string, op: LogOp): Promise<boolean> {
    const written = this.commit.add(op);
    if (this.journal && isJournaled(op)) this.journal.hold(op, written);
    this.last.set(conversationId, written);
    void written.then(() => {
      if (this.last.get(conversationId) === written) this.last.delete(conversationId);
    });
    return written;
  }

  /**
   * Commits `written` (a write queued here, and so all queued before it) before an answer that names it leaves:
   * on PostgreSQL writes what is queued now rather than at the window's end, and answers whether it was
   * committed (false: given up, the database is down); later writes keep their window. On both databases: on
   * PostgreSQL other instances read what the answer names; on PGlite a crash right after the answer must not lose it.
   */
  commitNow(written: Promise<boolean>): Promise<boolean> {
    void this.commit.writeQueued();
    return written;
  }

  /**
   * As `commitNow`, for rows (a conversation, a message, a turn's lease) queued here: answers once `written` (each
   * a row's write) is committed, or kept where a crash cannot lose it. On PostgreSQL it writes at once only the
   * rows queued so far, ahead of the events, touches and ended leases queued before them, which keep their window
   * (see `isRow`), in a statement of about half the whole batch's database time. On PGlite the rows queued so far
   * go to the journal (a line appended), and keep their window too; where the journal cannot be written, as on
   * PostgreSQL.
   */
  commitRows(...written: Promise<boolean>[]): Promise<boolean> {
    if (this.journal?.save()) return Promise.resolve(true);
    void this.commit.writeQueued(isRow);
    return Promise.all(written).then((oks) => oks.every(Boolean));
  }

  /**
   * Start-up: the rows a stopped process journaled (PGlite) and the database may not have taken, written now
   * (rows already there are left alone, ended leases deleted again); answers how many. A failed write is logged and
   * its journal kept for the next start.
   */
  async recover(): Promise<number> {
    if (!this.journal) return 0;
    const { ops, files } = this.journal.recover();
    if (!files.length) return 0;
    try {
      if (ops.length) await repo.writeConversationLog(this.deps.database.asyncCommitDb, toBatch(ops));
    } catch (err) {
      this.deps.log.error({ err, rows: ops.length }, 'agents: the journaled conversation rows could not be written');
      return 0;
    }
    this.journal.forget(files);
    if (ops.length)
      this.deps.log.info({ rows: ops.length }, 'agents: conversation rows journaled before a stop written');
    return ops.length;
  }

  /**
   * Resolves once what is queued so far is written (for one conversation, or all): call before reading
   * conversations, messages or events. What is queued is written at once rather than at the window's end.
   */
  async settled(conversationId?: string): Promise<void> {
    if (conversationId === undefined) {
      if (this.commit.pending) await this.commit.flush();
      return;
    }
    const written = this.last.get(conversationId);
    if (!written) return;
    void this.commit.flush();
    await written;
  }
}

/**
 * Start-up, before jobs run (the sweep of orphaned turns reads the leases): conversation rows a stopped process
 * journaled on the embedded database and may not have written are written now.
 */
export async function recoverConversationRows(deps: Deps): Promise<void> {
  await deps.areas.conversationLog.recover();
}

declare module '../../context.ts' {
  interface AreaState {
    /** The app's conversation writes, in batches; tracked by `background` (see `ConversationLog`). */
    conversationLog: ConversationLog;
  }
}

export interface ConversationEvent {
  id: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: string;
}

/** A subscription to one conversation's events, for the SSE route. */
export interface EventFeed {
  /** Events after `afterId`, oldest first (at most 500 at a time). */
  after(afterId: number): Promise<ConversationEvent[]>;
  /** Calls `onEvent` when new events may be there; answers the function that stops it. */
  subscribe(onEvent: () => void): Promise<() => void>;
}

export async function conversationFeed(
  ctx: ServiceContext,
  agentId: string,
  conversationId: string,
): Promise<EventFeed> {
  const conversation = await ownedConversation(ctx, agentId, conversationId);
  return {
    async after(afterId) {
      await ctx.deps.areas.conversationLog.settled(conversation.id);
      const rows = await repo.eventsAfter(ctx.db, conversation.id, afterId, 500);
      return rows.map((r) => ({ id: r.id, type: r.type, data: r.data, createdAt: r.createdAt.toISOString() }));
    },
    subscribe: (onEvent) => ctx.deps.notifications.subscribe(conversation.id, onEvent),
  };
}
