DROP INDEX "security_events_user_idx";--> statement-breakpoint
DROP INDEX "community_comments_parent_idx";--> statement-breakpoint
DROP INDEX "community_reports_queue_idx";--> statement-breakpoint
DROP INDEX "payments_user_idx";--> statement-breakpoint
DROP INDEX "admin_audit_log_target_idx";--> statement-breakpoint
DROP INDEX "admin_audit_log_action_idx";--> statement-breakpoint
DROP INDEX "admin_audit_log_actor_idx";--> statement-breakpoint
CREATE INDEX "users_created_idx" ON "users" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "wallet_ledger_payment_idx" ON "wallet_ledger" USING btree ("payment_id") WHERE "wallet_ledger"."payment_id" is not null;--> statement-breakpoint
CREATE INDEX "usage_records_key_feed_idx" ON "usage_records" USING btree ("user_id","api_key_id","created_at","id") WHERE "usage_records"."api_key_id" is not null;--> statement-breakpoint
CREATE INDEX "community_reports_created_idx" ON "community_reports" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "payments_created_idx" ON "payments" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "topup_orders_created_idx" ON "topup_orders" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "admin_audit_log_created_idx" ON "admin_audit_log" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "security_events_user_idx" ON "security_events" USING btree ("user_id","created_at","id");--> statement-breakpoint
CREATE INDEX "community_comments_parent_idx" ON "community_comments" USING btree ("parent_id","created_at","id");--> statement-breakpoint
CREATE INDEX "community_reports_queue_idx" ON "community_reports" USING btree ("status","created_at","id");--> statement-breakpoint
CREATE INDEX "payments_user_idx" ON "payments" USING btree ("user_id","created_at","id");--> statement-breakpoint
CREATE INDEX "admin_audit_log_target_idx" ON "admin_audit_log" USING btree ("target_type","target_id","created_at","id");--> statement-breakpoint
CREATE INDEX "admin_audit_log_action_idx" ON "admin_audit_log" USING btree ("action","created_at","id");--> statement-breakpoint
CREATE INDEX "admin_audit_log_actor_idx" ON "admin_audit_log" USING btree ("actor_id","created_at","id");