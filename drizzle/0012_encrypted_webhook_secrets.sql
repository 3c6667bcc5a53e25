-- Webhook signing secrets are kept encrypted (docs/secrets.md): sealed under the server's
-- SECRETS_KEY in signing_secret_encrypted. SQL cannot encrypt with a key only the app has, so
-- this migration only makes room: rows made before it keep their plain-text secret in
-- signing_secret until the app seals them when it starts (src/services/webhook-secrets.ts,
-- reencryptSigningSecrets) and clears the column. Every row has exactly one of the two.
ALTER TABLE "webhook_endpoints" ALTER COLUMN "signing_secret" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "signing_secret_encrypted" text;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_one_signing_secret" CHECK (("webhook_endpoints"."signing_secret_encrypted" is null) <> ("webhook_endpoints"."signing_secret" is null));
