"""Reading a run folder's JSON and JSON-lines records, and jq-compatible number formatting.

A record that a check needs and that is missing or malformed raises RecordError, whose message
is one line naming the file (and the line of a JSON-lines file)."""
import json
import math

from mlfcluster.records import nonempty  # noqa: F401 (checks.py takes it from here)


class RecordError(Exception):
    """A missing or malformed record; str() is one line naming the file."""


def read_json(path):
    """The JSON document in PATH."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise RecordError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise RecordError(f"{path}: malformed JSON (line {e.lineno}: {e.msg})") from None


def read_jsonl(path, need=(), missing_ok=False):
    """The records of the JSON-lines file PATH as (line number, object) pairs, blank lines skipped.
    Every record must be an object with the keys NEED. A missing file is [] with MISSING_OK."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        if missing_ok:
            return []
        raise RecordError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"{path}: cannot read: {e}") from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"{path}:{n}: malformed JSON record ({e.msg})") from None
        if not isinstance(rec, dict):
            raise RecordError(f"{path}:{n}: not a JSON object")
        for k in need:
            if k not in rec:
                raise RecordError(f'{path}:{n}: record without "{k}"')
        out.append((n, rec))
    return out


def number(rec, key, path, n):
    """REC[KEY] as a number (not a boolean), else RecordError naming PATH line N."""
    v = rec.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        where = f"{path}:{n}" if n else path
        raise RecordError(f'{where}: "{key}" is {json.dumps(v)}, expected a number')
    return v


def truthy(v):
    """jq's truth: everything but null and false (0 and "" are true)."""
    return v is not None and v is not False


def jqs(v):
    """V as `jq -r` prints it: integral numbers without a fraction, strings raw, null, true."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e17:
        return str(int(v))
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return json.dumps(v, separators=(",", ":"))


def jq_round(x, scale):
    """jq's `x * scale | round / scale` (C round: halves away from zero)."""
    y = x * scale
    r = math.floor(abs(y) + 0.5)
    return math.copysign(r, y) / scale
