-- AlterTable
ALTER TABLE "vault"."connections" ADD COLUMN     "credentials_expires_at" TIMESTAMP(3),
ADD COLUMN     "last_refresh_error" JSONB,
ADD COLUMN     "last_refresh_failure" TIMESTAMP(3),
ADD COLUMN     "last_refresh_success" TIMESTAMP(3),
ADD COLUMN     "refresh_failures" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "refresh_lease_owner" TEXT,
ADD COLUMN     "refresh_lease_until" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "vault"."outbox_events" (
    "id" SERIAL NOT NULL,
    "event_id" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "outbox_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "outbox_events_event_id_key" ON "vault"."outbox_events"("event_id");

-- CreateIndex
CREATE INDEX "outbox_events_created_at_idx" ON "vault"."outbox_events"("created_at");
