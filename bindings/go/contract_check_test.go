package bitt

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
)

// ---- expectations -----------------------------------------------------------

func (r *run) checkVersion(exp obj, v uint64, what string) {
	if v < 1 {
		mismatchf("%s %d < 1", what, v)
	}
	for _, op := range []string{"version_eq", "version_ne", "version_gt", "version_lt"} {
		name, ok := exp[op]
		if !ok {
			continue
		}
		other, ok := r.vars[name.(string)].(uint64)
		if !ok {
			brokenf("variable %v not set", name)
		}
		good := map[string]bool{"version_eq": v == other, "version_ne": v != other,
			"version_gt": v > other, "version_lt": v < other}[op]
		if !good {
			mismatchf("%s: %d vs %v=%d", op, v, name, other)
		}
	}
}

func counterOf(e *Entry) *big.Int {
	n, err := e.Counter()
	if err != nil {
		return nil
	}
	return bi(n)
}

func (r *run) checkEntry(exp obj, e *Entry, what string) {
	checkMembers(exp, []string{"key", "value", "kind", "expires_at", "counter", "version_eq", "version_ne",
		"version_gt", "version_lt", "status"}, what)
	checkFields(exp, what, map[string]any{"key": e.Key, "value": e.Value, "kind": kindOf(e.Kind),
		"expires_at": bi(unixMs(e.ExpiresAt))})
	if v, ok := exp["counter"]; ok {
		var want *big.Int
		if v != nil {
			want = num(v)
		}
		eq(what+" counter", counterOf(e), want)
	}
	r.checkVersion(exp, e.Version, what+" version")
}

var msgFields = []string{"id", "topic", "payload", "kind", "attempts", "max_attempts", "last_error",
	"created_at", "due_at", "failed_at", "park_reason", "token", "state", "priority", "done_at", "result",
	"result_kind"}

var stateNames = map[string]MessageState{"pending": StatePending, "delayed": StateDelayed,
	"leased": StateLeased, "dead": StateDead, "done": StateDone}

func (r *run) checkMessages(exp obj, msgs []*Message) {
	if v, ok := exp["count"]; ok {
		eq("count", bi(int64(len(msgs))), num(v))
	}
	if v, ok := exp["ids"]; ok {
		var got, want []uint64
		for _, m := range msgs {
			got = append(got, m.ID)
		}
		for _, x := range v.(arr) {
			want = append(want, r.idnum(x))
		}
		eq("ids", fmt.Sprint(got), fmt.Sprint(want))
	}
	if v, ok := exp["payloads"]; ok {
		want := v.(arr)
		eq("payloads count", len(msgs), len(want))
		for i, m := range msgs {
			eq(fmt.Sprintf("payload %d", i), m.Payload, bstr(want[i]))
		}
	}
	if v, ok := exp["messages"]; ok {
		want := v.(arr)
		eq("messages count", len(msgs), len(want))
		for i, m := range msgs {
			r.checkMessage(want[i].(obj), m, fmt.Sprintf("message %d", i))
		}
	}
}

// checkMessage compares the fields e names with m.
func (r *run) checkMessage(e obj, m *Message, w string) {
	checkMembers(e, msgFields, w)
	if x, ok := e["id"]; ok {
		eq(w+" id", m.ID, r.idnum(x))
	}
	if x, ok := e["topic"]; ok {
		eq(w+" topic", []byte(m.Topic), bstr(x))
	}
	if x, ok := e["payload"]; ok {
		eq(w+" payload", m.Payload, bstr(x))
	}
	if x, ok := e["kind"]; ok {
		eq(w+" kind", int(m.Kind), kind(x))
	}
	if x, ok := e["token"]; ok {
		if x == nil {
			eq(w+" token", m.hasToken, false)
		} else {
			eq(w+" token", m.Token, r.token(x))
		}
	}
	nums := map[string]*big.Int{"attempts": bu(uint64(m.Attempts)), "max_attempts": bu(uint64(m.MaxAttempts)),
		"created_at": bi(unixMs(m.CreatedAt)), "due_at": bi(unixMs(m.DueAt)), "failed_at": bi(unixMs(m.FailedAt))}
	for f, got := range nums {
		if x, ok := e[f]; ok {
			eq(w+" "+f, got, num(x))
		}
	}
	if x, ok := e["last_error"]; ok {
		if x == nil {
			eq(w+" last_error", m.hasLastError, false)
		} else {
			eq(w+" last_error", m.LastError, x.(string))
			eq(w+" last_error set", m.hasLastError, true)
		}
	}
	if x, ok := e["park_reason"]; ok {
		eq(w+" park_reason", m.ParkReason, reason(x))
	}
	if x, ok := e["priority"]; ok {
		eq(w+" priority", bi(int64(m.Priority)), num(x))
	}
	if x, ok := e["state"]; ok {
		name, _ := x.(string)
		want, known := stateNames[name]
		if !known {
			brokenf("state is pending, delayed, leased, dead or done, not %v", x)
		}
		eq(w+" state", m.State.String(), want.String())
	}
	r.checkDone(e, m, w)
}

func (r *run) schedFields(exp obj, s *Schedule, what string) {
	checkMembers(exp, []string{"key", "interval", "payload", "kind", "next_run_at", "occurrence", "cron", "topic",
		"message_id", "status"}, what)
	checkFields(exp, what, map[string]any{"key": []byte(s.Key), "interval": bi(s.Interval.Milliseconds()),
		"payload": s.Payload, "kind": kindOf(s.Kind), "next_run_at": bi(unixMs(s.NextRunAt)),
		"occurrence": bi(unixMs(s.Occurrence))})
	r.checkScheduleV7(exp, s, what)
}

// kindOf marks a kind for checkFields (compared with a kind name or number).
type kindOf Kind

// checkFields compares the fields exp names with got: bytes with a byte
// string, numbers with a number, kinds with a kind.
func checkFields(exp obj, what string, got map[string]any) {
	for f, g := range got {
		v, ok := exp[f]
		if !ok {
			continue
		}
		switch x := g.(type) {
		case []byte:
			eq(what+" "+f, x, bstr(v))
		case kindOf:
			eq(what+" "+f, int(x), kind(v))
		default:
			eq(what+" "+f, g, num(v))
		}
	}
}

func onlyStatus(exp obj) bool {
	for k := range exp {
		if k != "status" && k != "note" {
			return false
		}
	}
	return true
}

func (r *run) checkExpect(op string, exp obj, st int, result res, what string) {
	want := 0
	if sn, ok := exp["status"]; ok {
		c, ok := statusCodes[sn.(string)]
		if !ok {
			brokenf("unknown status %v", sn)
		}
		want = c
	}
	if st != want {
		mismatchf("%s: status: expected %s, got %s", what, statusName(want), statusName(st))
	}
	if st < 0 {
		if !onlyStatus(exp) {
			brokenf("result fields with an error status")
		}
		return
	}
	switch op {
	case "kv.get", "kv.take":
		e, _ := result["entry"].(*Entry)
		if st == 0 {
			if e == nil {
				mismatchf("ok without an entry")
			}
			r.checkEntry(exp, e, "entry")
		} else if !onlyStatus(exp) {
			brokenf("result fields with not_found on get/take")
		}
		return
	case "kv.get_many", "kv.list":
		checkMembers(exp, []string{"status", "entries", "keys", "count", "has_cursor", "pages"}, op)
		ents, _ := result["entries"].([]*Entry)
		if v, ok := exp["count"]; ok {
			eq("count", bi(int64(len(ents))), num(v))
		}
		if v, ok := exp["keys"]; ok {
			wantKeys := r.keylist(v.(arr), true)
			eq("keys count", len(ents), len(wantKeys))
			for i, e := range ents {
				var k []byte
				if e != nil {
					k = e.Key
				}
				eq(fmt.Sprintf("key %d", i), k, wantKeys[i])
			}
		}
		if v, ok := exp["entries"]; ok {
			we := v.(arr)
			eq("entries count", len(ents), len(we))
			for i, e := range ents {
				x, _ := we[i].(obj)
				if x == nil || e == nil {
					eq(fmt.Sprintf("slot %d present", i), e != nil, x != nil)
				} else {
					r.checkEntry(x, e, fmt.Sprintf("slot %d", i))
				}
			}
		}
		if v, ok := exp["has_cursor"]; ok {
			eq("has_cursor", result["cursor"] != nil, v.(bool))
		}
		if v, ok := exp["pages"]; ok {
			eq("pages", result["pages"], num(v))
		}
		for _, e := range ents {
			if e != nil && e.Version < 1 {
				mismatchf("version < 1")
			}
		}
		return
	case "kv.set", "kv.add", "kv.increment", "txn":
		checkMembers(exp, []string{"status", "version_eq", "version_ne", "version_gt", "version_lt", "counter"}, op)
		if st == 0 {
			r.checkVersion(exp, result["version"].(uint64), "version")
		}
		if v, ok := exp["counter"]; ok {
			eq("counter", result["counter"], num(v))
		}
		return
	case "queue.ack_many":
		checkMembers(exp, []string{"status", "statuses", "count"}, op)
		if st != 0 {
			return
		}
		if v, ok := exp["statuses"]; ok {
			got := []string{}
			for _, x := range result["statuses"].([]int32) {
				got = append(got, statusName(int(x)))
			}
			want := []string{}
			for _, x := range v.(arr) {
				want = append(want, x.(string))
			}
			eq("statuses", strings.Join(got, ","), strings.Join(want, ","))
		}
		if v, ok := exp["count"]; ok {
			eq("count", result["count"], num(v))
		}
		return
	case "queue.dequeue", "queue.dead_list", "outbox.pending", "outbox.parked":
		checkMembers(exp, []string{"status", "count", "ids", "payloads", "messages"}, op)
		msgs, _ := result["messages"].([]*Message)
		r.checkMessages(exp, msgs)
		return
	case "queue.get":
		checkMembers(exp, []string{"status", "message"}, op)
		if v, ok := exp["message"]; ok && st == 0 {
			e, ok := v.(obj)
			if !ok {
				brokenf("queue.get: message is an object")
			}
			r.checkMessage(e, result["message"].(*Message), "message")
		}
		return
	case "schedule.claim", "schedule.get":
		if st == 0 {
			r.schedFields(exp, result["schedule"].(*Schedule), "schedule")
		}
		return
	case "schedule.list":
		checkMembers(exp, []string{"status", "schedules", "keys", "count"}, op)
		sc := result["schedules"].([]*Schedule)
		if v, ok := exp["count"]; ok {
			eq("count", bi(int64(len(sc))), num(v))
		}
		if v, ok := exp["keys"]; ok {
			wk := v.(arr)
			eq("keys count", len(sc), len(wk))
			for i, s := range sc {
				eq(fmt.Sprintf("key %d", i), []byte(s.Key), bstr(wk[i]))
			}
		}
		if v, ok := exp["schedules"]; ok {
			ws := v.(arr)
			eq("schedules count", len(sc), len(ws))
			for i, s := range sc {
				r.schedFields(ws[i].(obj), s, fmt.Sprintf("schedule %d", i))
			}
		}
		return
	case "tuple.decode":
		checkMembers(exp, []string{"status", "tuple"}, op)
		if v, ok := exp["tuple"]; ok {
			got := result["tuple"].([]any)
			wp := v.(arr)
			eq("tuple length", len(got), len(wp))
			for i := range got {
				a, b := got[i], tuplePart(wp[i])
				if fa, ok := a.(float64); ok {
					if fb, ok := b.(float64); !ok || math.Float64bits(fa) != math.Float64bits(fb) {
						mismatchf("part %d: expected %v, got %v", i, b, a)
					}
				} else if !equal(a, b) {
					mismatchf("part %d: expected %v (%T), got %v (%T)", i, b, b, a, a)
				}
			}
		}
		return
	case "tuple.encode":
		checkMembers(exp, []string{"status", "hex"}, op)
		if v, ok := exp["hex"]; ok {
			eq("hex", result["hex"], lower(v.(string)))
		}
		return
	}
	keys := make([]string, 0, len(exp))
	for k := range exp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, f := range keys {
		v := exp[f]
		switch {
		case f == "status" || f == "note":
		case op == "queue.enqueue" && f == "id":
			eq("id", result["id"], r.idnum(v))
		case op == "queue.enqueue" && f == "id_ne":
			if result["id"] == r.idnum(v) {
				mismatchf("id %v equals %v", result["id"], v)
			}
		case op == "outbox.append" && f == "seq_gt":
			if !(result["seq"].(uint64) > r.idnum(v)) {
				mismatchf("seq %v not > %v", result["seq"], v)
			}
		case f == "epoch":
			eq("epoch", result["epoch"], r.idnum(v))
		case f == "owner" || f == "payload" || f == "channel":
			eq(f, result[f], bstr(v))
		default:
			got, ok := result[f]
			if !ok {
				brokenf("%s: unknown expect member %s", op, f)
			}
			eq(f, got, num(v))
		}
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func (r *run) save(op string, save obj, result res) {
	for what, target := range save {
		switch what {
		case "version":
			var v any
			if op == "kv.get" || op == "kv.take" {
				if e, _ := result["entry"].(*Entry); e != nil {
					v = e.Version
				}
			} else {
				v = result["version"]
			}
			if v == nil {
				brokenf("save: no version")
			}
			r.vars[target.(string)] = v
		case "cursor":
			r.vars[target.(string)] = result["cursor"]
		case "id", "seq", "epoch":
			r.vars[target.(string)] = result[what]
		case "sub":
			h, _ := result["sub"].(uintptr)
			r.subs[target.(string)] = h
		case "ids", "tokens":
			msgs, ok := result["messages"].([]*Message)
			if !ok {
				brokenf("save: no messages")
			}
			for i, t := range target.(arr) {
				if t == nil {
					continue
				}
				if i >= len(msgs) {
					mismatchf("save %s: index %d past the end (%d)", what, i, len(msgs))
				}
				if what == "ids" {
					r.vars[t.(string)] = msgs[i].ID
				} else if msgs[i].hasToken {
					r.vars[t.(string)] = msgs[i].Token
				} else {
					r.vars[t.(string)] = nil
				}
			}
		default:
			brokenf("unknown save %s", what)
		}
	}
}
