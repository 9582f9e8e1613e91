CREATE TABLE "api_key_budget_holds" (
	"request_id" text PRIMARY KEY NOT NULL,
	"api_key_id" uuid NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"tokens" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_key_spend" (
	"api_key_id" uuid NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"spent" bigint DEFAULT 0 NOT NULL,
	"reserved" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "api_key_spend_api_key_id_period_start_pk" PRIMARY KEY("api_key_id","period_start")
);
--> statement-breakpoint
CREATE TABLE "model_fallbacks" (
	"model_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"fallback_model_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "model_fallbacks_model_id_position_pk" PRIMARY KEY("model_id","position")
);
--> statement-breakpoint
DROP INDEX "usage_records_user_feed_idx";--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "budget_tokens" bigint;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "budget_period" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "rate_limit_per_minute" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "allowed_models" text[];--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "api_key_id" uuid;--> statement-breakpoint
ALTER TABLE "api_key_spend" ADD CONSTRAINT "api_key_spend_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "model_fallbacks_pair_key" ON "model_fallbacks" USING btree ("model_id","fallback_model_id");--> statement-breakpoint
CREATE INDEX "usage_records_user_feed_idx" ON "usage_records" USING btree ("user_id", "created_at", "id") INCLUDE ("operation", "status", "model_id", "input_units", "output_units", "credits_consumed", "latency_ms", "api_key_id");