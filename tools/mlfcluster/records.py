"""Reading a run folder: the processes' JSON-lines records (docs/fabric.md "Records"), the
runner's JSON documents (run.json, results.json, worker.json) and the run's system folders.

Every reader of tools/mlfcluster, tools/mlffault and bench/*.py goes through read_jsonl (or
read_jsonl_numbered) and read_json, so a malformed record is reported the same way everywhere:
RecordError "FILE:LINE: malformed JSON record (why)". A file still being written (or whose
writer was killed) may end in a partial line: a last line without its newline that is not JSON
is skipped, never an error (docs/experiments.md "Reading the records; the summary table")."""
import json
import os


class RecordError(ValueError):
    """A malformed or unreadable record file: one line naming the file (and the line)."""


def read_jsonl(path, need=(), missing_ok=True):
    """The records of the JSON-lines file PATH, one JSON object a line, as an iterator of dicts
    in file order (read_jsonl_numbered without the line numbers)."""
    for _, rec in read_jsonl_numbered(path, need, missing_ok):
        yield rec


def read_jsonl_numbered(path, need=(), missing_ok=True):
    """The records of the JSON-lines file PATH as an iterator of (line number from 1, dict) in
    file order; blank lines are skipped. A missing file has none, or with MISSING_OK false
    raises RecordError "PATH: missing". A partial last line (no newline, not JSON) is skipped;
    any other line that is not a JSON object raises RecordError naming PATH and the line
    number, as does a record without one of the keys NEED ('record without "KEY"')."""
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        if not missing_ok:
            raise RecordError("%s: missing" % path) from None
        return
    except OSError as e:
        raise RecordError("%s: cannot read: %s" % (path, e.strerror)) from None
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                if not line.endswith("\n"):
                    return  # the writer has not finished this line
                raise RecordError("%s:%d: malformed JSON record (%s)" % (path, n, e.msg)) from None
            if not isinstance(rec, dict):
                raise RecordError("%s:%d: malformed JSON record (not an object)" % (path, n))
            for k in need:
                if k not in rec:
                    raise RecordError('%s:%d: record without "%s"' % (path, n, k))
            yield n, rec


def read_json(path, missing_ok=True):
    """The JSON document of PATH (run.json, results.json, worker.json: one value, any layout);
    None when the file is missing or empty, or with MISSING_OK false RecordError "PATH: missing"
    or "PATH: empty"; RecordError naming PATH and the line when it is not JSON."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError):
        if not missing_ok:
            raise RecordError("%s: missing" % path) from None
        return None
    except OSError as e:
        raise RecordError("%s: cannot read: %s" % (path, e.strerror)) from None
    if not text.strip():
        if not missing_ok:
            raise RecordError("%s: empty" % path)
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError("%s:%d: malformed JSON (%s)" % (path, e.lineno, e.msg)) from None


def count_records(path):
    """The number of records of the JSON-lines file PATH (read_jsonl)."""
    return sum(1 for _ in read_jsonl(path))


SCHED_FRESH = 1 << 62  # scheduler-chosen transfer ids: 1 << 62 | (start ms << 20) + counter (docs/control.md)


def first_planned_after_kills(path, kills):
    """For each scheduler kill time in KILLS (CLOCK_REALTIME s, ascending), the earliest planned
    start (s) of a transfer in the scheduler's transfers.jsonl PATH that the scheduler restarted
    after that kill (and before the next one) chose, or None when it planned none yet. A
    scheduler-chosen id carries the ms its scheduler started at (SCHED_FRESH), so the id tells
    which scheduler planned it; the runner waits for these before a fault run may stop on its
    target, and mlf-fault's "scheduler restart" check reports them."""
    first = [None] * len(kills)
    for _, r in read_jsonl_numbered(path, need=("xfer", "start")):
        x = r["xfer"]
        if not (isinstance(x, int) and x & SCHED_FRESH):
            continue
        ms = (x & (SCHED_FRESH - 1)) >> 20
        for i, t_kill in enumerate(kills):
            if ms >= int(t_kill * 1000) and (i + 1 == len(kills) or ms < int(kills[i + 1] * 1000)):
                first[i] = r["start"] if first[i] is None else min(first[i], r["start"])
    return first


def nonempty(path):
    """PATH exists and is not empty."""
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


def run_systems(run):
    """The system folders of a run (with run.json), in the experiment's order, then the others."""
    names = []
    exp = read_json(os.path.join(run, "experiment.json"))
    if isinstance(exp, dict) and isinstance(exp.get("systems"), list):
        names += [s for s in exp["systems"] if isinstance(s, str)]
    names += sorted(os.listdir(run))
    seen, out = set(), []
    for s in names:
        if s not in seen:
            seen.add(s)
            if os.path.isfile(os.path.join(run, s, "run.json")):
                out.append(s)
    return out
