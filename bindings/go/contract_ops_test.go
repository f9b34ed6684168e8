package bitt

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

var opArgs = map[string][]string{
	"kv.get": {"key"}, "kv.take": {"key"}, "kv.get_many": {"keys"}, "kv.roundtrip": {"key"},
	"kv.set": {"key", "value", "kind", "ttl"}, "kv.add": {"key", "value", "kind", "ttl"},
	"kv.delete": {"key"}, "kv.increment": {"key", "delta", "ttl"},
	"kv.list":  {"prefix", "start", "end", "limit", "reverse", "cursor", "follow"},
	"kv.purge": {}, "kv.fill": {"prefix", "count", "width", "value", "kind", "ttl"},
	"txn": {"actions", "recommit"}, "clock.set": {"now"}, "clock.advance": {"ms"},
	"clock.now": {}, "tuple.encode": {"tuple"}, "tuple.decode": {"key"},
	"tuple.order": {"tuples"}, "parallel": {"threads", "repeat", "step", "expect_counts"}, "store.open": {"options"},
	"queue.enqueue": {"topic", "payload", "kind", "delay", "max_attempts", "dedup", "priority"},
	"queue.dequeue": {"topic", "topics", "limit", "lease", "wait", "cancel"},
	"queue.get":     {"topic", "id"}, "queue.cancel": {"topic", "id"},
	"queue.reschedule": {"topic", "id", "delay"},
	"queue.snooze":     {"topic", "id", "token", "delay"},
	"queue.ack":        {"topic", "id", "token", "result", "result_kind"},
	"queue.purge":      {"topic"},
	"queue.ack_many":   {"topic", "items"},
	"queue.nack":       {"topic", "id", "token", "error", "delay"},
	"queue.extend":     {"topic", "id", "token", "lease"},
	"queue.dead_list":  {"topic", "after", "limit"}, "queue.dead_retry": {"topic", "id"},
	"queue.dead_delete": {"topic", "id"}, "queue.stats": {"topic"},
	"lease.acquire": {"name", "owner", "ttl"}, "lease.renew": {"name", "owner", "epoch", "ttl"},
	"lease.release": {"name", "owner", "epoch"}, "lease.get": {"name"},
	"outbox.append": {"stream", "event", "kind"}, "outbox.pending": {"stream", "limit"},
	"outbox.ack": {"stream", "seqs"}, "outbox.fail": {"stream", "seq", "error", "next_attempt_at"},
	"outbox.park":   {"stream", "seq", "reason", "error"},
	"outbox.parked": {"stream", "reason", "limit"}, "outbox.retry": {"stream", "seqs"},
	"outbox.discard": {"stream", "seqs"}, "outbox.counts": {"stream"},
	"pubsub.subscribe": {"channel"}, "pubsub.publish": {"channel", "data"},
	"pubsub.next": {"sub", "timeout", "cancel"}, "pubsub.close": {"sub"},
	"budget.take": {"name", "capacity", "refill", "period", "n"},
	"schedule.upsert": {"key", "interval", "payload", "kind", "first_run_at", "cron", "topic", "max_attempts",
		"priority"},
	"schedule.claim": {"prefix"}, "schedule.get": {"key"}, "schedule.list": {},
	"schedule.delete": {"key"},
}

var zero = json.Number("0")

func numberOf(s string) json.Number { return json.Number(s) }

// record runs a raw call that fills a packed result and returns the
// status and a reader over the body.
func (r *run) record(extra int, f func(scratch []byte) int) (int, *reader) {
	scratch := newScratch(extra)
	rc := f(scratch)
	body, berr := recordBody(scratch)
	st := r.call(rc)
	if berr != nil {
		mismatchf("result: %v", berr)
	}
	return st, &reader{b: body}
}

func (r *run) doList(s obj, limit int) (int, res) {
	prefix, start, end := optBstr(s["prefix"]), optBstr(s["start"]), optBstr(s["end"])
	reverse := get(s, "reverse", false).(bool)
	var cursor []byte
	if c := s["cursor"]; c != nil {
		if _, ok := c.(obj); ok {
			v := r.variable(c)
			cs, ok := v.(string)
			if !ok {
				brokenf("the cursor variable holds no cursor")
			}
			cursor = []byte(cs)
		} else {
			cursor = []byte(c.(string))
		}
	}
	rev := 0
	if reverse {
		rev = 1
	}
	var entries []*Entry
	pages, capacity := 0, limit
	if capacity == 0 {
		capacity = 100
	}
	var cur any
	for {
		st, rd := r.record(4096, func(sc []byte) int {
			return raw.Bittw_kv_list(r.box, prefix, start, end, uint(limit), rev, cursor, sc)
		})
		pages++
		if st != 0 {
			return st, nil
		}
		page, c, ok := rd.entries()
		if len(page) > capacity {
			mismatchf("a page holds %d entries, over its limit %d", len(page), capacity)
		}
		entries = append(entries, page...)
		cur = nil
		if ok {
			cur = c
		}
		if !get(s, "follow", false).(bool) || !ok {
			break
		}
		if len(page) == 0 {
			mismatchf("a page with no entries but a cursor")
		}
		cursor = []byte(c)
	}
	for i := 1; i < len(entries); i++ {
		c := bytes.Compare(entries[i-1].Key, entries[i].Key)
		if (!reverse && c >= 0) || (reverse && c <= 0) {
			mismatchf("list keys out of order: %q then %q", entries[i-1].Key, entries[i].Key)
		}
	}
	return 0, res{"entries": entries, "cursor": cur, "pages": bi(int64(pages))}
}

// refusedStatus is the error status a txn action's add must give
// (`refused`), 0 without one.
func refusedStatus(a obj) int {
	v, has := a["refused"]
	if !has {
		return 0
	}
	name, _ := v.(string)
	code, known := statusCodes[name]
	if !known || code >= 0 {
		brokenf("a txn action's refused must name an error status: %v", v)
	}
	return code
}

func (r *run) txnAction(h uintptr, a obj) int {
	switch a["op"] {
	case "check":
		checkMembers(a, []string{"op", "key", "version", "refused"}, "check")
		return r.call(raw.Bitt_txn_check(h, bstr(a["key"]), r.idnum(a["version"])))
	case "set":
		checkMembers(a, []string{"op", "key", "value", "kind", "ttl", "refused"}, "set")
		return r.call(raw.Bitt_txn_set(h, bstr(a["key"]), bstr(get(a, "value", "")), kind(a["kind"]),
			i64(get(a, "ttl", zero))))
	case "delete":
		checkMembers(a, []string{"op", "key", "refused"}, "delete")
		return r.call(raw.Bitt_txn_delete(h, bstr(a["key"])))
	case "sum":
		checkMembers(a, []string{"op", "key", "delta", "refused"}, "sum")
		return r.call(raw.Bitt_txn_sum(h, bstr(a["key"]), i64(a["delta"])))
	case "enqueue":
		checkMembers(a, []string{"op", "topic", "payload", "kind", "delay", "max_attempts", "dedup", "priority",
			"refused"}, "enqueue")
		return r.call(raw.Bittw_txn_enqueue2(h, name(a["topic"]), bstr(get(a, "payload", "")), kind(a["kind"]),
			i64(get(a, "delay", zero)), uint(u64(get(a, "max_attempts", zero))), optBstr(a["dedup"]), int(priority(a))))
	case "fence":
		checkMembers(a, []string{"op", "name", "owner", "epoch", "refused"}, "fence")
		return r.call(raw.Bitt_txn_fence(h, name(a["name"]), name(a["owner"]), r.idnum(a["epoch"])))
	case "outbox_append":
		checkMembers(a, []string{"op", "stream", "event", "kind", "refused"}, "outbox_append")
		return r.call(raw.Bitt_txn_outbox_append(h, name(a["stream"]), bstr(get(a, "event", "")), kind(a["kind"])))
	}
	if st, ok := r.txnQueueAction(h, a); ok {
		return st
	}
	brokenf("unknown txn action %v", a["op"])
	return 0
}

// The lists of messages the runner checks (tests/contract/README.md, "What
// a runner checks"): each kind has its state (Message.State).
type listKind int

const (
	listDequeue listKind = iota // leased, each with a fresh token
	listDead                    // dead letters
	listOutbox                  // outbox events: no state
)

var listStates = map[listKind]MessageState{listDequeue: StateLeased, listDead: StateDead, listOutbox: 0}

func (r *run) msgList(lst []*Message, limit int, topic string, kind listKind) []*Message {
	return r.msgListOf(lst, limit, []string{topic}, kind)
}

// msgListOf checks a list of messages of one of topics.
func (r *run) msgListOf(lst []*Message, limit int, topics []string, kind listKind) []*Message {
	dequeue := kind == listDequeue
	capacity := limit
	if capacity == 0 {
		capacity = 100
		if dequeue {
			capacity = 1
		}
	}
	if len(lst) > capacity {
		mismatchf("%d messages, over the limit %d", len(lst), capacity)
	}
	ids, toks := map[uint64]bool{}, map[string]bool{}
	for _, m := range lst {
		if m == nil {
			mismatchf("a NULL message in a list")
		}
		ours := false
		for _, t := range topics {
			ours = ours || m.Topic == t
		}
		if !ours {
			mismatchf("message topic %q is not the step's", m.Topic)
		}
		if m.State != listStates[kind] {
			mismatchf("message %d has the state %q, not %q", m.ID, m.State, listStates[kind])
		}
		if m.ID == 0 {
			mismatchf("a message with id 0")
		}
		if dequeue {
			if !m.hasToken || m.Token == "" || toks[m.Token] || r.tokensSeen[m.Token] {
				mismatchf("delivery token %q missing or not fresh", m.Token)
			}
			if ids[m.ID] {
				mismatchf("id %d twice in one batch", m.ID)
			}
			if m.Attempts < 1 || m.Attempts > m.MaxAttempts {
				mismatchf("attempts %d outside 1..%d", m.Attempts, m.MaxAttempts)
			}
			toks[m.Token] = true
			ids[m.ID] = true
		}
	}
	for t := range toks {
		r.tokensSeen[t] = true
	}
	return lst
}

func increasing(lst []*Message, above uint64) bool {
	for i, m := range lst {
		if m.ID <= above || (i > 0 && m.ID <= lst[i-1].ID) {
			return false
		}
	}
	return true
}

func (r *run) exec(s obj) (int, res) {
	op := s["op"].(string)
	g := func(k string, def any) any { return get(s, k, def) }
	switch op {
	case "kv.get", "kv.take":
		f := raw.Bitt_kv_get
		if op == "kv.take" {
			f = raw.Bitt_kv_take
		}
		key := bstr(s["key"])
		st, rd := r.record(len(key), func(sc []byte) int { return f(r.box, key, sc) })
		return st, res{"entry": rd.entry()}
	case "kv.roundtrip":
		return r.roundtrip(bstr(s["key"])), res{}
	case "kv.get_many":
		keys := r.keylist(s["keys"].(arr), false)
		st, rd := r.record(4096, func(sc []byte) int { return raw.Bittw_kv_get_many(r.box, packKeys(keys), sc) })
		es, _, _ := rd.entries()
		return st, res{"entries": es}
	case "kv.set", "kv.add":
		f := raw.Bitt_kv_set
		if op == "kv.add" {
			f = raw.Bitt_kv_add
		}
		var ver uint64
		st := r.call(f(r.box, bstr(s["key"]), bstr(g("value", "")), kind(s["kind"]), i64(g("ttl", zero)), &ver))
		if st == 0 {
			return st, res{"version": ver}
		}
		return st, res{}
	case "kv.delete":
		return r.call(raw.Bitt_kv_delete(r.box, bstr(s["key"]))), res{}
	case "kv.increment":
		var v int64
		var ver uint64
		st := r.call(raw.Bitt_kv_increment(r.box, bstr(s["key"]), i64(s["delta"]), i64(g("ttl", zero)), &v, &ver))
		if st == 0 {
			return st, res{"counter": bi(v), "version": ver}
		}
		return st, res{}
	case "kv.list":
		return r.doList(s, int(i64(g("limit", zero))))
	case "kv.purge":
		var n uint64
		st := r.call(raw.Bitt_kv_purge_expired(r.box, &n))
		return st, res{"removed": bu(n)}
	case "kv.fill":
		v, kd, ttl := bstr(g("value", "")), kind(s["kind"]), i64(g("ttl", zero))
		for _, k := range fillKeys(bstr(g("prefix", "")), int(i64(s["count"])), int(i64(g("width", zero)))) {
			var ver uint64
			if st := r.call(raw.Bitt_kv_set(r.box, k, v, kd, ttl, &ver)); st != 0 {
				return st, res{}
			}
		}
		return 0, res{}
	case "txn":
		return r.txn(s)
	case "clock.set":
		return r.call(raw.Bitt_clock_set_manual(r.box, i64(s["now"]))), res{}
	case "clock.advance":
		return r.call(raw.Bitt_clock_advance(r.box, i64(s["ms"]))), res{}
	case "clock.now":
		var now int64
		st := r.call(raw.Bitt_clock_now(r.box, &now))
		return st, res{"now": bi(now)}
	case "tuple.encode":
		k, st := tupleEncodeStatus(s["tuple"].(arr))
		return st, res{"hex": hex.EncodeToString(k)}
	case "tuple.decode":
		parts, err := DecodeTuple(bstr(s["key"]))
		if err != nil {
			return errCode(err), res{}
		}
		return 0, res{"tuple": parts}
	case "tuple.order":
		var encs [][]byte
		for _, t := range s["tuples"].(arr) {
			k, st := tupleEncodeStatus(t.(arr))
			if st != 0 {
				return st, res{}
			}
			encs = append(encs, k)
		}
		for i := 1; i < len(encs); i++ {
			if bytes.Compare(encs[i-1], encs[i]) >= 0 {
				mismatchf("tuple order: %x is not below %x", encs[i-1], encs[i])
			}
		}
		return 0, res{}
	case "parallel":
		return r.parallel(s), res{}
	case "store.open":
		opts, ok := s["options"].(obj)
		if !ok {
			brokenf("store.open options are an object of strings")
		}
		parts := make([]string, 0, len(opts))
		for k, v := range opts {
			text, ok := v.(string)
			if !ok {
				brokenf("store.open options are strings")
			}
			parts = append(parts, k+"="+text)
		}
		sort.Strings(parts)
		sep := "?"
		if strings.Contains(r.url, "?") {
			sep = "&"
		}
		var box uintptr
		st := r.call(raw.Bittw_open(r.url+sep+strings.Join(parts, "&"), &box))
		if st == 0 {
			raw.Bittw_close(box)
			raw.Bittw_free(box)
		}
		return st, res{}
	}
	return r.execModule(op, s, g)
}

// roundtrip reads key as a user does (Get, then Decode: the Go value) and
// writes that value back through the public encoding (SetValue, no TTL).
func (r *run) roundtrip(key []byte) int {
	ctx := context.Background()
	e, err := r.store.KV.Get(ctx, key)
	if err != nil {
		return errCode(err)
	}
	if e == nil {
		return 1 // not_found: nothing is written
	}
	v, err := e.Decode()
	if err != nil {
		return errCode(err)
	}
	if _, err := r.store.KV.SetValue(ctx, key, v); err != nil {
		return errCode(err)
	}
	return 0
}

// cancelled is the context of a step with "cancel": "fired" (the Go way
// of a fired cancel token: a cancelled context), else nil.
func cancelled(s obj) context.Context {
	switch v := s["cancel"]; v {
	case nil:
		return nil
	case "fired":
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	default:
		brokenf("cancel must be \"fired\", not %v", v)
		return nil
	}
}

func (r *run) txn(s obj) (int, res) {
	var h uintptr
	if st := r.call(raw.Bitt_txn_begin(r.box, &h)); st != 0 {
		return st, res{}
	}
	defer raw.Bitt_txn_free(h)
	actions := expandCopies(s["actions"].(arr))
	anyway := false // an action with `refused`: add them all, then commit
	for _, a := range actions {
		_, has := a.(obj)["refused"]
		anyway = anyway || has
	}
	for i, a := range actions {
		st := r.txnAction(h, a.(obj))
		if anyway {
			if want := refusedStatus(a.(obj)); st != want {
				mismatchf("txn action %d gave %s, expected %s", i, statusName(st), statusName(want))
			}
		} else if st != 0 {
			return st, res{}
		}
	}
	var ver uint64
	st := r.call(raw.Bitt_txn_commit(h, &ver))
	out := res{}
	if st == 0 {
		out["version"] = ver
	}
	if rc, ok := s["recommit"].(obj); ok {
		var v2 uint64
		st2 := r.call(raw.Bitt_txn_commit(h, &v2))
		r2 := res{}
		if st2 == 0 {
			r2["version"] = v2
		}
		r.checkExpect("txn", rc, st2, r2, "recommit")
	}
	return st, out
}

func (r *run) parallel(s obj) int {
	inner := s["step"].(obj)
	innerOp, _ := inner["op"].(string)
	if !parallelOK[innerOp] || inner["expect"] != nil || inner["save"] != nil {
		brokenf("parallel: bad inner step")
	}
	checkMembers(inner, append([]string{"op"}, opArgs[innerOp]...), innerOp)
	n, repeat := int(i64(s["threads"])), int(i64(get(s, "repeat", numberOf("1"))))
	var now int64
	r.call(raw.Bitt_clock_now(r.box, &now))
	workers := make([]*run, n)
	for i := range workers {
		w := *r
		w.tokensSeen = map[string]bool{}
		if r.fileBacked {
			st, err := Open(r.url)
			if err != nil {
				mismatchf("open: %v", err)
			}
			w.store, w.box = st, st.h.box
			w.openSubs = map[uintptr]bool{}
			w.call(raw.Bitt_clock_set_manual(w.box, now))
		}
		workers[i] = &w
	}
	var mu sync.Mutex
	counts := map[int]int{}
	var failure any
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func(w *run) {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					mu.Lock()
					failure = p
					mu.Unlock()
				}
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-start
			for i := 0; i < repeat; i++ {
				st, _ := w.exec(inner)
				mu.Lock()
				counts[st]++
				mu.Unlock()
			}
		}(w)
	}
	close(start)
	wg.Wait()
	if r.fileBacked {
		for _, w := range workers {
			w.store.Close()
		}
	}
	if failure != nil {
		panic(failure)
	}
	want := map[int]int{}
	for k, v := range s["expect_counts"].(obj) {
		c, ok := statusCodes[k]
		if !ok {
			brokenf("unknown status %q", k)
		}
		want[c] = int(i64(v))
	}
	for c := range merge(want, counts) {
		if want[c] != counts[c] {
			got := map[string]int{}
			for k, v := range counts {
				got[statusName(k)] = v
			}
			mismatchf("parallel counts: expected %v, got %v", s["expect_counts"], got)
		}
	}
	return 0
}

func merge(a, b map[int]int) map[int]bool {
	out := map[int]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

var parallelOK = map[string]bool{"kv.get": true, "kv.take": true, "kv.get_many": true,
	"kv.set": true, "kv.add": true, "kv.delete": true, "kv.increment": true, "kv.list": true,
	"kv.purge": true, "txn": true, "queue.enqueue": true, "queue.dequeue": true,
	"lease.acquire": true, "outbox.append": true, "pubsub.publish": true, "budget.take": true,
	"schedule.claim": true}
