-- CreateTable
CREATE TABLE "orchestrator"."records" (
    "id" UUID NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "external_id" TEXT NOT NULL,
    "data_hash" TEXT NOT NULL,
    "payload" TEXT,
    "size_bytes" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,
    "deleted_at" TIMESTAMPTZ(6),
    "pruned_at" TIMESTAMPTZ(6),
    "last_run_id" UUID,

    CONSTRAINT "records_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "orchestrator"."record_seen" (
    "id" BIGSERIAL NOT NULL,
    "run_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "record_ids" UUID[],
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "record_seen_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "orchestrator"."record_run_counts" (
    "run_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "added" INTEGER NOT NULL DEFAULT 0,
    "updated" INTEGER NOT NULL DEFAULT 0,
    "deleted" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "record_run_counts_pkey" PRIMARY KEY ("run_id","model")
);

-- CreateTable
CREATE TABLE "orchestrator"."record_counts" (
    "environment_id" INTEGER NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "record_counts_pkey" PRIMARY KEY ("environment_id","provider_config_key","connection_id","model")
);

-- CreateIndex
CREATE INDEX "records_page_idx" ON "orchestrator"."records"("environment_id", "provider_config_key", "connection_id", "model", "updated_at", "id");

-- CreateIndex
CREATE INDEX "record_seen_run_id_model_idx" ON "orchestrator"."record_seen"("run_id", "model");

-- CreateIndex
CREATE INDEX "record_seen_created_at_idx" ON "orchestrator"."record_seen"("created_at");
