ALTER TABLE "community_posts" ADD COLUMN "author_visibility" text DEFAULT 'PUBLIC' NOT NULL;--> statement-breakpoint
ALTER TABLE "community_works" ADD COLUMN "author_visibility" text DEFAULT 'PUBLIC' NOT NULL;--> statement-breakpoint
-- Authors who already chose a narrower audience: their existing posts and works take it now (the preference had no
-- effect before this column; every other row keeps the PUBLIC default).
UPDATE "community_posts" SET "author_visibility" = "user_preferences"."profile_visibility"
  FROM "user_preferences"
  WHERE "user_preferences"."user_id" = "community_posts"."author_id" AND "user_preferences"."profile_visibility" <> 'PUBLIC';--> statement-breakpoint
UPDATE "community_works" SET "author_visibility" = "user_preferences"."profile_visibility"
  FROM "user_preferences"
  WHERE "user_preferences"."user_id" = "community_works"."user_id" AND "user_preferences"."profile_visibility" <> 'PUBLIC';
