CREATE TABLE "feature_flags" (
	"id" uuid PRIMARY KEY NOT NULL,
	"key" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"enabled" boolean DEFAULT false NOT NULL,
	"everyone" boolean DEFAULT false NOT NULL,
	"user_ids" uuid[] DEFAULT '{}' NOT NULL,
	"plans" text[] DEFAULT '{}' NOT NULL,
	"percentage" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "announcements" (
	"id" uuid PRIMARY KEY NOT NULL,
	"title" text NOT NULL,
	"body" text NOT NULL,
	"level" text NOT NULL,
	"link" text,
	"audience" text NOT NULL,
	"plans" text[] DEFAULT '{}' NOT NULL,
	"starts_at" timestamp with time zone NOT NULL,
	"ends_at" timestamp with time zone,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"notify_requested_at" timestamp with time zone,
	"notify_cursor" uuid,
	"notified_count" integer DEFAULT 0 NOT NULL,
	"notified_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "feature_flags_key_key" ON "feature_flags" USING btree ("key");--> statement-breakpoint
-- Both tables are small and read whole into an in-process cache on every instance: any write (an operator's SQL
-- included) announces "everything changed" (`"*"`) on the cache's channel, delivered when the transaction commits.
CREATE OR REPLACE FUNCTION notify_cache_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_ARGV[0], to_json('*'::text)::text);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER feature_flags_cache_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "feature_flags"
  FOR EACH STATEMENT EXECUTE FUNCTION notify_cache_all('cache_feature_flags');
--> statement-breakpoint
-- The notification round's progress columns change nothing a banner shows.
CREATE TRIGGER announcements_cache_notify AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF "title", "body", "level", "link", "audience", "plans", "starts_at", "ends_at" ON "announcements"
  FOR EACH STATEMENT EXECUTE FUNCTION notify_cache_all('cache_announcements');
