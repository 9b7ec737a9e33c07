-- CreateTable
CREATE TABLE "orchestrator"."syncs" (
    "id" UUID NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "variant" TEXT NOT NULL DEFAULT 'base',
    "frequency" TEXT,
    "last_sync_date" TIMESTAMP(3),
    "reset_pending" BOOLEAN NOT NULL DEFAULT false,
    "latest_result" JSONB,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "syncs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "orchestrator"."sync_runs" (
    "id" UUID NOT NULL,
    "sync_id" UUID NOT NULL,
    "status" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "version_id" UUID,
    "workflow_id" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "started_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMP(3),
    "error" JSONB,
    "checkpoint_before" JSONB,
    "checkpoint_after" JSONB,
    "result" JSONB,

    CONSTRAINT "sync_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "syncs_environment_id_provider_config_key_name_idx" ON "orchestrator"."syncs"("environment_id", "provider_config_key", "name");

-- CreateIndex
CREATE UNIQUE INDEX "syncs_connection_name_variant_key" ON "orchestrator"."syncs"("environment_id", "provider_config_key", "connection_id", "name", "variant");

-- CreateIndex
CREATE INDEX "sync_runs_sync_id_started_at_idx" ON "orchestrator"."sync_runs"("sync_id", "started_at");

-- AddForeignKey
ALTER TABLE "orchestrator"."sync_runs" ADD CONSTRAINT "sync_runs_sync_id_fkey" FOREIGN KEY ("sync_id") REFERENCES "orchestrator"."syncs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
