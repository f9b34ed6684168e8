// A small program over the Go binding: a counter and a job queue in one
// SQLite file (the path is the first argument).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	bitt "github.com/bitt-dev/bitt/bindings/go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return errors.New("usage: example PATH.db")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := bitt.Open("sqlite:" + os.Args[1])
	if err != nil {
		return err
	}
	defer s.Close()

	runs, err := s.KV.Increment(ctx, []byte("runs"), 1)
	if err != nil {
		return err
	}
	key, err := bitt.Tuple("greeting", runs)
	if err != nil {
		return err
	}
	if _, err := s.KV.SetValue(ctx, key, map[string]any{"hello": "world", "run": runs}, bitt.TTL(time.Hour)); err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Queue.Enqueue(ctx, "jobs", []byte(fmt.Sprintf("job %d of run %d", i, runs))); err != nil {
			return err
		}
	}
	// A worker: Consume leases two at a time and yields them one by one; the
	// loop ends when the jobs of this run are done (or ctx ends).
	done := 0
	for m, err := range s.Queue.Consume(ctx, "jobs", bitt.ConsumeOptions{Prefetch: 2, Lease: time.Minute}) {
		if err != nil {
			return err
		}
		if time.Until(m.DueAt) <= 0 { // DueAt: the end of this delivery's lease, a time.Time
			return fmt.Errorf("job %d leased until %v", m.ID, m.DueAt)
		}
		if err := s.Queue.Ack(ctx, m); err != nil {
			return err
		}
		if done++; done == 3 {
			break
		}
	}
	e, err := s.KV.Get(ctx, key)
	if err != nil || e == nil {
		return fmt.Errorf("the greeting is gone: %v", err)
	}
	fmt.Printf("run %d: %d jobs done, %s = %s, expires %s\n", runs, done, "greeting", e.Value,
		e.ExpiresAt.Format(time.RFC3339))
	return nil
}
