-- In-process caches on every instance drop an entry when its row changes: each write announces the entry's key on
-- the cache's channel (`cache_<name>`, a JSON string payload), delivered when the transaction commits. A trigger
-- catches every writer, an operator's SQL included. Arguments: the channel, then the column whose value is the key.
CREATE OR REPLACE FUNCTION notify_cache_key() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  new_key text;
  old_key text;
BEGIN
  IF TG_OP <> 'DELETE' THEN
    new_key := to_jsonb(NEW) ->> TG_ARGV[1];
    PERFORM pg_notify(TG_ARGV[0], to_json(new_key)::text);
  END IF;
  IF TG_OP <> 'INSERT' THEN
    old_key := to_jsonb(OLD) ->> TG_ARGV[1];
    IF old_key IS DISTINCT FROM new_key THEN
      PERFORM pg_notify(TG_ARGV[0], to_json(old_key)::text);
    END IF;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER subscriptions_cache_notify AFTER INSERT OR UPDATE OR DELETE ON "subscriptions"
  FOR EACH ROW EXECUTE FUNCTION notify_cache_key('cache_subscriptions', 'user_id');
--> statement-breakpoint
-- `last_used_at` moves on every use of a busy key and changes nothing a cache holds.
CREATE TRIGGER api_keys_cache_notify AFTER INSERT OR DELETE OR UPDATE OF "key_hash", "user_id", "scopes", "expires_at", "revoked_at" ON "api_keys"
  FOR EACH ROW EXECUTE FUNCTION notify_cache_key('cache_api_keys', 'key_hash');
