#!/usr/bin/env bash
# fault_cut_link.sh - w2's dataplane drops every frame for 2 s (cut-link) 5 s into training: the
# cut starts and ends (mlf-tel), mlf-fault's checks hold (transfers lost in the cut are dropped or
# lost, none unaccounted; divergence before the cut within Div_max), and w2 pushes again after it.
TEST_NAME=fault_cut_link
SCENARIO=cut-link
. "$(dirname "$0")/fault_lib.sh"
fault_run
fault_event_ok cut-link start end
t_end=$(jq -s 'map(select(.kind == "cut-link" and .event == "end")) | first | .t' "$SYS/faults.jsonl")
after=$(jq -s --argjson e "$t_end" 'map(select(.t > $e)) | length' "$SYS/records/w2/pushes.jsonl")
[ "$after" -gt 0 ] || fail "w2 pushed nothing after the cut ended"
ok "link of w2 cut for 2 s and restored: w2 pushed $after updates after it"
