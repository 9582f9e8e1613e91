ALTER TABLE "provider_accounts" ADD COLUMN "source" text DEFAULT 'ENV' NOT NULL;--> statement-breakpoint
ALTER TABLE "provider_accounts" ADD COLUMN "enabled" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "provider_accounts" ADD COLUMN "encrypted_api_key" text;--> statement-breakpoint
-- Every instance's upstream pool drops its cached accounts of a provider when an operator changes one (spend and
-- health columns move on every call and are left out: the pool re-reads them within a second anyway).
CREATE TRIGGER provider_accounts_cache_notify AFTER INSERT OR DELETE OR UPDATE OF "enabled", "encrypted_api_key", "base_url", "monthly_budget_cents", "label", "key_hint" ON "provider_accounts"
  FOR EACH ROW EXECUTE FUNCTION notify_cache_key('cache_provider_accounts', 'provider_slug');
