package bitt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// Many goroutines calling KV.Get and KV.Set on one Redis store would each
// hold an OS thread asleep in poll() for its reply (a blocking cgo call),
// while go-redis parks goroutines on Go's netpoller. Instead their calls
// are combined: a caller that finds fewer than maxLeaders batches running
// leads one: one cgo call for itself and the calls queued meanwhile
// (bittw_go_kv_batch, which runs them at once with bitt_batch_run, so on
// Redis their commands share a connection and a round trip, and their sets
// one script call); the others park on a channel. When it is done, a
// leader hands its turn to the first call queued since. A call alone makes
// its plain cgo call. Every call keeps its own semantics and result: only
// the transport is shared.
//
// On PostgreSQL only gets are combined, and a batch is one get_many: one
// statement reads every key of the batch from one snapshot, which is a
// valid answer for each get (the snapshot is taken after each was called
// and before any returns). Sets are not: each is its own cgo call, and the
// core commits the sets of threads that meet in one transaction
// (core/postgres/set_group.c); running them on fibers of one thread
// measured slower (each batch waits for its slowest commit). On
// memory and SQLite calls on one store run one at a time anyway (README,
// "Threads"), so nothing is combined.

// kvOp is one queued call and its result.
type kvOp struct {
	set      bool
	key, val []byte
	kind     Kind
	ttl      int64
	entry    *Entry
	version  uint64
	err      error
	wake     chan bool // true: lead the next batch; false: done
}

var kvOps = sync.Pool{New: func() any { return &kvOp{wake: make(chan bool, 1)} }}

// reset clears op (keeping its channel) and pools it.
func (op *kvOp) reset() {
	*op = kvOp{wake: op.wake}
	kvOps.Put(op)
}

type combiner struct {
	s       *Store
	getMany bool // PostgreSQL: gets only, a batch is one get_many
	leadCap int  // batches run at once (see maxLeaders)
	mu      sync.Mutex
	leaders int     // batches being run
	pending []*kvOp // calls waiting for a leader
	peak    int     // see do
	lanes   []*lane // buffers of the leaders, free
	// calls that went out in a batch of several, and batches (tests read them)
	combined atomic.Int64
	batches  atomic.Int64
}

// lane holds one leader's buffers.
type lane struct {
	batch   []*kvOp
	req     []byte
	scratch []byte
}

// maxBatch bounds one cgo call (the core runs up to BITT_BATCH_AT_ONCE at
// once and starts the rest as those end).
const maxBatch = 256

// gatherYields bounds how long a leader waits for callers (see do).
const gatherYields = 4

// maxLeaders batches run at once on Redis, so that the server works on one
// while the client packs or unpacks another. Measured (BENCH=Redis bench/go/run,
// 16 goroutines, sets/gets vs go-redis): 1 leader 0.92/1.74, 2: 0.91-1.10/
// 1.74-2.15, 3: 1.20-1.24/1.58, 4: 1.18/1.48.
const maxLeaders = 3

// pgGetLeaders get_many calls run at once on PostgreSQL.
const pgGetLeaders = 2

// newCombiner returns the combiner for a store's backend, or nil.
func newCombiner(s *Store, backend string) *combiner {
	switch backend {
	case "redis":
		return &combiner{s: s, leadCap: maxLeaders}
	case "postgres":
		return &combiner{s: s, getMany: true, leadCap: pgGetLeaders}
	}
	return nil
}

// do runs op: as a leader (with the calls queued meanwhile), or by waiting
// for a leader to run it. A call still queued when ctx ends leaves the
// queue with ctx's error; one a leader has taken waits for its result (its
// cgo call cannot be interrupted, and ends within the store's timeout).
func (c *combiner) do(ctx context.Context, op *kvOp) {
	c.mu.Lock()
	if c.leaders >= c.leadCap {
		c.pending = append(c.pending, op)
		c.mu.Unlock()
		if !c.wait(ctx, op) {
			return
		}
		// a leader handed its turn over (it took op off pending)
		c.mu.Lock()
	} else {
		c.leaders++
	}
	// The callers of the last batches, just woken, are about to call again:
	// let them queue (a few yields at most), or this batch would go without
	// them and theirs would wait for it: two cohorts taking turns, a round
	// trip each.
	for i := 0; i < gatherYields && len(c.pending) < c.peak-1; i++ {
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
	}
	var l *lane
	if k := len(c.lanes); k > 0 {
		l = c.lanes[k-1]
		c.lanes = c.lanes[:k-1]
	} else {
		l = &lane{}
	}
	n := min(len(c.pending), maxBatch-1)
	l.batch = append(append(l.batch[:0], op), c.pending[:n]...)
	rest := copy(c.pending, c.pending[n:])
	clear(c.pending[rest:])
	c.pending = c.pending[:rest]
	// peak: the most calls a batch carried lately (down by one a batch):
	// how many callers to wait for, so that cohorts that took turns merge.
	if len(l.batch) >= c.peak {
		c.peak = len(l.batch)
	} else {
		c.peak--
	}
	c.mu.Unlock()

	if len(l.batch) == 1 {
		c.s.KV.direct(op)
	} else {
		c.combined.Add(int64(len(l.batch)))
		c.batches.Add(1)
		if c.getMany {
			c.runGets(l)
		} else {
			c.run(l)
		}
	}
	for _, o := range l.batch[1:] {
		o.wake <- false
	}
	clear(l.batch)

	c.mu.Lock()
	c.lanes = append(c.lanes, l)
	if len(c.pending) == 0 {
		c.leaders--
	} else {
		next := c.pending[0]
		rest := copy(c.pending, c.pending[1:])
		c.pending[rest] = nil
		c.pending = c.pending[:rest]
		next.wake <- true
	}
	c.mu.Unlock()
}

// call makes the one cgo call of a batch with the request in l.req, and
// returns a reader over its packed result.
func (c *combiner) call(l *lane, fn func(uintptr, []byte, []byte) int) (reader, error) {
	if l.scratch == nil {
		l.scratch = newScratch(64 * 1024)
	}
	rc := fn(c.s.box(), l.req, l.scratch)
	body, berr := recordBody(l.scratch)
	_, err := c.s.status(rc)
	if err == nil {
		err = berr
	}
	if err != nil {
		return reader{}, err
	}
	if len(body) > 0 && &body[0] == &l.scratch[16] {
		body = bytes.Clone(body) // entries alias it; the next batch reuses scratch
	}
	return reader{b: body}, nil
}

// wait parks a queued op until a leader wakes it (true: lead the next
// batch) or ctx ends while it is still queued (op.err is set).
func (c *combiner) wait(ctx context.Context, op *kvOp) bool {
	var done <-chan struct{} // nil (never) for a nil ctx
	if ctx != nil {
		done = ctx.Done()
	}
	select {
	case lead := <-op.wake:
		return lead
	case <-done:
	}
	c.mu.Lock()
	if i := slices.Index(c.pending, op); i >= 0 {
		c.pending = slices.Delete(c.pending, i, i+1)
		c.mu.Unlock()
		op.err = ctxErr(ctx)
		return false
	}
	c.mu.Unlock()
	return <-op.wake // a leader took it: its result, or the lead, is on the way
}

// run makes the one cgo call of a batch and hands each op its result.
func (c *combiner) run(l *lane) {
	batch := l.batch
	req := l.req[:0]
	for _, o := range batch {
		set := uint64(0)
		if o.set {
			set = 1
		}
		req = binary.NativeEndian.AppendUint64(req, set)
		req = binary.NativeEndian.AppendUint64(req, uint64(o.kind))
		req = binary.NativeEndian.AppendUint64(req, uint64(o.ttl))
		req = binary.NativeEndian.AppendUint64(req, uint64(len(o.key)))
		req = binary.NativeEndian.AppendUint64(req, uint64(len(o.val)))
		req = append(req, o.key...)
		req = append(req, o.val...)
	}
	l.req = req
	r, err := c.call(l, raw.Bittw_go_kv_batch)
	if err != nil {
		for _, o := range batch {
			o.err = err
		}
		return
	}
	for _, o := range batch {
		st := int(r.i64())
		switch {
		case st < 0:
			o.err = &Error{Code: st, Message: string(r.bytes())}
		case o.set:
			o.version = r.u64()
		default:
			o.entry = r.entry()
		}
	}
}

// runGets reads the keys of a batch of gets with one get_many.
func (c *combiner) runGets(l *lane) {
	keys := l.req[:0]
	for _, o := range l.batch {
		keys = binary.NativeEndian.AppendUint64(keys, uint64(len(o.key)))
		keys = append(keys, o.key...)
	}
	l.req = keys
	r, err := c.call(l, raw.Bittw_kv_get_many)
	if errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooLarge) {
		// a key refused fails its own get alone, with its own message
		for _, o := range l.batch {
			c.s.KV.direct(o)
		}
		return
	}
	if err != nil {
		for _, o := range l.batch {
			o.err = err
		}
		return
	}
	es, _, _ := r.entries()
	for i, o := range l.batch {
		o.entry = es[i]
	}
}
