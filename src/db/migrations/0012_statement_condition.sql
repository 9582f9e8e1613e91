-- The condition of a combined statement (src/platform/db/one-statement.ts): raises, so the whole statement writes
-- nothing, unless `ok` is true. SQLSTATE P0004 (assert_failure) tells the caller its condition failed.
CREATE OR REPLACE FUNCTION require_that(ok boolean, message text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = message;
  END IF;
  RETURN true;
END $$;
--> statement-breakpoint
-- Access tokens stop working on every instance as soon as their session is revoked or removed: the cache of open
-- sessions drops the entry on this announcement (`last_seen_at` moves often and changes nothing it holds).
CREATE TRIGGER sessions_cache_notify AFTER DELETE OR UPDATE OF "revoked_at", "user_id" ON "sessions"
  FOR EACH ROW EXECUTE FUNCTION notify_cache_key('cache_sessions', 'id');
