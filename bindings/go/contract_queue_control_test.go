package bitt

// The queue-control steps of the contract (tests/contract/README.md,
// "Queue"; bitt.h 0.6): queue.get, queue.cancel, queue.reschedule, the
// dequeue over `topics`, `priority` on enqueues and the queue ops of a
// txn. Get runs through internal/raw, to check what the core hands out, and
// through Queue.Get, which must agree; the others through the public API
// (Queue.DequeueTopics, Queue.Cancel and Reschedule, the Txn.Queue*
// methods), so that the contract checks what a Go user calls.

import (
	"context"
	"math"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// priority reads an optional int32 member (default 0).
func priority(o obj) int32 {
	v, ok := o["priority"]
	if !ok || v == nil {
		return 0
	}
	n := num(v)
	if !n.IsInt64() || n.Int64() < math.MinInt32 || n.Int64() > math.MaxInt32 {
		brokenf("priority is an int32: %v", v)
	}
	return int32(n.Int64())
}

// dur is a duration argument in ms as a time.Duration (the public API's
// unit); one it cannot hold is a case the Go API cannot express.
func dur(v any) time.Duration {
	n := num(v)
	if !n.IsInt64() || n.Int64() > math.MaxInt64/int64(time.Millisecond) ||
		n.Int64() < math.MinInt64/int64(time.Millisecond) {
		brokenf("duration %v ms does not fit a time.Duration", v)
	}
	return durationOf(n.Int64())
}

// apiCode is the status of a public call's error: a *Error with a message.
func apiCode(err error) int {
	if err == nil {
		return 0
	}
	c := errCode(err)
	if err.(*Error).Message == "" {
		mismatchf("status %d: empty error message", c)
	}
	return c
}

// boolStatus maps a public call's (applied, err) to ok / not_found / the
// error's status.
func boolStatus(applied bool, err error) int {
	if err != nil {
		if applied {
			mismatchf("applied with an error")
		}
		return apiCode(err)
	}
	if applied {
		return 0
	}
	return 1
}

// topicsOf is a dequeue's `topics` (nil without it); `topic` and `topics`
// together are a broken case.
func topicsOf(s obj) []string {
	v, ok := s["topics"]
	if !ok {
		return nil
	}
	if _, both := s["topic"]; both {
		brokenf("a dequeue names \"topic\" or \"topics\", not both")
	}
	a, ok := v.(arr)
	if !ok {
		brokenf("\"topics\" is an array of names")
	}
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = name(x)
	}
	return out
}

func (r *run) execQueueControl(op string, s obj, g func(string, any) any) (int, res, bool) {
	ctx := context.Background()
	switch op {
	case "queue.dequeue":
		topics := topicsOf(s)
		if topics == nil {
			return 0, nil, false // one topic: contract_modules_test.go
		}
		limit := int(i64(g("limit", zero)))
		o := DequeueOptions{Limit: limit, Lease: dur(g("lease", zero)), Wait: dur(g("wait", zero))}
		c := cancelled(s)
		if c != nil {
			ctx = c
		}
		msgs, err := r.store.Queue.DequeueTopics(ctx, topics, o)
		if err != nil {
			if msgs != nil {
				mismatchf("messages with an error")
			}
			if c != nil {
				return r.ctxErrCode(c, err), res{}, true
			}
			return apiCode(err), res{}, true
		}
		if msgs == nil {
			mismatchf("ok without a message list")
		}
		return 0, res{"messages": r.msgListOf(msgs, limit, topics, listDequeue)}, true
	case "queue.get":
		topic, id := name(s["topic"]), r.idnum(s["id"])
		st, rd := r.record(512, func(sc []byte) int { return raw.Bitt_queue_get(r.box, topic, id, sc) })
		m := rd.message()
		switch {
		case st == 0 && m == nil:
			mismatchf("get: ok without a message")
		case st != 0 && m != nil:
			mismatchf("get: a message with status %s", statusName(st))
		case m != nil && m.hasToken:
			mismatchf("get handed out a token")
		case m != nil && m.Topic != topic:
			mismatchf("get gave a message of topic %q", m.Topic)
		case m != nil && m.ID != id:
			mismatchf("get gave message %d, not %d", m.ID, id)
		}
		pm, err := r.store.Queue.Get(ctx, topic, id) // what a Go user gets
		if pst := apiCode(err); pst < 0 || st < 0 {
			eq("Queue.Get status", pst, st)
		} else if (pm == nil) != (st != 0) || (pm != nil && (pm.ID != m.ID || pm.State != m.State)) {
			mismatchf("Queue.Get gave %+v for status %s", pm, statusName(st))
		}
		return st, res{"message": m}, true
	case "queue.cancel":
		return boolStatus(r.store.Queue.Cancel(ctx, name(s["topic"]), r.idnum(s["id"]))), res{}, true
	case "queue.reschedule":
		return boolStatus(r.store.Queue.Reschedule(ctx, name(s["topic"]), r.idnum(s["id"]),
			dur(g("delay", zero)))), res{}, true
	}
	return 0, nil, false
}

// txnQueueAction adds a txn's queue op by id through the Txn methods;
// false when a is none of them.
func (r *run) txnQueueAction(h uintptr, a obj) (int, bool) {
	t := &Txn{s: r.store, h: h} // the runner's txn, seen through the public type (not freed here)
	o, _ := a["op"].(string)
	members := map[string][]string{
		"queue_ack":        {"op", "topic", "id", "token", "result", "result_kind", "refused"},
		"queue_nack":       {"op", "topic", "id", "token", "error", "delay", "refused"},
		"queue_snooze":     {"op", "topic", "id", "token", "delay", "refused"},
		"queue_extend":     {"op", "topic", "id", "token", "lease", "refused"},
		"queue_cancel":     {"op", "topic", "id", "refused"},
		"queue_reschedule": {"op", "topic", "id", "delay", "refused"},
	}[o]
	if members == nil {
		return 0, false
	}
	checkMembers(a, members, o)
	if a["id"] == nil {
		brokenf("%s needs id", o)
	}
	topic, id := name(a["topic"]), r.idnum(a["id"])
	var tok string
	if o == "queue_ack" || o == "queue_nack" || o == "queue_snooze" || o == "queue_extend" {
		if a["token"] == nil {
			brokenf("%s needs token", o)
		}
		tok = r.token(a["token"])
	}
	m := &Message{Topic: topic, ID: id, Token: tok}
	var err error
	switch o {
	case "queue_ack":
		if opt, ok := ackResultOf(a); ok {
			err = t.QueueAck(m, opt)
		} else {
			err = t.QueueAck(m)
		}
	case "queue_nack":
		errText := optText(a["error"])
		if errText != nil && len(errText) == 0 {
			// "" given (not NULL): the Go API's "" means none, so raw
			return r.call(raw.Bitt_txn_queue_nack(h, topic, id, tok, errText, i64(get(a, "delay", numberOf("-1"))))), true
		}
		var opts []Option
		if d := i64(get(a, "delay", numberOf("-1"))); d != -1 {
			opts = append(opts, Delay(dur(a["delay"])))
		}
		err = t.QueueNack(m, string(errText), opts...)
	case "queue_snooze":
		err = t.QueueSnooze(topic, id, tok, dur(get(a, "delay", zero)))
	case "queue_extend":
		if a["lease"] == nil {
			brokenf("queue_extend needs lease")
		}
		err = t.QueueExtend(m, dur(a["lease"]))
	case "queue_cancel":
		err = t.QueueCancel(topic, id)
	case "queue_reschedule":
		err = t.QueueReschedule(topic, id, dur(get(a, "delay", zero)))
	}
	return apiCode(err), true
}
