package bitt

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"
)

// job is one delivery a handler runs on. Its flags are guarded by the
// worker's mu: a job is running (in w.running) until its handler returns
// or Stop's deadline releases it, and ended (its claim no longer held)
// once its result is written, or it was given back, or found stalled.
type job struct {
	m      *Message
	ctx    context.Context
	cancel context.CancelCauseFunc

	over     chan struct{} // closed when the heartbeat must stop
	overOnce sync.Once
	beatDone chan struct{} // closed once the heartbeat goroutine has returned

	stalled, released, ended bool
}

// start runs a handler on m (w.mu held).
func (w *Worker) start(m *Message) {
	ctx, cancel := context.WithCancelCause(context.Background())
	j := &job{m: m, ctx: ctx, cancel: cancel, over: make(chan struct{}), beatDone: make(chan struct{})}
	w.running[j] = struct{}{}
	w.jobs.Add(1)
	go w.beat(j)
	go w.work(j)
}

// stopBeat ends j's heartbeat and waits for it: a renewal in flight may
// answer that the delivery is no longer ours.
func (j *job) stopBeat() {
	j.overOnce.Do(func() { close(j.over) })
	<-j.beatDone
}

func (w *Worker) work(j *job) {
	err := w.call(j)
	j.stopBeat()
	w.mu.Lock()
	if j.released { // given back at Stop's deadline, which ends it
		w.mu.Unlock()
		return
	}
	delete(w.running, j)
	stalled := j.stalled
	w.pump() // the next handler starts while this result is written
	w.mu.Unlock()
	if !stalled {
		w.finish(j, err)
	}
	w.end(j)
	j.cancel(nil)
}

// call runs the handler; a panic is its failure, with the panic's text.
func (w *Worker) call(j *job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return w.h(j.ctx, j.m)
}

// errText is what a nack records for a handler's error: a *bitt.Error's
// own message (as the other bindings record a bitt error's), else its text,
// else its type's name.
func errText(err error) string {
	if e, ok := err.(*Error); ok && e.Message != "" {
		return e.Message
	}
	if s := err.Error(); s != "" {
		return s
	}
	return reflect.TypeOf(err).String()
}

func (w *Worker) finish(j *job, herr error) {
	m := j.m
	var err error
	rv, withResult := resultOf(herr)
	if herr == nil || withResult {
		if withResult { // alone: AckMany takes no results
			err = w.ops.ackResult(m, rv.Data, rv.Kind)
		} else {
			err = w.acks.ack(m)
		}
		if err == nil {
			w.count(func(c *WorkerCounters) { c.Completed++ })
			w.hook(func() { w.cfg.onCompleted(m) }, w.cfg.onCompleted != nil)
		}
	} else if s, ok := snoozeOf(herr); ok {
		if err = w.ops.snooze(m, s.Delay); err == nil {
			w.count(func(c *WorkerCounters) { c.Snoozed++ })
		}
	} else if err = w.ops.nack(m, errText(herr)); err == nil {
		w.count(func(c *WorkerCounters) { c.Failed++ })
		w.hook(func() { w.cfg.onFailed(m, herr) }, w.cfg.onFailed != nil)
	}
	if err == nil {
		return
	}
	if errors.Is(err, ErrToken) {
		w.stall(j, err)
	} else {
		w.report(err, m) // left leased: it comes back when its lease ends
	}
}

func (w *Worker) count(f func(*WorkerCounters)) {
	w.mu.Lock()
	f(&w.c)
	w.mu.Unlock()
}

// end: once per job, its claim no longer counts.
func (w *Worker) end(j *job) {
	w.mu.Lock()
	if j.ended {
		w.mu.Unlock()
		return
	}
	j.ended = true
	w.held--
	w.mu.Unlock()
	w.wakeLoop()
	w.jobs.Done()
}

// beat renews j's lease every heartbeat while its handler runs.
func (w *Worker) beat(j *job) {
	defer close(j.beatDone)
	for {
		w.mu.Lock()
		lease := w.lease
		w.mu.Unlock()
		every := w.cfg.heartbeat
		if every == 0 {
			if lease == 0 {
				return // the store's lease is unknown: no heartbeat
			}
			every = max(time.Millisecond, lease/3)
		}
		t := time.NewTimer(every)
		select {
		case <-j.over:
			t.Stop()
			return
		case <-t.C:
		}
		if lease == 0 {
			continue // not measured yet: nothing to renew it by
		}
		err := w.ops.extend(j.m, lease)
		switch {
		case err == nil:
		case errors.Is(err, ErrToken):
			w.stall(j, err)
			return
		default:
			w.report(err, j.m) // tried again at the next heartbeat
		}
	}
}

// stall: the delivery is no longer ours (ErrToken): counted, its handler's
// context cancelled with that cause, nothing acked or nacked for it.
func (w *Worker) stall(j *job, cause error) {
	w.mu.Lock()
	if j.stalled || j.released {
		w.mu.Unlock()
		return
	}
	j.stalled = true
	w.c.Stalled++
	w.mu.Unlock()
	j.cancel(cause)
	w.hook(func() { w.cfg.onStalled(j.m) }, w.cfg.onStalled != nil)
}

// errReleased is the cause of a released handler's context.
var errReleased = &Error{Code: ErrCanceled.Code, Message: "the worker stopped: this delivery was given back"}

// releaseRunning, at Stop's deadline: the handlers still running are given
// back (Snooze 0) and their contexts cancelled; their results are ignored.
func (w *Worker) releaseRunning() {
	w.mu.Lock()
	var give []*job
	for j := range w.running {
		delete(w.running, j)
		if j.stalled {
			w.mu.Unlock()
			w.end(j) // not ours any more: nothing to give back
			w.mu.Lock()
			continue
		}
		j.released = true
		give = append(give, j)
	}
	w.mu.Unlock()
	for _, j := range give {
		j.cancel(errReleased)
		go func(j *job) {
			j.stopBeat()
			w.handBack(j.m)
			w.end(j)
		}(j)
	}
}
