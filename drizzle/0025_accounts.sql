ALTER TYPE "public"."email_kind" ADD VALUE 'email_verification';--> statement-breakpoint
ALTER TYPE "public"."email_kind" ADD VALUE 'password_reset';--> statement-breakpoint
ALTER TYPE "public"."email_kind" ADD VALUE 'account_exists';--> statement-breakpoint
CREATE TABLE "account_tokens" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"purpose" text NOT NULL,
	"email" text NOT NULL,
	"user_id" uuid,
	"sign_up" jsonb,
	"created_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "flash_messages" DROP CONSTRAINT "flash_messages_session_id_sessions_id_fk";
--> statement-breakpoint
ALTER TABLE "email_outbox" ALTER COLUMN "organization_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "account_tokens" ADD CONSTRAINT "account_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "account_tokens_expires_idx" ON "account_tokens" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "account_tokens_user_idx" ON "account_tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "email_outbox_recipient_idx" ON "email_outbox" USING btree ("to_address","created_at");--> statement-breakpoint
-- E-mail verification arrives with this migration: the people who already have an account (and the demo's) count as verified.
UPDATE "users" SET "email_verified" = true WHERE "email_verified" = false;
