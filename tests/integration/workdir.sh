# tests/integration/workdir.sh - the end of an integration test's work directory (sourced by
# lib.sh, fabric_lib.sh, fault_lib.sh and the tests with their own EXIT trap).

# work_done RC: remove the work directory WORK at the test's end; when the test failed (RC not 0)
# and MLF_KEEP_FAILED names a folder, first copy WORK (logs, records, run folders) to
# MLF_KEEP_FAILED/TEST_NAME.XXXXXX and say where on stderr. `make test-under-load` sets it to
# build/failed-tests: a failure that only load brings is then read from its own records.
work_done() {
	local rc=$1 keep
	[ -n "${WORK:-}" ] && [ -d "$WORK" ] || return 0
	if [ "$rc" -ne 0 ] && [ -n "${MLF_KEEP_FAILED:-}" ]; then
		if mkdir -p "$MLF_KEEP_FAILED" && keep=$(mktemp -d "$MLF_KEEP_FAILED/${TEST_NAME:-test}.XXXXXX") &&
			cp -a "$WORK/." "$keep/"; then
			echo "kept the failed test's work directory $WORK in $keep" >&2
		else
			echo "could not keep $WORK in $MLF_KEEP_FAILED" >&2
		fi
	fi
	rm -rf "$WORK"
}
