-- Every instance's cache of active users (the account behind a request: /v1/users/me, the admin role check) drops a
-- user when the row changes, whoever wrote it (migration 0011's notify_cache_key).
CREATE TRIGGER users_cache_notify AFTER INSERT OR UPDATE OR DELETE ON "users"
  FOR EACH ROW EXECUTE FUNCTION notify_cache_key('cache_users', 'id');
