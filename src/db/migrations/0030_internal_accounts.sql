ALTER TABLE "users" ADD COLUMN "internal_kind" text;--> statement-breakpoint
CREATE UNIQUE INDEX "users_internal_kind_key" ON "users" USING btree ("internal_kind") WHERE "users"."internal_kind" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_internal_no_password" CHECK ("users"."internal_kind" IS NULL OR "users"."password_hash" = '!no-password');--> statement-breakpoint
-- The playground's account as the service made it before this marker existed: the row at its address with the password
-- marker only the service ever stored (sign-up, identity-provider sign-in and operators always store an argon2 hash).
-- An account someone signed up with at that address first has a real hash: it is never adopted and stays ordinary.
UPDATE "users" SET "internal_kind" = 'PLAYGROUND', "updated_at" = now()
  WHERE "email" = 'playground@storefront.internal' AND "password_hash" = '!no-password' AND "status" <> 'DELETED';--> statement-breakpoint
-- An internal account is never signed in to: whatever could act as the adopted one (an identity-provider link made by
-- an email match, its sessions, API keys and webhooks) ends here.
DELETE FROM "user_identities" WHERE "user_id" IN (SELECT "id" FROM "users" WHERE "internal_kind" IS NOT NULL);--> statement-breakpoint
UPDATE "refresh_tokens" SET "revoked_at" = now(), "revoked_reason" = 'SESSION_REVOKED'
  WHERE "revoked_at" IS NULL AND "user_id" IN (SELECT "id" FROM "users" WHERE "internal_kind" IS NOT NULL);--> statement-breakpoint
UPDATE "sessions" SET "revoked_at" = now()
  WHERE "revoked_at" IS NULL AND "user_id" IN (SELECT "id" FROM "users" WHERE "internal_kind" IS NOT NULL);--> statement-breakpoint
UPDATE "api_keys" SET "revoked_at" = now()
  WHERE "revoked_at" IS NULL AND "user_id" IN (SELECT "id" FROM "users" WHERE "internal_kind" IS NOT NULL);--> statement-breakpoint
UPDATE "webhook_endpoints" SET "status" = 'DISABLED', "disabled_at" = now(), "disabled_reason" = 'The admin playground''s internal account has no webhooks', "updated_at" = now()
  WHERE "status" = 'ACTIVE' AND "user_id" IN (SELECT "id" FROM "users" WHERE "internal_kind" IS NOT NULL);
