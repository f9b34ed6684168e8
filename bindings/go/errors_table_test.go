package bitt

// bindings/ERRORS.md, row by row, against this binding: every status maps
// to its sentinel and carries the core's own message; every argument the
// binding refuses gives the table's error and message.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

var sentinels = map[string]*Error{
	"ErrInvalid": ErrInvalid, "ErrNoMemory": ErrNoMemory, "ErrTooLarge": ErrTooLarge,
	"ErrNotCounter": ErrNotCounter, "ErrOverflow": ErrOverflow, "ErrConflict": ErrConflict,
	"ErrBackend": ErrBackend, "ErrBusy": ErrBusy, "ErrSchema": ErrSchema, "ErrURL": ErrURL,
	"ErrCursor": ErrCursor, "ErrUsage": ErrUsage, "ErrUnsupported": ErrUnsupported,
	"ErrToken": ErrToken, "ErrLeaseLost": ErrLeaseLost, "ErrCanceled": ErrCanceled,
}

// errorTables reads the two tables of ERRORS.md: rows of cells, without
// the backquotes, keyed by the table's heading ("status", "argument error").
func errorTables(t *testing.T) map[string][][]string {
	data, err := os.ReadFile(filepath.Join("..", "ERRORS.md"))
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string][][]string{}
	head := ""
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "|") {
			head = ""
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.Trim(strings.TrimSpace(c), "`"))
		}
		switch {
		case head == "":
			head = cells[0]
		case strings.HasPrefix(cells[0], "---"):
		default:
			tables[head] = append(tables[head], cells)
		}
	}
	if len(tables["status"]) == 0 || len(tables["argument error"]) == 0 {
		t.Fatalf("ERRORS.md: no status or argument table (found %v)", tables)
	}
	return tables
}

// coreFailures makes statuses of the core through the public API, each
// with the status it must give.
func coreFailures(s *Store) map[int]func() error {
	ctx := context.Background()
	k := []byte("k")
	return map[int]func() error{
		-1: func() error { _, err := s.Queue.Enqueue(ctx, "", nil); return err },
		-3: func() error { _, err := s.KV.Set(ctx, make([]byte, 5000), nil); return err },
		-4: func() error {
			s.KV.Set(ctx, []byte("j"), []byte("1"), WithKind(KindJSON))
			_, err := s.KV.Increment(ctx, []byte("j"), 1)
			return err
		},
		-5: func() error {
			s.KV.Increment(ctx, []byte("max"), math.MaxInt64)
			_, err := s.KV.Increment(ctx, []byte("max"), 1)
			return err
		},
		-6: func() error {
			tx, _ := s.Atomic(ctx)
			defer tx.Close()
			tx.Check(k, 99)
			_, err := tx.Commit(ctx)
			return err
		},
		-11: func() error { _, _, err := s.KV.Page(ctx, ListOptions{Cursor: "garbage"}); return err },
		-12: func() error { return s.Clock.Advance(time.Second) }, // no manual clock
		-14: func() error { return s.Queue.Ack(ctx, &Message{Topic: "t", ID: 1, Token: "stale"}) },
		-15: func() error { _, err := s.Leases.Renew(ctx, "l", "o", 1, time.Second); return err },
		-16: func() error {
			c, cancel := context.WithCancel(ctx)
			cancel()
			_, err := s.Queue.Dequeue(c, "t", DequeueOptions{Wait: time.Second})
			return err
		},
	}
}

func TestErrorTableStatuses(t *testing.T) {
	runtime.LockOSThread() // the core's last error is per thread: read it on this one
	defer runtime.UnlockOSThread()
	s := openT(t, "memory:")
	fail := coreFailures(s)
	fail[-10] = func() error { _, err := Open("nosuch:"); return err }
	seen := map[string]bool{}
	for _, row := range errorTables(t)["status"] {
		if len(row) != 6 {
			t.Fatalf("a status row of %d cells: %v", len(row), row)
		}
		code, err := strconv.Atoi(row[1])
		goName := row[5]
		sent := sentinels[goName]
		if err != nil || sent == nil || sent.Code != code {
			t.Errorf("%s (%s): Go's %s is %v", row[0], row[1], goName, sent)
			continue
		}
		seen[goName] = true
		if name := codeNames[code]; name == "" {
			t.Errorf("%s: no name for status %d", row[0], code)
		}
		for other, o := range sentinels {
			if got := errors.Is(&Error{Code: code, Message: "m"}, o); got != (other == goName) {
				t.Errorf("status %d matches %s: %v", code, other, got)
			}
		}
		if f := fail[code]; f != nil {
			err := f()
			var be *Error
			if !errors.As(err, &be) || !errors.Is(err, sent) || be.Code != code {
				t.Errorf("%s: the API gave %v", row[0], err)
			} else if core := raw.Bitt_error_last(); be.Message != core {
				t.Errorf("%s: message %q, the core's was %q", row[0], be.Message, core)
			}
		}
	}
	for name := range sentinels {
		if !seen[name] {
			t.Errorf("%s is in no row of ERRORS.md", name)
		}
	}
}

// template turns a message of the table into a pattern ({...} is anything).
func template(msg string) *regexp.Regexp {
	parts := regexp.MustCompile(`\{[a-z]+\}`).Split(msg, -1)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".+") + "$")
}

func TestErrorTableArguments(t *testing.T) {
	// Each row's refusals in Go; nil where Go cannot be given the argument.
	refusals := map[string][]func() error{
		"an integer (counter value, delta, tuple int part) beyond int64": {
			func() error { _, err := Tuple("a", uint64(1)<<63); return err },
			func() error { _, err := Tuple(new(big.Int).Lsh(big.NewInt(-1), 64)); return err },
		},
		"NaN or an infinity inside a JSON value": {
			func() error { _, _, err := Encode(math.NaN()); return err },
			func() error { _, _, err := Encode(map[string]any{"x": []any{math.Inf(-1)}}); return err },
		},
		// No Go call takes option names at run time: options are struct
		// fields and Option funcs, which the compiler checks
		// (TestNoOptionsByName).
		"an option name the call does not have": nil,
		"a value, key or part of a type the value table does not map": {
			func() error { _, err := Tuple(struct{}{}); return err },
			func() error { _, err := Tuple((*big.Int)(nil)); return err },
			func() error { _, _, err := Encode(make(chan int)); return err },
		},
	}
	rows := errorTables(t)["argument error"]
	for _, row := range rows {
		if len(row) != 5 {
			t.Fatalf("an argument row of %d cells: %v", len(row), row)
		}
		calls, known := refusals[row[0]]
		if !known {
			t.Errorf("a row this test does not know: %q", row[0])
			continue
		}
		sent := sentinels[row[3]]
		if sent == nil {
			t.Errorf("%q: Go's error %q is no sentinel", row[0], row[3])
			continue
		}
		pat := template(row[4])
		for i, call := range calls {
			err := call()
			var be *Error
			if !errors.As(err, &be) || !errors.Is(err, sent) || !pat.MatchString(be.Message) {
				t.Errorf("%q, refusal %d: %v; want %s with %q", row[0], i, err, row[3], row[4])
			}
		}
	}
	if len(rows) != len(refusals) {
		t.Errorf("ERRORS.md has %d argument rows, this test knows %d", len(rows), len(refusals))
	}
	// The exact text of the integer row, which every binding shares.
	_, err := Tuple("a", uint64(1)<<63)
	if want := "tuple part 1: integer 9223372036854775808 is outside the int64 range"; err.(*Error).Message != want {
		t.Errorf("%q; want %q", err.(*Error).Message, want)
	}
}

// A counter or delta beyond int64 is the core's to refuse: Go passes the
// decimal text on, and the error is the core's status and message.
func TestCounterBeyondInt64IsTheCores(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := openT(t, "memory:")
	_, err := s.KV.SetValue(context.Background(), []byte("c"), uint64(1)<<63)
	var be *Error
	if !errors.As(err, &be) || be.Code != ErrInvalid.Code || be.Message != raw.Bitt_error_last() {
		t.Fatalf("%v; want the core's ErrInvalid (%q)", err, raw.Bitt_error_last())
	}
	if errors.Is(err, ErrOverflow) {
		t.Fatal(fmt.Sprint("an overflow the binding made up: ", err))
	}
}
