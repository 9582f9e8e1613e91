ALTER TABLE "community_comments" ADD COLUMN "hidden_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "community_reports" ADD COLUMN "resolved_by" uuid;--> statement-breakpoint
ALTER TABLE "community_reports" ADD COLUMN "resolution_note" text;