package bitt

// The value mapping of bindings/VALUES.md: what Decode gives, what Encode
// writes, and values written by another runtime (Python, Node, the CLI)
// read and written back with their kind and bytes unchanged.

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"testing"
	"time"
)

// Values as other runtimes store them (bytes, kind), each read through
// Get + Decode and written back with SetValue, as a Go user would.
var foreignValues = []struct {
	data string
	kind Kind
}{
	{"3", KindJSON}, {"2", KindJSON}, {"-0", KindJSON}, {"2.5", KindJSON}, {"1e+21", KindJSON},
	{"0.1", KindJSON}, {"0.00001", KindJSON}, {"1e-7", KindJSON}, {"-1.5e-300", KindJSON},
	{"2.0", KindJSON},              // Python's integral float
	{"9007199254740993", KindJSON}, // 2^53 + 1: no float64 holds it
	{"123456789012345678901234567890", KindJSON},
	{"1E+2", KindJSON},
	{`[1,2.0,-0,{"a":1e+21}]`, KindJSON}, {`{"a":-0,"b":[3,"x"]}`, KindJSON},
	{`"é中\u0000"`, KindJSON}, {"\"line\u2028sep\u2029\"", KindJSON}, {`"<&>"`, KindJSON},
	{"null", KindJSON}, {"true", KindJSON}, {"[]", KindJSON}, {"{}", KindJSON},
	{"3", KindCounter}, {"-9223372036854775808", KindCounter}, {"9223372036854775807", KindCounter},
	{"3", KindBytes}, {"\x00\xff", KindBytes}, {"", KindBytes},
}

func TestForeignValuesRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openT(t, "memory:")
	for _, fv := range foreignValues {
		key := []byte("k")
		if _, err := s.KV.Set(ctx, key, []byte(fv.data), WithKind(fv.kind)); err != nil {
			t.Fatalf("%q: set: %v", fv.data, err)
		}
		e, err := s.KV.Get(ctx, key)
		if err != nil || e == nil {
			t.Fatalf("%q: get: %v %v", fv.data, e, err)
		}
		v, err := e.Decode()
		if err != nil {
			t.Fatalf("%q: decode: %v", fv.data, err)
		}
		if _, err := s.KV.SetValue(ctx, key, v); err != nil {
			t.Fatalf("%q (%T): write back: %v", fv.data, v, err)
		}
		e, _ = s.KV.Get(ctx, key)
		if string(e.Value) != fv.data || e.Kind != fv.kind {
			t.Errorf("%q kind %d read as %T, written back as %q kind %d", fv.data, fv.kind, v, e.Value, e.Kind)
		}
	}
}

func TestDecodeTypes(t *testing.T) {
	cases := []struct {
		data string
		kind Kind
		want any
	}{
		{"3", KindJSON, json.Number("3")},
		{"-0", KindJSON, json.Number("-0")},
		{"1e+21", KindJSON, json.Number("1e+21")},
		{"3", KindCounter, int64(3)},
		{"3", KindBytes, []byte("3")},
		{"3", Kind(9), []byte("3")},
	}
	for _, c := range cases {
		v, err := Decode([]byte(c.data), c.kind)
		if err != nil || !equal(v, c.want) {
			t.Errorf("Decode(%q, %d) = %#v, %v; want %#v", c.data, c.kind, v, err, c.want)
		}
	}
	v, err := Decode([]byte(`{"a":[1,2.5],"b":{"c":-0}}`), KindJSON)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if a := m["a"].([]any); a[0] != json.Number("1") || a[1] != json.Number("2.5") {
		t.Errorf("array numbers: %#v", a)
	}
	if c := m["b"].(map[string]any)["c"]; c != json.Number("-0") {
		t.Errorf("object number: %#v", c)
	}
	if _, err := Decode([]byte("3 4"), KindJSON); !errors.Is(err, ErrInvalid) {
		t.Errorf("two values: %v", err)
	}
}

func TestEncodeNumbers(t *testing.T) {
	cases := []struct {
		v    any
		data string
		kind Kind
	}{
		{json.Number("2.50"), "2.50", KindJSON}, // as is
		{math.Copysign(0, -1), "-0", KindJSON},
		{2.0, "2", KindJSON},
		{0.00001, "0.00001", KindJSON},
		{1e-7, "1e-7", KindJSON},
		{1e21, "1e+21", KindJSON},
		{[]any{math.Copysign(0, -1), json.Number("7")}, "[-0,7]", KindJSON},
		{"a\u2028b\u2029\\u2028", "\"a\u2028b\u2029\\\\u2028\"", KindJSON},
		{int8(-5), "-5", KindCounter},
		{uint64(math.MaxUint64), "18446744073709551615", KindCounter}, // the core refuses it
		{new(big.Int).Lsh(big.NewInt(1), 70), "1180591620717411303424", KindCounter},
	}
	for _, c := range cases {
		data, kind, err := Encode(c.v)
		if err != nil || string(data) != c.data || kind != c.kind {
			t.Errorf("Encode(%#v) = %q, %d, %v; want %q, %d", c.v, data, kind, err, c.data, c.kind)
		}
	}
}

// A counter out of int64 reaches the core, which refuses it with its own
// status and message; a bad json.Number too.
func TestOutOfRangeValuesAreTheCoresToRefuse(t *testing.T) {
	ctx := context.Background()
	s := openT(t, "memory:")
	over := new(big.Int).Lsh(big.NewInt(1), 63)
	for _, v := range []any{uint64(1) << 63, over, new(big.Int).Neg(new(big.Int).Add(over, big.NewInt(1))),
		json.Number("01"), json.Number("")} {
		_, err := s.KV.SetValue(ctx, []byte("k"), v)
		var be *Error
		if !errors.As(err, &be) || be.Code != ErrInvalid.Code || be.Message == "" {
			t.Errorf("SetValue(%v): %v; want the core's ErrInvalid", v, err)
		}
	}
	if e, _ := s.KV.Get(ctx, []byte("k")); e != nil {
		t.Fatalf("a refused value was written: %q", e.Value)
	}
}

func TestNaNIsRefused(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), []any{1.0, math.Inf(-1)}, map[string]float32{"x": float32(math.NaN())}} {
		_, _, err := Encode(v)
		var be *Error
		if !errors.As(err, &be) || be.Code != ErrInvalid.Code || be.Message != "value: NaN and infinities are not JSON" {
			t.Errorf("Encode(%v): %v", v, err)
		}
	}
}

// The seeds' rate limiter: a counter set to 0 with a TTL, then incremented,
// counts and keeps its TTL.
func TestRateLimiterPattern(t *testing.T) {
	ctx := context.Background()
	s := openT(t, "memory:")
	start := time.UnixMilli(1_000_000).UTC()
	if err := s.Clock.SetManual(start); err != nil {
		t.Fatal(err)
	}
	k := []byte("rl")
	if _, err := s.KV.SetValue(ctx, k, int64(0), TTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(time.Second)
	for i := int64(1); i <= 3; i++ {
		if n, err := s.KV.Increment(ctx, k, 1); err != nil || n != i {
			t.Fatalf("increment %d: %d, %v", i, n, err)
		}
	}
	e, _ := s.KV.Get(ctx, k)
	if n, err := e.Counter(); err != nil || n != 3 || !e.ExpiresAt.Equal(start.Add(time.Minute)) {
		t.Fatalf("counter %d (%v), expires %v; want 3, %v", n, err, e.ExpiresAt, start.Add(time.Minute))
	}
	s.Clock.Advance(time.Minute)
	if e, _ := s.KV.Get(ctx, k); e != nil {
		t.Fatalf("the window did not expire: %v", e)
	}
}
