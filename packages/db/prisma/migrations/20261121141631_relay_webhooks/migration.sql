-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "relay";

-- CreateTable
CREATE TABLE "relay"."webhook_settings" (
    "environment_id" INTEGER NOT NULL,
    "primary_url" TEXT,
    "secondary_url" TEXT,
    "on_auth_creation" BOOLEAN NOT NULL DEFAULT true,
    "on_auth_refresh_error" BOOLEAN NOT NULL DEFAULT true,
    "on_sync_error" BOOLEAN NOT NULL DEFAULT true,
    "on_sync_completion_always" BOOLEAN NOT NULL DEFAULT false,
    "on_async_action_completion" BOOLEAN NOT NULL DEFAULT true,
    "signing_key" TEXT NOT NULL,
    "previous_signing_key" TEXT,
    "previous_key_expires_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "webhook_settings_pkey" PRIMARY KEY ("environment_id")
);

-- CreateTable
CREATE TABLE "relay"."webhook_disabled_endpoints" (
    "environment_id" INTEGER NOT NULL,
    "url" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "disabled_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_disabled_endpoints_pkey" PRIMARY KEY ("environment_id","url")
);

-- CreateTable
CREATE TABLE "relay"."webhook_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "event_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "connection_id" TEXT,
    "provider_config_key" TEXT,
    "body" TEXT NOT NULL,
    "headers" JSONB NOT NULL DEFAULT '{}',
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "locked_until" TIMESTAMP(3),
    "last_status_code" INTEGER,
    "last_error" TEXT,
    "delivered_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "relay"."webhook_attempts" (
    "id" BIGSERIAL NOT NULL,
    "delivery_id" BIGINT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "started_at" TIMESTAMP(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "status_code" INTEGER,
    "error" TEXT,

    CONSTRAINT "webhook_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "webhook_deliveries_status_next_attempt_at_idx" ON "relay"."webhook_deliveries"("status", "next_attempt_at");

-- CreateIndex
CREATE INDEX "webhook_deliveries_environment_id_id_idx" ON "relay"."webhook_deliveries"("environment_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_event_id_url_key" ON "relay"."webhook_deliveries"("event_id", "url");

-- CreateIndex
CREATE INDEX "webhook_attempts_delivery_id_idx" ON "relay"."webhook_attempts"("delivery_id");

-- AddForeignKey
ALTER TABLE "relay"."webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_id_fkey" FOREIGN KEY ("delivery_id") REFERENCES "relay"."webhook_deliveries"("id") ON DELETE CASCADE ON UPDATE CASCADE;
