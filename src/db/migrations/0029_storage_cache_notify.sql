-- Every instance's cache of stored bytes per owner (the storage figure of /v1/users/me) drops an owner when one of
-- their files appears, becomes READY, changes size or owner, or goes (migration 0011's notify_cache_key).
CREATE TRIGGER files_storage_cache_notify AFTER INSERT OR DELETE OR UPDATE OF "status", "size", "owner_id" ON "files"
  FOR EACH ROW EXECUTE FUNCTION notify_cache_key('cache_storage', 'owner_id');
