-- A deletion-detection window per model of a connection's sync: `trackDeletesStart` opens it (or adds its
-- run to the open one), `trackDeletesEnd` closes it and soft-deletes what none of its runs saw. A
-- checkpointed full refresh spanning several runs keeps what its earlier runs saved.
-- CreateTable
CREATE TABLE "orchestrator"."record_delete_windows" (
    "environment_id" INTEGER NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "run_ids" UUID[],
    "opened_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "record_delete_windows_pkey" PRIMARY KEY ("environment_id","provider_config_key","connection_id","model")
);
