import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from './logger.ts';
import { isAlive } from './process-alive.ts';

/**
 * Items a process keeps on disk until its database takes them, so that a crash loses none: one file a process in
 * `DATA_DIR/<folder>/<pid>.jsonl`, one item a JSON line (the credit bank's charges during an outage, the embedded
 * database's conversation rows before their group commit). `append` and `replace` return once the operating
 * system has the bytes: a process crash loses nothing, a power cut may lose the last lines it had not written out.
 * A DATA_DIR that cannot be written is logged once (`failure`) and answered false, so callers can do without.
 */
export class PidJournal<T> {
  private readonly dir: string;
  readonly file: string;
  private failed = false;

  constructor(
    private readonly opts: {
      dataDir: string;
      folder: string;
      /** An item from its line; undefined for a line cut short by a crash, or not an item. */
      parse: (line: string) => T | undefined;
      log: Logger;
      failure: string;
    },
  ) {
    this.dir = join(opts.dataDir, opts.folder);
    this.file = join(this.dir, `${process.pid}.jsonl`);
  }

  /** Replaces this process's file by these lines (each ending in a newline); none removes it. */
  replace(lines: string): boolean {
    return this.attempt(() => {
      if (!lines) {
        rmSync(this.file, { force: true });
        return;
      }
      mkdirSync(this.dir, { recursive: true });
      const tmp = `${this.file}.tmp`;
      writeFileSync(tmp, lines);
      renameSync(tmp, this.file);
    });
  }

  /** Adds lines (each ending in a newline) to this process's file. */
  append(lines: string): boolean {
    return this.attempt(() => {
      try {
        appendFileSync(this.file, lines);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        mkdirSync(this.dir, { recursive: true });
        appendFileSync(this.file, lines);
      }
    });
  }

  /**
   * The items of the files no running process owns (this process's own, left by an app closed before its
   * database took them, included), in each file's order, and those files, to `forget` once their items are kept
   * elsewhere (journaled again or written).
   */
  recover(): { items: T[]; files: string[] } {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return { items: [], files: [] };
    }
    const items: T[] = [];
    const files: string[] = [];
    for (const name of names.sort()) {
      const pid = Number(/^(\d+)\.jsonl$/.exec(name)?.[1]);
      if (!pid || (pid !== process.pid && isAlive(pid))) continue; // another instance's, on a shared DATA_DIR
      const file = join(this.dir, name);
      files.push(file);
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const item = line ? this.opts.parse(line) : undefined;
        if (item !== undefined) items.push(item);
      }
    }
    return { items, files };
  }

  /** Removes files recovered from (not this process's own, which `replace` keeps). */
  forget(files: readonly string[]): void {
    for (const file of files) if (file !== this.file) this.attempt(() => rmSync(file, { force: true }));
  }

  private attempt(fn: () => void): boolean {
    try {
      fn();
      this.failed = false;
      return true;
    } catch (err) {
      if (!this.failed) {
        this.failed = true;
        this.opts.log.error({ err, dir: this.dir }, this.opts.failure);
      }
      return false;
    }
  }
}
