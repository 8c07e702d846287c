CREATE INDEX "credit_holds_account_idx" ON "credit_holds" USING btree ("account_id");
--> statement-breakpoint
-- Credit batches look their rows up by key, so that their cost does not grow with the ledger, the accounts or the
-- holds (the same change as 0030 for the conversation log). The planner reckons each `jsonb_to_recordset` at 100
-- rows, so `IN (subquery)` and `EXISTS` against it could become hash joins over whole tables: EXPLAIN ANALYZE of
-- `credits_write_lease_batch` (0025) on 29 November, with 30,000 accounts and 3,000 holds, scanned every credit
-- hold and the whole ledger (`credit_transactions`, to find the charges of a batch written already). The function
-- is 0025's with each lookup written `= ANY (ARRAY(...))`, which the planner answers from the primary key, and the
-- ledger ids a batch finds written read once (`seen`); what it writes is unchanged. Holds get an index on their
-- account: this function sums an account's holds, and `credits_take_lease` (0023) deletes its expired ones and sums
-- the rest, both by account, which scanned every hold.
CREATE OR REPLACE FUNCTION credits_write_lease_batch(charges jsonb, leases jsonb, lease_expires_at timestamptz)
RETURNS TABLE (account text, balance text, total text)
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM 1 FROM accounts
  WHERE id = ANY (ARRAY(SELECT x.account_id FROM jsonb_to_recordset(leases) AS x(account_id text))) ORDER BY id FOR UPDATE;
  RETURN QUERY
    WITH every AS (
      SELECT * FROM jsonb_to_recordset(charges) AS x(
        n int, id text, lease_id text, account_id text, cost bigint, type text, description text, model text,
        prompt_tokens int, completion_tokens int, request_id text, at timestamptz)
    ), seen AS (
      SELECT t.id FROM credit_transactions t WHERE t.id = ANY (ARRAY(SELECT every.id FROM every))
    ), c AS (
      SELECT * FROM every WHERE every.id NOT IN (SELECT seen.id FROM seen)
    ), written AS (
      SELECT every.lease_id, sum(every.cost)::bigint AS cost FROM every
      WHERE every.id IN (SELECT seen.id FROM seen) GROUP BY every.lease_id
    ), r AS (
      SELECT x.lease_id, x.account_id, x.charged - COALESCE(w.cost, 0) AS charged, x.close
      FROM jsonb_to_recordset(leases) AS x(lease_id text, account_id text, charged bigint, close boolean)
      LEFT JOIN written w ON w.lease_id = x.lease_id
    ), before AS (
      SELECT h.account_id, sum(h.amount)::bigint AS amount FROM credit_holds h
      WHERE h.account_id = ANY (ARRAY(SELECT r.account_id FROM r)) GROUP BY h.account_id
    ), lu AS (
      UPDATE credit_holds h SET amount = h.amount - r.charged, expires_at = lease_expires_at
      FROM r WHERE h.id = r.lease_id AND NOT r.close AND h.id = ANY (ARRAY(SELECT r.lease_id FROM r))
      RETURNING h.id
    ), ld AS (
      DELETE FROM credit_holds h USING r
      WHERE h.id = r.lease_id AND r.close AND h.id = ANY (ARRAY(SELECT r.lease_id FROM r))
      RETURNING h.id, h.amount
    ), d AS (
      SELECT r.account_id,
        sum(CASE WHEN ld.id IS NOT NULL THEN ld.amount - r.charged WHEN lu.id IS NOT NULL THEN 0 ELSE -r.charged END)::bigint AS delta,
        sum(CASE WHEN ld.id IS NOT NULL THEN ld.amount WHEN lu.id IS NOT NULL THEN r.charged ELSE 0 END)::bigint AS leased_out
      FROM r LEFT JOIN ld ON ld.id = r.lease_id LEFT JOIN lu ON lu.id = r.lease_id
      GROUP BY r.account_id
    ), u AS (
      UPDATE accounts a SET credit_balance = a.credit_balance + d.delta
      FROM d WHERE a.id = d.account_id AND a.id = ANY (ARRAY(SELECT d.account_id FROM d))
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
