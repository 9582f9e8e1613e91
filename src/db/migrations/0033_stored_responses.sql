CREATE TABLE "stored_responses" (
	"id" text PRIMARY KEY NOT NULL,
	"request_id" text NOT NULL,
	"owner_type" text NOT NULL,
	"owner_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"previous_response_id" text,
	"input_items" jsonb NOT NULL,
	"response" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "stored_responses_owner_idx" ON "stored_responses" USING btree ("owner_type","owner_id");--> statement-breakpoint
CREATE INDEX "stored_responses_expiry_idx" ON "stored_responses" USING btree ("expires_at");