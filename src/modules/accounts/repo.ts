import { eq, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { type AccountRow, accounts } from '../../db/schema/index.ts';

/** All SQL for accounts. Every lookup by id is the caller's own id: ownership is decided in the service. */

export async function insertAccount(db: Executor, row: typeof accounts.$inferInsert): Promise<AccountRow> {
  const [created] = await db.insert(accounts).values(row).returning();
  if (!created) throw new Error('insert returned no row');
  return created;
}

export async function findAccountById(db: Executor, id: string): Promise<AccountRow | undefined> {
  const [row] = await db.select().from(accounts).where(eq(accounts.id, id)).limit(1);
  return row;
}

/** E-mails are unique whatever their case (a unique index on lower(email)). */
export async function findAccountByEmail(db: Executor, email: string): Promise<AccountRow | undefined> {
  const [row] = await db.select().from(accounts).where(sql`lower(${accounts.email}) = lower(${email})`).limit(1);
  return row;
}

export async function updateAccount(
  db: Executor,
  id: string,
  patch: Partial<Pick<AccountRow, 'name' | 'avatar' | 'allowWhitelabel'>>,
): Promise<AccountRow | undefined> {
  const [row] = await db
    .update(accounts)
    .set({ ...patch, updatedAt: new Date() })
    .where(eq(accounts.id, id))
    .returning();
  return row;
}

/** Removes the account; every owned row goes with it through ON DELETE CASCADE. */
export async function deleteAccount(db: Executor, id: string): Promise<boolean> {
  const rows = await db.delete(accounts).where(eq(accounts.id, id)).returning({ id: accounts.id });
  return rows.length > 0;
}
