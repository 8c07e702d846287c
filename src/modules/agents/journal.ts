import type { Logger } from '../../lib/logger.ts';
import { PidJournal } from '../../lib/pid-journal.ts';
import type { LogOp } from './events.service.ts';

/** The journal's folder under DATA_DIR: one file a process, `<pid>.jsonl`, one row (or ended lease) a line. */
export const CONVERSATION_JOURNAL_DIR = 'conversation-journal';

/** Rows held at most: past it (writes the database gave up on, kept for the next start) the oldest go. */
const MAX_HELD = 10_000;

const isText = (v: unknown): v is string => typeof v === 'string';

function parse(line: string): LogOp | undefined {
  try {
    const op = JSON.parse(line) as LogOp;
    if (op.kind === 'runEnd') return isText(op.id) ? op : undefined;
    if (op.kind === 'event' || op.kind === 'touch' || !isText(op.row?.id)) return undefined;
    if (op.kind === 'conversation') {
      return { ...op, row: { ...op.row, at: new Date(op.row.at), lastActivityAt: new Date(op.row.lastActivityAt) } };
    }
    if (op.kind === 'message') return { ...op, row: { ...op.row, at: new Date(op.row.at) } };
    return op.kind === 'run' ? op : undefined;
  } catch {
    return undefined; // a line cut short by a crash
  }
}

/**
 * The conversation rows (conversations, messages, turns' leases and their ends) of an instance on the embedded
 * database, on disk (a PidJournal) from before an answer that names them leaves until the group commit writes them
 * (issue 39). PGlite serves one process, so no other instance needs them in the database at once, only a crash must
 * not lose them: a line appended costs microseconds where a commit on the embedded database's thread cost the answer
 * about a millisecond and a half (docs/benchmarks.md). `hold` keeps each row queued for the database in memory;
 * `save` appends those not on disk yet (before an answer leaves); once the database has written rows, the file is
 * replaced by those still held (removed when none is). The next start replays what a stopped process left
 * (`ConversationLog.recover`): rows already written are left alone, and an ended lease is deleted again.
 */
export class ConversationJournal {
  private readonly file: PidJournal<LogOp>;
  private seq = 0;
  /** Rows queued for the database and not yet written, as their lines, in the order they were queued. */
  private readonly held = new Map<number, string>();
  /** Lines of `held` not on disk yet. */
  private unsaved = '';
  /** Whether the file holds lines. */
  private inFile = false;
  private resyncing = false;

  constructor(dataDir: string, log: Logger) {
    this.file = new PidJournal({
      dataDir,
      folder: CONVERSATION_JOURNAL_DIR,
      parse,
      log,
      failure: 'agents: the conversation journal cannot be written; answers wait for the database instead',
    });
  }

  /** A row queued for the database: held until `written` says it is written (a write given up stays held). */
  hold(op: LogOp, written: Promise<boolean>): void {
    const seq = ++this.seq;
    const line = `${JSON.stringify(op)}\n`;
    this.held.set(seq, line);
    this.unsaved += line;
    if (this.held.size > MAX_HELD) this.held.delete(this.held.keys().next().value as number);
    void written.then((ok) => {
      if (!ok) return;
      this.held.delete(seq);
      this.resync();
    });
  }

  /** Puts the rows held and not on disk yet on disk; false when the file cannot be written. */
  save(): boolean {
    if (!this.unsaved) return true;
    if (!this.file.append(this.unsaved)) return false;
    this.unsaved = '';
    this.inFile = true;
    return true;
  }

  /** The rows a stopped process left, in order, and their files, to `forget` once they are written. */
  recover(): { ops: LogOp[]; files: string[] } {
    const { items, files } = this.file.recover();
    return { ops: items, files };
  }

  /**
   * Removes the files recovered from, once their rows are written: this process's own too (a container's pid
   * repeats), keeping what it holds now.
   */
  forget(files: readonly string[]): void {
    this.file.forget(files);
    if (!files.includes(this.file.file)) return;
    const lines = [...this.held.values()].join('');
    if (this.file.replace(lines)) {
      this.unsaved = '';
      this.inFile = lines !== '';
    }
  }

  /** Rows were written (a batch's, each answering in turn): once they all have, what is on disk drops them. */
  private resync(): void {
    if (this.resyncing) return;
    this.resyncing = true;
    queueMicrotask(() => {
      this.resyncing = false;
      const lines = [...this.held.values()].join('');
      if (!this.inFile) this.unsaved = lines;
      else if (this.file.replace(lines)) {
        this.unsaved = '';
        this.inFile = lines !== '';
      }
    });
  }
}
