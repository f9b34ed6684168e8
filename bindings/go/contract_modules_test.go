package bitt

// The module steps of the contract (queue, leases, outbox, pubsub,
// budgets, schedules).

import (
	"context"
	"errors"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

func (r *run) execModule(op string, s obj, g func(string, any) any) (int, res) {
	if st, out, ok := r.execQueueControl(op, s, g); ok {
		return st, out
	}
	switch op {
	case "queue.enqueue":
		var id uint64
		st := r.call(raw.Bittw_queue_enqueue2(r.box, name(s["topic"]), bstr(g("payload", "")), kind(s["kind"]),
			i64(g("delay", zero)), uint(u64(g("max_attempts", zero))), optBstr(s["dedup"]), int(priority(s)), &id))
		if st == 0 || st == 2 {
			if id == 0 {
				mismatchf("enqueue gave id 0")
			}
			return st, res{"id": id}
		}
		return st, res{}
	case "queue.dequeue":
		topic, limit := name(s["topic"]), int(i64(g("limit", zero)))
		if ctx := cancelled(s); ctx != nil {
			msgs, err := r.store.Queue.Dequeue(ctx, topic, DequeueOptions{Limit: limit,
				Lease: durationOf(i64(g("lease", zero))), Wait: durationOf(i64(g("wait", zero)))})
			if err != nil {
				return r.ctxErrCode(ctx, err), res{}
			}
			return 0, res{"messages": r.msgList(msgs, limit, topic, listDequeue)}
		}
		st, rd := r.record(1024, func(sc []byte) int {
			return raw.Bittw_queue_dequeue(r.box, topic, uint(limit), i64(g("lease", zero)), i64(g("wait", zero)), sc)
		})
		if st != 0 {
			return st, res{}
		}
		return st, res{"messages": r.msgList(rd.messages(), limit, topic, listDequeue)}
	case "queue.ack", "queue.nack", "queue.extend", "queue.snooze":
		topic, id, tok := name(s["topic"]), r.idnum(s["id"]), r.token(s["token"])
		switch op {
		case "queue.snooze":
			return r.call(raw.Bitt_queue_snooze(r.box, topic, id, tok, i64(g("delay", zero)))), res{}
		case "queue.ack":
			if opt, ok := ackResultOf(s); ok { // through the public Ack, as a Go user acks
				return apiCode(r.store.Queue.Ack(context.Background(), &Message{Topic: topic, ID: id, Token: tok}, opt)), res{}
			}
			return r.call(raw.Bitt_queue_ack(r.box, topic, id, tok)), res{}
		case "queue.nack":
			return r.call(raw.Bitt_queue_nack(r.box, topic, id, tok, optText(s["error"]), i64(g("delay", numberOf("-1"))))), res{}
		}
		return r.call(raw.Bitt_queue_extend(r.box, topic, id, tok, i64(s["lease"]))), res{}
	case "queue.purge":
		return r.purge(s)
	case "queue.ack_many":
		items, ok := s["items"].(arr)
		if !ok {
			brokenf("queue.ack_many needs items (an array)")
		}
		var ids []uint64
		var tokens []string
		for _, x := range expandCopies(items) {
			it, ok := x.(obj)
			if !ok {
				brokenf("an ack_many item is an object")
			}
			checkMembers(it, []string{"id", "token"}, "an ack_many item")
			ids, tokens = append(ids, r.idnum(it["id"])), append(tokens, r.token(it["token"]))
		}
		packed, err := packDeliveries(ids, tokens)
		if err != nil {
			brokenf("%v", err)
		}
		statuses := make([]int32, len(ids))
		st := r.call(raw.Bitt_queue_ack_many(r.box, name(s["topic"]), packed, statuses))
		if st != 0 {
			return st, res{}
		}
		acked := uint64(0)
		for _, x := range statuses {
			if x == 0 {
				acked++
			}
		}
		return st, res{"statuses": statuses, "count": bu(acked)}
	case "queue.dead_list":
		topic, after, limit := name(s["topic"]), r.idnum(g("after", zero)), int(i64(g("limit", zero)))
		st, rd := r.record(1024, func(sc []byte) int {
			return raw.Bitt_queue_dead_list(r.box, topic, after, uint(limit), sc)
		})
		if st != 0 {
			return st, res{}
		}
		lst := r.msgList(rd.messages(), limit, topic, listDead)
		if !increasing(lst, after) {
			mismatchf("dead list ids not increasing above after")
		}
		return st, res{"messages": lst}
	case "queue.dead_retry", "queue.dead_delete":
		f := raw.Bitt_queue_dead_retry
		if op == "queue.dead_delete" {
			f = raw.Bitt_queue_dead_delete
		}
		var n uint64
		st := r.call(f(r.box, name(s["topic"]), r.idnum(g("id", zero)), &n))
		return st, res{"count": bu(n)}
	case "queue.stats":
		v := make([]uint64, 6)
		st := r.call(raw.Bittw_queue_stats(r.box, name(s["topic"]), v))
		if st != 0 {
			return st, res{}
		}
		return st, res{"pending": bu(v[0]), "delayed": bu(v[1]), "processing": bu(v[2]), "dead": bu(v[3]),
			"oldest_pending_at": bi(int64(v[4])), "done": bu(v[5])}
	case "lease.acquire":
		var epoch uint64
		var exp int64
		st := r.call(raw.Bitt_lease_acquire(r.box, name(s["name"]), name(s["owner"]), i64(s["ttl"]), &epoch, &exp))
		if st != 0 {
			return st, res{}
		}
		if epoch == 0 {
			mismatchf("acquire gave epoch 0")
		}
		return st, res{"epoch": epoch, "expires_at": bi(exp)}
	case "lease.renew":
		var exp int64
		st := r.call(raw.Bitt_lease_renew(r.box, name(s["name"]), name(s["owner"]), r.idnum(s["epoch"]), i64(s["ttl"]), &exp))
		if st != 0 {
			return st, res{}
		}
		return st, res{"expires_at": bi(exp)}
	case "lease.release":
		return r.call(raw.Bitt_lease_release(r.box, name(s["name"]), name(s["owner"]), r.idnum(s["epoch"]))), res{}
	case "lease.get":
		owner, epoch, exp, st, err := r.store.leaseGet(name(s["name"]))
		if err != nil {
			return errCode(err), res{}
		}
		if st != 0 {
			return st, res{}
		}
		return st, res{"owner": owner, "epoch": epoch, "expires_at": bi(exp)}
	case "outbox.append":
		var seq uint64
		st := r.call(raw.Bitt_outbox_append(r.box, name(s["stream"]), bstr(g("event", "")), kind(s["kind"]), &seq))
		if st != 0 {
			return st, res{}
		}
		if seq == 0 {
			mismatchf("append gave seq 0")
		}
		return st, res{"seq": seq}
	case "outbox.pending", "outbox.parked":
		stream, limit := name(s["stream"]), int(i64(g("limit", zero)))
		st, rd := r.record(1024, func(sc []byte) int {
			if op == "outbox.pending" {
				return raw.Bitt_outbox_pending(r.box, stream, uint(limit), sc)
			}
			return raw.Bitt_outbox_parked(r.box, stream, reason(g("reason", "any")), uint(limit), sc)
		})
		if st != 0 {
			return st, res{}
		}
		lst := r.msgList(rd.messages(), limit, stream, listOutbox)
		if !increasing(lst, 0) {
			mismatchf("outbox ids not increasing")
		}
		for _, m := range lst {
			if m.hasToken {
				mismatchf("an outbox event carries a token")
			}
		}
		return st, res{"messages": lst}
	case "outbox.ack", "outbox.retry", "outbox.discard":
		var seqs []uint64
		if v, ok := s["seqs"].(arr); ok {
			seqs = []uint64{}
			for _, x := range expandCopies(v) {
				seqs = append(seqs, r.idnum(x))
			}
		}
		if op == "outbox.ack" && seqs == nil {
			brokenf("outbox.ack needs seqs")
		}
		f := map[string]func(uintptr, string, []uint64, *uint64) int{"outbox.ack": raw.Bitt_outbox_ack,
			"outbox.retry": raw.Bitt_outbox_retry, "outbox.discard": raw.Bitt_outbox_discard}[op]
		var n uint64
		st := r.call(f(r.box, name(s["stream"]), seqs, &n))
		return st, res{"count": bu(n)}
	case "outbox.fail":
		return r.call(raw.Bitt_outbox_fail(r.box, name(s["stream"]), r.idnum(s["seq"]), optText(s["error"]),
			i64(g("next_attempt_at", zero)))), res{}
	case "outbox.park":
		return r.call(raw.Bitt_outbox_park(r.box, name(s["stream"]), r.idnum(s["seq"]), reason(s["reason"]),
			optText(s["error"]))), res{}
	case "outbox.counts":
		var p, k uint64
		st := r.call(raw.Bitt_outbox_counts(r.box, name(s["stream"]), &p, &k))
		if st != 0 {
			return st, res{}
		}
		return st, res{"pending": bu(p), "parked": bu(k)}
	case "pubsub.subscribe":
		var h uintptr
		st := r.call(raw.Bitt_pubsub_subscribe(r.box, name(s["channel"]), &h))
		if st != 0 {
			if h != 0 {
				mismatchf("a subscription with a failure status")
			}
			return st, res{}
		}
		r.openSubs[h] = true
		return st, res{"sub": h}
	case "pubsub.publish":
		return r.call(raw.Bitt_pubsub_publish(r.box, name(s["channel"]), bstr(g("data", "")))), res{}
	case "pubsub.next":
		h, ok := r.subs[s["sub"].(string)]
		if !ok {
			brokenf("no subscription %v", s["sub"])
		}
		var m *Message
		st := 0
		if ctx := cancelled(s); ctx != nil {
			m, st = r.nextCancelled(ctx, h, i64(g("timeout", zero)))
		} else {
			var rd *reader
			st, rd = r.record(1024, func(sc []byte) int { return raw.Bitt_pubsub_next(h, i64(g("timeout", zero)), sc) })
			m = rd.message()
		}
		if st != 0 {
			if m != nil {
				mismatchf("a message with status %s", statusName(st))
			}
			return st, res{}
		}
		if m == nil {
			mismatchf("next: ok without a message")
		}
		if m.hasToken {
			mismatchf("a published message carries a token")
		}
		return st, res{"payload": m.Payload, "channel": []byte(m.Topic), "created_at": bi(unixMs(m.CreatedAt))}
	case "pubsub.close":
		key := s["sub"].(string)
		h, ok := r.subs[key]
		if !ok {
			brokenf("no subscription %v", key)
		}
		delete(r.subs, key)
		raw.Bitt_pubsub_close(h)
		delete(r.openSubs, h)
		return 0, res{}
	case "budget.take":
		var wait int64
		st := r.call(raw.Bitt_budget_take(r.box, name(s["name"]), i64(s["capacity"]), i64(s["refill"]),
			i64(s["period"]), i64(s["n"]), &wait))
		if st == 3 {
			if wait < 1 {
				mismatchf("a denial with wait %d < 1", wait)
			}
			return st, res{"wait": bi(wait)}
		}
		return st, res{}
	case "schedule.upsert":
		if st, ok := r.scheduleSet(s, g); ok {
			return st, res{}
		}
		return r.call(raw.Bitt_schedule_upsert(r.box, name(s["key"]), i64(s["interval"]), bstr(g("payload", "")),
			kind(s["kind"]), i64(g("first_run_at", zero)))), res{}
	case "schedule.claim", "schedule.get":
		st, rd := r.record(512, func(sc []byte) int {
			if op == "schedule.claim" {
				return raw.Bitt_schedule_claim(r.box, optBstr(s["prefix"]), sc)
			}
			return raw.Bitt_schedule_get(r.box, name(s["key"]), sc)
		})
		sc := rd.schedule()
		if st == 0 && sc == nil {
			mismatchf("ok without a schedule")
		}
		if st != 0 && sc != nil {
			mismatchf("a schedule with status %s", statusName(st))
		}
		return st, res{"schedule": sc}
	case "schedule.list":
		st, rd := r.record(4096, func(sc []byte) int { return raw.Bittw_schedule_list(r.box, sc) })
		if st != 0 {
			return st, res{}
		}
		out := make([]*Schedule, int(rd.u64()))
		for i := range out {
			out[i] = rd.schedule()
			if i > 0 && out[i-1].Key >= out[i].Key {
				mismatchf("schedule keys not increasing")
			}
		}
		return st, res{"schedules": out}
	case "schedule.delete":
		return r.call(raw.Bitt_schedule_delete(r.box, name(s["key"]))), res{}
	}
	brokenf("unknown op %s", op)
	return 0, nil
}

// ctxErrCode is the status of a call a cancelled context ended: it must be
// an ErrCanceled that also matches the context's error.
func (r *run) ctxErrCode(ctx context.Context, err error) int {
	c := errCode(err)
	if c == ErrCanceled.Code && (!errors.Is(err, ErrCanceled) || !errors.Is(err, ctx.Err())) {
		mismatchf("a cancelled call's error %v does not match ErrCanceled and %v", err, ctx.Err())
	}
	return c
}

// nextCancelled is pubsub.next on the raw subscription h through the
// binding's own wait (the token ctx fires), with the case's timeout.
func (r *run) nextCancelled(ctx context.Context, h uintptr, timeoutMs int64) (*Message, int) {
	sub := newSubscription(r.store, h)
	w, err := beginWait(ctx, &sub.waits)
	if err != nil {
		return nil, errCode(err)
	}
	defer w.end()
	m, err := sub.next(durationOf(timeoutMs), w.tok)
	if err = w.result(err); err != nil {
		return nil, r.ctxErrCode(ctx, err)
	}
	if m == nil {
		return nil, 1
	}
	return m, 0
}
