-- A function's lock (nango.tryAcquireLock), per connection: one holder (a run's invocation id) until it is
-- released, the run ends, or it expires.
-- CreateTable
CREATE TABLE "orchestrator"."function_locks" (
    "environment_id" INTEGER NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "function_locks_pkey" PRIMARY KEY ("environment_id","provider_config_key","connection_id","key")
);

-- CreateIndex
CREATE INDEX "function_locks_owner_idx" ON "orchestrator"."function_locks"("owner");
