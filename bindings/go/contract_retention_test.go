package bitt

// The steps and fields of bitt.h 0.6 in the contract (queue_retention.json,
// schedule_cron.json): an ack's result (queue.ack and the txn's queue_ack
// through Queue.Ack and Txn.QueueAck with AckResult), queue.purge through
// Purge and PurgeAll, a done message's done_at, result and result_kind,
// and schedule.upsert with cron, topic, max_attempts or priority through
// Schedules.Upsert with its options, so that the contract checks what a Go
// user calls.

import (
	"context"
	"math"
	"time"
)

// ackResultOf is an ack's "result" (a byte string; null or absent: none)
// with its "result_kind" (bytes when absent) as the AckResult option;
// false without a result.
func ackResultOf(s obj) (Option, bool) {
	v, has := s["result"]
	if !has || v == nil {
		if _, k := s["result_kind"]; k {
			brokenf("result_kind without a result")
		}
		return nil, false
	}
	return AckResult(bstr(v), Kind(kind(s["result_kind"]))), true
}

func (r *run) purge(s obj) (int, res) {
	ctx := context.Background()
	var n uint64
	var err error
	if v, ok := s["topic"]; ok && v != nil {
		n, err = r.store.Queue.Purge(ctx, name(v))
	} else {
		n, err = r.store.Queue.PurgeAll(ctx)
	}
	if st := apiCode(err); st != 0 {
		if n != 0 {
			mismatchf("purge removed %d with an error", n)
		}
		return st, res{}
	}
	return 0, res{"removed": bu(n)}
}

// scheduleSet runs a schedule.upsert naming cron, topic, max_attempts or
// priority (as the C runner calls bitt_schedule_set for them); false for
// any other, which stays bitt_schedule_upsert through internal/raw.
func (r *run) scheduleSet(s obj, g func(string, any) any) (int, bool) {
	set := false
	for _, f := range []string{"cron", "topic", "max_attempts", "priority"} {
		if _, ok := s[f]; ok {
			set = true
		}
	}
	if !set {
		return 0, false
	}
	opts := []Option{WithKind(Kind(kind(s["kind"]))), Priority(priority(s))}
	if v, ok := s["cron"]; ok && v != nil {
		opts = append(opts, Cron(name(v)))
	}
	if v, ok := s["topic"]; ok && v != nil {
		opts = append(opts, ScheduleTopic(name(v)))
	}
	if v, ok := s["max_attempts"]; ok {
		n := num(v)
		if !n.IsUint64() || n.Uint64() > math.MaxUint32 {
			brokenf("max_attempts is a uint32: %v", v)
		}
		opts = append(opts, MaxAttempts(uint32(n.Uint64())))
	}
	if s["interval"] == nil {
		brokenf("schedule.upsert needs interval")
	}
	first := time.Time{}
	if f := i64(g("first_run_at", zero)); f != 0 {
		first = time.UnixMilli(f).UTC()
	}
	err := r.store.Schedules.Upsert(context.Background(), name(s["key"]), dur(s["interval"]),
		bstr(g("payload", "")), first, opts...)
	return apiCode(err), true
}

// checkDone compares a done message's fields: done_at, result and
// result_kind (null: none, which Go gives as a nil Result and kind -1).
func (r *run) checkDone(e obj, m *Message, w string) {
	if x, ok := e["done_at"]; ok {
		eq(w+" done_at", bi(unixMs(m.DoneAt)), num(x))
	}
	if x, ok := e["result"]; ok {
		if x == nil {
			eq(w+" result present", m.Result != nil, false)
		} else {
			eq(w+" result present", m.Result != nil, true)
			eq(w+" result", m.Result, bstr(x))
		}
	}
	if x, ok := e["result_kind"]; ok {
		if x == nil {
			eq(w+" result_kind", int(m.ResultKind), -1)
		} else {
			eq(w+" result_kind", int(m.ResultKind), kind(x))
		}
	}
	if m.Result == nil && m.ResultKind != -1 && m.State != 0 {
		mismatchf("%s: no result but result kind %d", w, m.ResultKind)
	}
}

// checkScheduleV7 compares a schedule's cron, topic (null: none, "" in Go,
// as no schedule can have an empty one) and message_id.
func (r *run) checkScheduleV7(exp obj, s *Schedule, what string) {
	for f, got := range map[string]string{"cron": s.Cron, "topic": s.Topic} {
		if x, ok := exp[f]; ok {
			if x == nil {
				eq(what+" "+f, got, "")
			} else {
				eq(what+" "+f, []byte(got), bstr(x))
			}
		}
	}
	if x, ok := exp["message_id"]; ok {
		eq(what+" message_id", s.MessageID, r.idnum(x))
	}
}
