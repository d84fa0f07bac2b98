#!/usr/bin/env bash
# fault_kill_server_ssh.sh - fault_kill_server.sh launched as on real hosts: every namespace runs
# its own sshd on a management address and tools/mlf-fault reaches the hosts, and kills the
# server, only over ssh (docs/deploy.md "Trying it on one machine"); the same checks as the local
# run, and a clean teardown of the sshds and management links.
FAULT_VIA=ssh exec "$(dirname "$0")/fault_kill_server.sh"
