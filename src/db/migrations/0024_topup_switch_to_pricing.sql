-- The top-up master switch moves to the credit pricing settings (`billing.pricing`.topUpEnabled, owned by the catalog):
-- a switched-off top-up builder stays switched off.
INSERT INTO "settings" ("key", "value", "updated_at")
  SELECT 'billing.pricing', '{"topUpEnabled": false}'::jsonb, now() FROM "topup_settings" WHERE "enabled" = false
  ON CONFLICT ("key") DO UPDATE SET "value" = "settings"."value" || '{"topUpEnabled": false}'::jsonb;--> statement-breakpoint
ALTER TABLE "topup_settings" DROP COLUMN "enabled";
