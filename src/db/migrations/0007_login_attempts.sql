CREATE TABLE "login_attempts" (
	"key" text PRIMARY KEY NOT NULL,
	"attempts" timestamp with time zone[] DEFAULT '{}'::timestamptz[] NOT NULL,
	"admitted" boolean DEFAULT true NOT NULL,
	"locked_until" timestamp with time zone
);
--> statement-breakpoint
-- Carry the failures of the last 15 minutes and the live locks over, so a deploy does not hand out fresh attempts.
INSERT INTO "login_attempts" ("key", "attempts")
SELECT "key", array_agg("created_at" ORDER BY "created_at")
FROM (
	SELECT 'email:' || "email" AS "key", "created_at" FROM "login_failures"
	UNION ALL
	SELECT 'user:' || "user_id", "created_at" FROM "login_failures" WHERE "user_id" IS NOT NULL
) AS "failures"
WHERE "created_at" > now() - interval '15 minutes'
GROUP BY "key";--> statement-breakpoint
INSERT INTO "login_attempts" ("key", "locked_until")
SELECT "key", "locked_until" FROM "login_locks" WHERE "locked_until" > now()
ON CONFLICT ("key") DO UPDATE SET "locked_until" = excluded."locked_until", "attempts" = '{}'::timestamptz[];--> statement-breakpoint
DROP TABLE "login_failures" CASCADE;--> statement-breakpoint
DROP TABLE "login_locks" CASCADE;
