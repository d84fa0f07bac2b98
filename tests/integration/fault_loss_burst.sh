#!/usr/bin/env bash
# fault_loss_burst.sh - w1's dataplane drops 20% of the frames for 4 s (loss-burst) 5 s into
# training: the burst starts and ends, the dataplane retransmits (transfers still complete: w1's
# updates are applied during the burst), and mlf-fault's checks hold.
TEST_NAME=fault_loss_burst
SCENARIO=loss-burst
. "$(dirname "$0")/fault_lib.sh"
fault_run
fault_event_ok loss-burst start end
read -r t_s t_e < <(jq -rs 'map(select(.kind == "loss-burst")) | "\(map(select(.event == "start"))[0].t) \(map(select(.event == "end"))[0].t)"' "$SYS/faults.jsonl")
during=$(jq -s --argjson s "$t_s" --argjson e "$t_e" 'map(select(.worker == "w1" and .t > $s and .t < $e)) | length' "$SYS/records/applied.jsonl")
[ "$during" -gt 0 ] || fail "no update of w1 applied during its 20% loss burst"
ok "20% loss on w1 for 4 s: $during of its updates applied during the burst (retransmission)"
