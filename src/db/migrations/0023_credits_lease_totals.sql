-- The balance users see (issue 46): the stored balance plus what leases hold and have not charged, `total`. The
-- credit bank's two statements now answer it, read after the account's row is locked (a first statement of the
-- function: PostgreSQL's read-committed statements then see every write that held that lock before, where one
-- statement's snapshot is taken before it waits for the lock), so that `total` and the ledger's `balance_after`
-- count each lease once even while another instance's batch or take commits meanwhile.
CREATE OR REPLACE FUNCTION credits_take_lease(
  lease_id text, lease_account text, need bigint, want bigint, free bigint, lease_expires_at timestamptz)
RETURNS TABLE (balance text, take text, admitted boolean, total text)
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM 1 FROM accounts WHERE id = lease_account FOR UPDATE;
  RETURN QUERY
    WITH x AS (
      DELETE FROM credit_holds h
      WHERE h.account_id = lease_account AND h.expires_at < now() AND h.id <> lease_id
      RETURNING h.amount
    ), o AS (
      SELECT a.id, a.credit_balance + r.amount AS b,
        a.credit_balance + (SELECT COALESCE(sum(h.amount), 0) FROM credit_holds h WHERE h.account_id = lease_account) AS t,
        GREATEST(need, LEAST(want, (a.credit_balance + r.amount + free) / 2)) AS take
      FROM accounts a, (SELECT COALESCE(sum(x.amount), 0)::bigint AS amount FROM x) r
      WHERE a.id = lease_account
    ), u AS (
      UPDATE accounts a
      SET credit_balance = o.b - CASE WHEN o.b + free > 0 THEN o.take - free ELSE 0 END
      FROM o WHERE a.id = o.id
      RETURNING a.credit_balance, o.take, o.b + free > 0 AS admitted, o.t
    ), l AS (
      INSERT INTO credit_holds (id, account_id, amount, expires_at)
      SELECT lease_id, lease_account, u.take - free, lease_expires_at FROM u WHERE u.admitted
      ON CONFLICT (id) DO UPDATE
      SET amount = credit_holds.amount + EXCLUDED.amount, expires_at = EXCLUDED.expires_at
    )
    SELECT u.credit_balance::text, u.take::text, u.admitted, u.t::text FROM u;
END
$fn$;
--> statement-breakpoint
DROP FUNCTION IF EXISTS credits_write_lease_batch(jsonb, jsonb, timestamptz);
--> statement-breakpoint
CREATE FUNCTION credits_write_lease_batch(charges jsonb, leases jsonb, lease_expires_at timestamptz)
RETURNS TABLE (account text, balance text, total text)
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM 1 FROM accounts
  WHERE id IN (SELECT x.account_id FROM jsonb_to_recordset(leases) AS x(account_id text)) ORDER BY id FOR UPDATE;
  RETURN QUERY
    WITH c AS (
      SELECT * FROM jsonb_to_recordset(charges) AS x(
        n int, id text, account_id text, cost bigint, type text, description text, model text,
        prompt_tokens int, completion_tokens int, request_id text, at timestamptz)
    ), r AS (
      SELECT * FROM jsonb_to_recordset(leases) AS x(
        lease_id text, account_id text, charged bigint, close boolean)
    ), before AS (
      SELECT h.account_id, sum(h.amount)::bigint AS amount FROM credit_holds h
      WHERE h.account_id IN (SELECT r.account_id FROM r) GROUP BY h.account_id
    ), lu AS (
      UPDATE credit_holds h SET amount = h.amount - r.charged, expires_at = lease_expires_at
      FROM r WHERE h.id = r.lease_id AND NOT r.close
      RETURNING h.id
    ), ld AS (
      DELETE FROM credit_holds h USING r WHERE h.id = r.lease_id AND r.close
      RETURNING h.id, h.amount
    ), d AS (
      SELECT r.account_id,
        sum(CASE WHEN ld.id IS NOT NULL THEN ld.amount - r.charged WHEN lu.id IS NOT NULL THEN 0 ELSE -r.charged END)::bigint AS delta,
        sum(CASE WHEN ld.id IS NOT NULL THEN ld.amount WHEN lu.id IS NOT NULL THEN r.charged ELSE 0 END)::bigint AS leased_out
      FROM r LEFT JOIN ld ON ld.id = r.lease_id LEFT JOIN lu ON lu.id = r.lease_id
      GROUP BY r.account_id
    ), u AS (
      UPDATE accounts a SET credit_balance = a.credit_balance + d.delta
      FROM d WHERE a.id = d.account_id
      RETURNING a.id, a.credit_balance, a.credit_balance + COALESCE((SELECT before.amount FROM before WHERE before.account_id = a.id), 0) - d.leased_out AS total
    ), t AS (
      INSERT INTO credit_transactions
        (id, account_id, amount, balance_after, type, description, model, prompt_tokens, completion_tokens, request_id, created_at)
      SELECT c.id, c.account_id, -c.cost,
        u.total + COALESCE(sum(c.cost) OVER (PARTITION BY c.account_id ORDER BY c.n DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::bigint,
        c.type, c.description, c.model, c.prompt_tokens, c.completion_tokens, c.request_id, c.at
      FROM c JOIN u ON u.id = c.account_id
    )
    SELECT u.id, u.credit_balance::text, u.total::text FROM u;
END
$fn$;
