#!/usr/bin/env bash
# test_mlf_plan.sh - command-line test of mlf-plan: every conf/plan-*.json example, the paper
# figures' outcomes, --impl/--explain/stdin, and bad input (exit status, one-line error).
# Run from the repository root (make does); MLF_PLAN overrides the program path. Needs jq.
set -u
MLF_PLAN=${MLF_PLAN:-build/mlf-plan}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_bad STATUS 'stderr line' args... : exit status and exactly that one stderr line.
expect_bad() {
  local want_rc=$1 want_err=$2 rc
  shift 2
  "$MLF_PLAN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  [ "$rc" = "$want_rc" ] || fail "$*: exit $rc, want $want_rc"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$*: stderr has $(wc -l <"$tmp/err") lines, want 1"
  grep -qF -- "$want_err" "$tmp/err" || fail "$*: stderr '$(cat "$tmp/err")' lacks '$want_err'"
  [ -s "$tmp/out" ] && fail "$*: wrote a plan despite the error"
  return 0
}

command -v jq >/dev/null || { echo "FAIL: jq not installed (tools/install-deps)"; exit 1; }
[ -x "$MLF_PLAN" ] || { echo "FAIL: $MLF_PLAN not built"; exit 1; }

"$MLF_PLAN" --help | grep -q -- "--explain" || fail "--help does not describe --explain"

for f in conf/plan-*.json; do
  "$MLF_PLAN" --in "$f" --out "$tmp/plan.json" 2>"$tmp/err" || { fail "$f: exit $? ($(cat "$tmp/err"))"; continue; }
  jq -e . "$tmp/plan.json" >/dev/null || { fail "$f: plan is not JSON"; continue; }
  # Every update of the batch (except carried replica-only copies) in exactly one of order/dropped.
  want=$(jq -c '[.updates[] | select(.replica_only != true) | .id] | sort' "$f")
  got=$(jq -c '(.order + .dropped) | sort' "$tmp/plan.json")
  [ "$want" = "$got" ] || fail "$f: order+dropped $got, batch has $want"
  # The documented keys, in the documented order.
  # After "punted": "inflight" with a replica (copies under way after T_last), "unanswered"
  # with pulls (pulls no copy can reach).
  keys=$(jq -c 'keys_unsorted' "$tmp/plan.json")
  want_keys='"order","dropped","aggregates","transfers","commits","replica_commits","punted"'
  jq -e 'has("replica")' "$f" >/dev/null && want_keys="$want_keys,\"inflight\""
  jq -e '(.pulls // []) | length > 0' "$f" >/dev/null && want_keys="$want_keys,\"unanswered\""
  want_keys="[$want_keys,\"divergence_bound\",\"plan_ms\"]"
  [ "$keys" = "$want_keys" ] || fail "$f: plan keys $keys"
  # FAST and SIMPLE give the same plan; stdin gives the same plan as --in.
  "$MLF_PLAN" --impl simple <"$f" >"$tmp/simple.json" || fail "$f: --impl simple failed"
  [ "$(jq -S 'del(.plan_ms)' "$tmp/plan.json")" = "$(jq -S 'del(.plan_ms)' "$tmp/simple.json")" ] \
    || fail "$f: --impl simple plan differs from fast"
  "$MLF_PLAN" --in "$f" --explain >"$tmp/explain.txt" || fail "$f: --explain failed"
  grep -q "^order:" "$tmp/explain.txt" && grep -q "^links" "$tmp/explain.txt" \
    || fail "$f: --explain lacks the order or the link timeline"
done

# Paper situations: fig. 4 (t_en = 7 s over a stepped residual), fig. 5 (the 10 Mbit/s update g1
# with deadline 1 is dropped, g2 sent), fig. 1 (the oldest update j is applied first).
end=$("$MLF_PLAN" --in conf/plan-fig4.json | jq '[.transfers[] | select(.carries == "g")][0].end_s')
awk -v e="$end" 'BEGIN { exit !(e > 6.999 && e < 7.001) }' || fail "fig4: g ends at $end, want 7"
[ "$("$MLF_PLAN" --in conf/plan-fig5.json | jq -c '[.order, .dropped]')" = '[["g2"],["g1"]]' ] \
  || fail "fig5: want order [g2], dropped [g1]"
[ "$("$MLF_PLAN" --in conf/plan-fig1.json | jq -r '.order[0]')" = j ] || fail "fig1: j not first"
"$MLF_PLAN" --in conf/plan-example.json --explain | grep -q "^commits" || fail "example: no commits"

# Shards may be listed in any order: the plan is the same.
jq '.updates[1].shards |= reverse' conf/plan-sharded.json >"$tmp/rev.json"
[ "$("$MLF_PLAN" --in "$tmp/rev.json" | jq -S 'del(.plan_ms)')" = \
  "$("$MLF_PLAN" --in conf/plan-sharded.json | jq -S 'del(.plan_ms)')" ] \
  || fail "sharded: shard order changes the plan"

# Bad input: exit 2 and one line naming the field; missing files exit 1.
printf '{"hosts": [' >"$tmp/trunc.json"
expect_bad 2 "trunc.json: line 1 column" --in "$tmp/trunc.json"
jq '.updates[1].worker = "w9"' conf/plan-fig1.json >"$tmp/host.json"
expect_bad 2 'updates[1].worker: unknown host "w9"' --in "$tmp/host.json"
jq 'del(.updates[2].version)' conf/plan-fig1.json >"$tmp/miss.json"
expect_bad 2 'updates[2].version: missing required field' --in "$tmp/miss.json"
jq '.hosts[0].colour = "red"' conf/plan-fig1.json >"$tmp/key.json"
expect_bad 2 'hosts[0].colour: unknown key' --in "$tmp/key.json"
jq '.updates[3].id = "u0"' conf/plan-fig1.json >"$tmp/dup.json"
expect_bad 2 'updates[3].id: duplicate update id "u0"' --in "$tmp/dup.json"
jq '.updates[0].bytes = -1' conf/plan-fig1.json >"$tmp/neg.json"
expect_bad 2 'updates[0].bytes: must be > 0 bytes, got -1' --in "$tmp/neg.json"
expect_bad 1 'nope.json: No such file or directory' --in "$tmp/nope.json"
expect_bad 1 "$tmp/no/dir/plan.json: No such file or directory" --in conf/plan-fig1.json \
  --out "$tmp/no/dir/plan.json"
expect_bad 2 '--impl: expected fast or simple, got "quick"' --impl quick --in conf/plan-fig1.json
expect_bad 2 'unexpected argument "conf/plan-fig1.json"' conf/plan-fig1.json
# the planner's own refusals name the field (docs/plan-format.md "Reading rules (planio)"): a
# negative now_s, a replica link down for good, bytes 2^62
jq '.now_s = -5 | .updates[].ready_s = -5' conf/plan-replication.json >"$tmp/negnow.json"
expect_bad 2 'now_s: must be >= 0 seconds, got -5' --in "$tmp/negnow.json"
jq '.capacity_changes = [{"link": "rep.down", "at_s": 9.0, "gbps": 0}]' conf/plan-replication.json >"$tmp/repdown.json"
expect_bad 2 'replica rep: no replica commit keeps the divergence within div_max 1.2: its downlink or the path to it carries too little (at 0 Gbit/s for good: nothing)' --in "$tmp/repdown.json"
sed 's/"bytes": 40000000, "version": 2998/"bytes": 4611686018427387904, "version": 2998/' conf/plan-replication.json >"$tmp/huge.json"
expect_bad 2 'updates[1].bytes: out of range (1..1099511627776)' --in "$tmp/huge.json"
sed 's/"tau_max": 6/"tau_max": 4294967296/' conf/plan-replication.json >"$tmp/tau.json"
expect_bad 2 'tau_max: out of range (0..2147483648), got 4294967296' --in "$tmp/tau.json"
"$MLF_PLAN" <"$tmp/host.json" >/dev/null 2>"$tmp/err"
grep -qF 'stdin: updates[1].worker' "$tmp/err" || fail "stdin errors do not say stdin"

if [ "$fails" -ne 0 ]; then echo "test_mlf_plan: $fails failures"; exit 1; fi
echo "test_mlf_plan: all checks passed"
