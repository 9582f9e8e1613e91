CREATE TABLE "topup_components" (
	"key" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"kind" text NOT NULL,
	"unit" text NOT NULL,
	"enabled" boolean DEFAULT false NOT NULL,
	"min_units" integer NOT NULL,
	"max_units" integer NOT NULL,
	"step" integer DEFAULT 1 NOT NULL,
	"default_units" integer NOT NULL,
	"tokens_per_unit" bigint,
	"pricing" jsonb NOT NULL,
	"sort_order" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "topup_components_units" CHECK ("topup_components"."min_units" > 0 AND "topup_components"."max_units" >= "topup_components"."min_units" AND "topup_components"."step" > 0)
);
--> statement-breakpoint
CREATE TABLE "topup_orders" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"selection" jsonb NOT NULL,
	"lines" jsonb NOT NULL,
	"applied_rules" jsonb NOT NULL,
	"subtotal_cents" bigint NOT NULL,
	"discount_cents" bigint NOT NULL,
	"amount_cents" bigint NOT NULL,
	"currency" text NOT NULL,
	"tokens" bigint NOT NULL,
	"bonus_tokens" bigint NOT NULL,
	"total_tokens" bigint NOT NULL,
	"channel" text NOT NULL,
	"payment_id" uuid,
	"tokens_granted" bigint DEFAULT 0 NOT NULL,
	"granted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "topup_orders_amount_positive" CHECK ("topup_orders"."amount_cents" > 0)
);
--> statement-breakpoint
CREATE TABLE "topup_rules" (
	"id" uuid PRIMARY KEY NOT NULL,
	"template" text,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"type" text NOT NULL,
	"active" boolean DEFAULT false NOT NULL,
	"priority" integer DEFAULT 0 NOT NULL,
	"rule_group" text,
	"effect" jsonb NOT NULL,
	"conditions" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "topup_rules_template_unique" UNIQUE("template")
);
--> statement-breakpoint
CREATE TABLE "topup_settings" (
	"id" text PRIMARY KEY DEFAULT 'default' NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"gateway_fee_bp" integer DEFAULT 500 NOT NULL,
	"vat_bp" integer DEFAULT 1500 NOT NULL,
	"profit_bp" integer DEFAULT 4000 NOT NULL,
	"profit_floor_bp" integer DEFAULT 1000 NOT NULL,
	"max_discount_bp" integer DEFAULT 5000 NOT NULL,
	"round_to_cents" integer DEFAULT 100 NOT NULL,
	"min_order_cents" bigint DEFAULT 2000 NOT NULL,
	"max_order_cents" bigint DEFAULT 1000000 NOT NULL,
	"chars_per_300_tokens" integer DEFAULT 1200 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "topup_orders" ADD CONSTRAINT "topup_orders_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "topup_orders_user_idx" ON "topup_orders" USING btree ("user_id","created_at","id");