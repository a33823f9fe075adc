#!/usr/bin/env bash
# make stop: stop a cluster that `make run KEEP=1` left running.
source "$(dirname "$0")/lib.sh"
rl_choose_tmp
rl_stop_quietly
rl_log "stopped"
