CREATE TABLE "subscription_changes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"subscription_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"status" text NOT NULL,
	"from_plan_id" uuid,
	"from_cycle" integer NOT NULL,
	"to_plan_id" uuid NOT NULL,
	"to_plan_name" text NOT NULL,
	"to_plan_interval" text NOT NULL,
	"to_plan_allowance" bigint NOT NULL,
	"plan_price_cents" bigint NOT NULL,
	"unused_credit_cents" bigint DEFAULT 0 NOT NULL,
	"discount_cents" bigint DEFAULT 0 NOT NULL,
	"amount_due_cents" bigint NOT NULL,
	"currency" text NOT NULL,
	"coupon_id" uuid,
	"channel" text,
	"recurring" boolean DEFAULT false NOT NULL,
	"payment_id" uuid,
	"paid_at" timestamp with time zone,
	"effective_at" timestamp with time zone,
	"applied_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "subscription_reminders" (
	"subscription_id" uuid NOT NULL,
	"cycle" integer NOT NULL,
	"kind" text NOT NULL,
	"sent_at" timestamp with time zone NOT NULL,
	CONSTRAINT "subscription_reminders_subscription_id_cycle_kind_pk" PRIMARY KEY("subscription_id","cycle","kind")
);
--> statement-breakpoint
CREATE TABLE "coupon_redemptions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"coupon_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"change_id" uuid NOT NULL,
	"discount_cents" bigint NOT NULL,
	"status" text DEFAULT 'RESERVED' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "coupons" (
	"id" uuid PRIMARY KEY NOT NULL,
	"code" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"applies_to" text DEFAULT 'PLAN' NOT NULL,
	"plan_ids" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"discount_type" text NOT NULL,
	"percent_off" integer,
	"amount_off_cents" bigint,
	"currency" text,
	"min_order_cents" bigint DEFAULT 0 NOT NULL,
	"starts_at" timestamp with time zone,
	"ends_at" timestamp with time zone,
	"max_redemptions" integer,
	"redeemed_count" integer DEFAULT 0 NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "coupons_redemptions_within_limit" CHECK ("coupons"."max_redemptions" is null or "coupons"."redeemed_count" <= "coupons"."max_redemptions"),
	CONSTRAINT "coupons_redeemed_not_negative" CHECK ("coupons"."redeemed_count" >= 0)
);
--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "cycle" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "cycle_value_cents" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "channel" text;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "grace_ends_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "canceled_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "subscription_changes" ADD CONSTRAINT "subscription_changes_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscription_changes" ADD CONSTRAINT "subscription_changes_subscription_id_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."subscriptions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscription_changes" ADD CONSTRAINT "subscription_changes_from_plan_id_plans_id_fk" FOREIGN KEY ("from_plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscription_changes" ADD CONSTRAINT "subscription_changes_to_plan_id_plans_id_fk" FOREIGN KEY ("to_plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscription_reminders" ADD CONSTRAINT "subscription_reminders_subscription_id_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."subscriptions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "coupon_redemptions" ADD CONSTRAINT "coupon_redemptions_coupon_id_coupons_id_fk" FOREIGN KEY ("coupon_id") REFERENCES "public"."coupons"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "coupon_redemptions" ADD CONSTRAINT "coupon_redemptions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "subscription_changes_open_key" ON "subscription_changes" USING btree ("user_id") WHERE "subscription_changes"."status" in ('AWAITING_PAYMENT', 'SCHEDULED');--> statement-breakpoint
CREATE UNIQUE INDEX "subscription_changes_payment_key" ON "subscription_changes" USING btree ("payment_id");--> statement-breakpoint
CREATE INDEX "subscription_changes_subscription_idx" ON "subscription_changes" USING btree ("subscription_id","created_at");--> statement-breakpoint
CREATE INDEX "subscription_changes_due_idx" ON "subscription_changes" USING btree ("status","effective_at");--> statement-breakpoint
CREATE UNIQUE INDEX "coupon_redemptions_once_per_customer_key" ON "coupon_redemptions" USING btree ("coupon_id","user_id") WHERE "coupon_redemptions"."status" <> 'RELEASED';--> statement-breakpoint
CREATE UNIQUE INDEX "coupon_redemptions_change_key" ON "coupon_redemptions" USING btree ("change_id");--> statement-breakpoint
CREATE INDEX "coupon_redemptions_coupon_idx" ON "coupon_redemptions" USING btree ("coupon_id");--> statement-breakpoint
CREATE UNIQUE INDEX "coupons_code_key" ON "coupons" USING btree ("code");--> statement-breakpoint
CREATE UNIQUE INDEX "subscriptions_trial_once_key" ON "subscriptions" USING btree ("user_id") WHERE "subscriptions"."origin" = 'TRIAL';--> statement-breakpoint
CREATE INDEX "subscriptions_due_idx" ON "subscriptions" USING btree ("status","ends_at");