#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-credits.sh PORT -- a client that keeps exactly as many requests in
# flight as the server's credits (16 by default), sending the next one as
# each reply arrives, is served 10000 times and never disconnected.
source "$(dirname "$0")/lib.sh"

rmp_init credits "$1"
daemon_start
check rmp_raw credits 10000
daemon_stop
rmp_pass
