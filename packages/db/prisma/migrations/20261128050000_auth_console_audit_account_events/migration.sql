-- Sign-ins and console user changes are the account's, not an environment's.
ALTER TABLE "auth"."console_audit_events" ALTER COLUMN "environment_id" DROP NOT NULL;

-- The audit log is read newest first by id, per account.
DROP INDEX "auth"."console_audit_events_account_id_created_at_idx";
CREATE INDEX "console_audit_events_account_id_id_idx" ON "auth"."console_audit_events"("account_id", "id");
