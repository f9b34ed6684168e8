package bitt

import (
	"context"
	"errors"
	"testing"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	s, err := Open("memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.KV.Set(ctx, []byte("a"), []byte("1"))
	if err != nil || v < 1 {
		t.Fatal(v, err)
	}
	e, err := s.KV.Get(ctx, []byte("a"))
	if err != nil || e == nil || string(e.Value) != "1" || string(e.Key) != "a" || e.Version != v {
		t.Fatal(e, err)
	}
	e, err = s.KV.Get(ctx, []byte("b"))
	if err != nil || e != nil {
		t.Fatal(e, err)
	}
	_, err = s.KV.Set(ctx, []byte("c"), []byte("x"), WithKind(9))
	if !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
	t.Log(err)
	k, err := Tuple("users", int64(5), true, 1.5, []byte{0})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := DecodeTuple(k)
	t.Log(parts, err)
	id, err := s.Queue.Enqueue(ctx, "t", []byte("p"))
	ms, err2 := s.Queue.Dequeue(ctx, "t", DequeueOptions{})
	t.Log(id, err, ms, err2)
	if err := s.Queue.Ack(ctx, ms[0]); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = s.KV.Get(ctx, []byte("a"))
	t.Log(err)
	if !errors.Is(err, ErrUsage) {
		t.Fatal(err)
	}
}
