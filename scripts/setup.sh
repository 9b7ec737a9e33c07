#!/usr/bin/env bash
# Installs and starts what Switchboard needs on a fresh machine, then builds it. Safe to run again.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
setup_all
