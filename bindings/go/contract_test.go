package bitt

// The contract (tests/contract/*.json, format in tests/contract/README.md)
// on every backend, through internal/raw and this package's decoders: the
// Go port of tests/python/contract.py.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

type (
	obj  = map[string]any
	arr  = []any
	res  = map[string]any
	bad  struct{ msg string } // the case is malformed
	diff struct{ msg string } // the binding or core disagrees with the case
)

func brokenf(f string, a ...any)   { panic(bad{fmt.Sprintf(f, a...)}) }
func mismatchf(f string, a ...any) { panic(diff{fmt.Sprintf(f, a...)}) }

var statusCodes = map[string]int{"ok": 0, "not_found": 1, "exists": 2, "denied": 3, "invalid": -1,
	"nomem": -2, "too_large": -3, "not_counter": -4, "overflow": -5, "conflict": -6, "backend": -7,
	"busy": -8, "schema": -9, "url": -10, "cursor": -11, "usage": -12, "unsupported": -13,
	"token": -14, "lease_lost": -15, "canceled": -16}
var kinds = map[string]int{"bytes": 0, "json": 1, "counter": 2}
var reasons = map[string]int{"poison": 1, "invalid": 2, "any": 0}

func statusName(c int) string {
	for k, v := range statusCodes {
		if v == c {
			return k
		}
	}
	return strconv.Itoa(c)
}

type contractCase struct {
	stem string
	idx  int
	c    obj
}

func contractDir() string {
	if d := os.Getenv("BITT_CONTRACT_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "tests", "contract")
}

func loadCases(t *testing.T) []contractCase {
	files, err := filepath.Glob(filepath.Join(contractDir(), "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no contract files in %s (set BITT_CONTRACT_DIR): %v", contractDir(), err)
	}
	sort.Strings(files)
	var out []contractCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var doc struct{ Cases []obj }
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		stem := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, c := range doc.Cases {
			out = append(out, contractCase{stem, len(out), c})
		}
	}
	return out
}

// ---- the value forms ------------------------------------------------------

func checkMembers(o obj, allowed []string, what string) {
	var extra []string
	for k := range o {
		if k == "note" {
			continue
		}
		found := false
		for _, a := range allowed {
			if a == k {
				found = true
			}
		}
		if !found {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		brokenf("%s: unknown member(s) %v", what, extra)
	}
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		brokenf("bad hex %q", s)
	}
	return b
}

func bstr(v any) []byte {
	switch x := v.(type) {
	case string:
		return append([]byte{}, x...)
	case obj:
		if h, ok := x["hex"]; ok {
			checkMembers(x, []string{"hex"}, "hex")
			return append([]byte{}, unhex(h.(string))...)
		}
		if r, ok := x["repeat"].(obj); ok {
			checkMembers(r, []string{"hex", "string", "count"}, "repeat")
			var unit []byte
			if h, ok := r["hex"]; ok {
				unit = unhex(h.(string))
			} else {
				unit = []byte(r["string"].(string))
			}
			return append([]byte{}, bytes.Repeat(unit, int(i64(r["count"])))...)
		}
		if c, ok := x["concat"].(arr); ok {
			b := []byte{}
			for _, p := range c {
				b = append(b, bstr(p)...)
			}
			return b
		}
		if p, ok := x["tuple"].(arr); ok {
			return tupleEncode(p)
		}
	}
	brokenf("not a byte string: %v", v)
	return nil
}

// optBstr: absent or null is nil (NULL); anything else is non-nil.
func optBstr(v any) []byte {
	if v == nil {
		return nil
	}
	return bstr(v)
}

func num(v any) *big.Int {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		brokenf("not a number: %v", v)
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		brokenf("not a number: %v", v)
	}
	return n
}

func i64(v any) int64  { return num(v).Int64() }
func u64(v any) uint64 { return num(v).Uint64() }
func bi(n int64) *big.Int {
	return big.NewInt(n)
}
func bu(n uint64) *big.Int { return new(big.Int).SetUint64(n) }

func get(o obj, k string, def any) any {
	if v, ok := o[k]; ok && v != nil {
		return v
	}
	return def
}

func tuplePart(v any) any {
	p, ok := v.(obj)
	if !ok {
		brokenf("bad tuple part %v", v)
	}
	checkMembers(p, []string{"bytes_hex", "string", "string_hex", "int", "float", "bool"}, "part")
	switch {
	case p["bytes_hex"] != nil:
		return append([]byte{}, unhex(p["bytes_hex"].(string))...)
	case p["string"] != nil:
		return p["string"].(string)
	case p["string_hex"] != nil:
		return string(unhex(p["string_hex"].(string)))
	case p["int"] != nil:
		return i64(p["int"])
	case p["float"] != nil:
		var s string
		switch x := p["float"].(type) {
		case json.Number:
			s = x.String()
		case string:
			s = x
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			brokenf("bad float %v", p["float"])
		}
		return f
	case p["bool"] != nil:
		return p["bool"].(bool)
	}
	brokenf("bad tuple part %v", v)
	return nil
}

// tupleEncodeStatus encodes parts with Tuple: the key, or the status.
func tupleEncodeStatus(parts arr) ([]byte, int) {
	vals := make([]any, len(parts))
	for i, p := range parts {
		vals[i] = tuplePart(p)
	}
	k, err := Tuple(vals...)
	if err != nil {
		return nil, errCode(err)
	}
	return k, 0
}

func tupleEncode(parts arr) []byte {
	k, st := tupleEncodeStatus(parts)
	if st != 0 {
		brokenf("a key tuple does not encode: %s", statusName(st))
	}
	return k
}

func name(v any) string {
	b := bstr(v)
	if bytes.IndexByte(b, 0) >= 0 {
		brokenf("a name holds a NUL byte")
	}
	return string(b)
}

func optText(v any) []byte {
	if v == nil {
		return nil
	}
	return []byte(name(v))
}

func kind(v any) int {
	switch x := v.(type) {
	case nil:
		return 0
	case json.Number:
		return int(i64(x))
	case string:
		if k, ok := kinds[x]; ok {
			return k
		}
	}
	brokenf("bad kind %v", v)
	return 0
}

func reason(v any) int {
	if s, ok := v.(string); ok {
		r, ok := reasons[s]
		if !ok {
			brokenf("bad reason %q", s)
		}
		return r
	}
	return int(i64(v))
}

func errCode(err error) int {
	if e, ok := err.(*Error); ok {
		return e.Code
	}
	mismatchf("not a bitt error: %v", err)
	return 0
}

func eq(what string, got, want any) {
	if !equal(got, want) {
		mismatchf("%s: expected %v, got %v", what, show(want), show(got))
	}
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && (x == nil) == (y == nil) && (x == nil || x.Cmp(y) == 0)
	case []byte:
		y, ok := b.([]byte)
		return ok && (x == nil) == (y == nil) && bytes.Equal(x, y)
	}
	return fmt.Sprint(a) == fmt.Sprint(b) && fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b)
}

func show(v any) string {
	if b, ok := v.([]byte); ok {
		if b == nil {
			return "NULL"
		}
		return strconv.Quote(string(b))
	}
	return fmt.Sprint(v)
}

// ---- a case ---------------------------------------------------------------

type run struct {
	url        string
	fileBacked bool
	store      *Store
	box        uintptr
	vars       map[string]any
	tokensSeen map[string]bool
	subs       map[string]uintptr
	openSubs   map[uintptr]bool
}

func newRun(url string, fileBacked bool) *run {
	s, err := Open(url)
	if err != nil {
		mismatchf("open %s: %v", url, err)
	}
	r := &run{url: url, fileBacked: fileBacked, store: s, box: s.h.box, vars: map[string]any{},
		tokensSeen: map[string]bool{}, subs: map[string]uintptr{}, openSubs: map[uintptr]bool{}}
	r.call(raw.Bitt_clock_set_manual(r.box, 1000000))
	return r
}

func (r *run) close() {
	for h := range r.openSubs {
		raw.Bitt_pubsub_close(h)
	}
	r.openSubs = nil
	r.store.Close()
}

// call checks a raw status: an error carries a message, and the thread's
// last-error code (this goroutine is locked to its thread) is the same.
func (r *run) call(rc int) int {
	if rc >= 0 {
		return rc
	}
	err := statusErr(rc).(*Error)
	if err.Message == "" {
		mismatchf("status %d: empty error message", err.Code)
	}
	if lc := raw.Bitt_error_last_code(); lc != err.Code {
		mismatchf("bitt_error_last_code() is %d after status %d", lc, err.Code)
	}
	return err.Code
}

func (r *run) variable(v any) any {
	if o, ok := v.(obj); ok {
		checkMembers(o, []string{"var"}, "var")
		val, ok := r.vars[o["var"].(string)]
		if !ok {
			brokenf("variable %v not set", o["var"])
		}
		return val
	}
	return v
}

func (r *run) idnum(v any) uint64 {
	switch x := r.variable(v).(type) {
	case uint64:
		return x
	default:
		return u64(x)
	}
}

func (r *run) token(v any) string {
	switch x := r.variable(v).(type) {
	case string:
		return x
	case nil:
		brokenf("token variable holds no token")
	}
	brokenf("bad token %v", v)
	return ""
}

func fillKeys(prefix []byte, count, width int) [][]byte {
	out := make([][]byte, count)
	for i := range out {
		d := strconv.Itoa(i)
		for len(d) < width {
			d = "0" + d
		}
		out[i] = append(append([]byte{}, prefix...), d...)
	}
	return out
}

// keylist expands a key list; nil elements (misses) only when allowNull.
func (r *run) keylist(items arr, allowNull bool) [][]byte {
	var out [][]byte
	for _, it := range items {
		o, isObj := it.(obj)
		switch {
		case it == nil && allowNull:
			out = append(out, nil)
		case isObj && o["copies"] != nil:
			checkMembers(o, []string{"copies", "of"}, "copies")
			one := r.keylist(arr{o["of"]}, allowNull)
			for i := int64(0); i < i64(o["copies"]); i++ {
				out = append(out, one...)
			}
		case isObj && o["fill"] != nil:
			f := o["fill"].(obj)
			checkMembers(f, []string{"prefix", "count", "width"}, "fill")
			out = append(out, fillKeys(bstr(get(f, "prefix", "")), int(i64(f["count"])),
				int(i64(get(f, "width", json.Number("0")))))...)
		default:
			out = append(out, bstr(it))
		}
	}
	return out
}

func expandCopies(items arr) arr {
	var out arr
	for _, it := range items {
		if o, ok := it.(obj); ok && o["copies"] != nil {
			for i := int64(0); i < i64(o["copies"]); i++ {
				out = append(out, o["of"])
			}
		} else {
			out = append(out, it)
		}
	}
	return out
}

func runCase(url string, fileBacked bool, c obj) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	checkMembers(c, []string{"name", "description", "url_options", "steps"}, "case")
	if opts, ok := c["url_options"].(obj); ok && len(opts) > 0 {
		keys := make([]string, 0, len(opts))
		for k := range opts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + fmt.Sprint(opts[k])
		}
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		url += sep + strings.Join(parts, "&")
	}
	step, op := -1, ""
	defer func() {
		if p := recover(); p != nil {
			switch x := p.(type) {
			case bad:
				err = fmt.Errorf("broken case: step %d (%s): %s", step, op, x.msg)
			case diff:
				err = fmt.Errorf("step %d (%s): %s", step, op, x.msg)
			default:
				panic(p)
			}
		}
	}()
	r := newRun(url, fileBacked)
	defer r.close()
	for i, sv := range c["steps"].(arr) {
		s := sv.(obj)
		step = i
		op, _ = s["op"].(string)
		args, ok := opArgs[op]
		if !ok {
			brokenf("unknown op %q", op)
		}
		checkMembers(s, append([]string{"op", "expect", "save"}, args...), op)
		st, result := r.exec(s)
		if op != "parallel" {
			exp, ok := s["expect"].(obj)
			if !ok {
				exp = obj{"status": "ok"}
			}
			r.checkExpect(op, exp, st, result, "expect")
		} else if s["expect"] != nil {
			brokenf("parallel takes expect_counts")
		}
		if sv, ok := s["save"].(obj); ok {
			r.save(op, sv, result)
		}
	}
	return nil
}

// ---- the test -------------------------------------------------------------

func contractBackends(t *testing.T) []string {
	if l := os.Getenv("BITT_TEST_BACKENDS"); l != "" {
		var out []string
		for _, b := range strings.Split(l, ",") {
			switch b {
			case "sqlite":
				out = append(out, "sqlite-file", "sqlite-memory")
			default:
				out = append(out, b)
			}
		}
		return out
	}
	out := []string{"memory", "sqlite-file", "sqlite-memory"}
	if os.Getenv("BITT_TEST_POSTGRES_URL") != "" {
		out = append(out, "postgres")
	}
	if os.Getenv("BITT_TEST_REDIS_URL") != "" {
		out = append(out, "redis")
	}
	t.Logf("backends: %v (BITT_TEST_BACKENDS overrides)", out)
	return out
}

func caseURL(t *testing.T, backend, dir, runID string, cc contractCase) (string, bool) {
	switch backend {
	case "memory":
		return "memory:", false
	case "sqlite-memory":
		return "sqlite::memory:", false
	case "sqlite-file":
		// a lock is waited for however slow the machine (no case is about the wait)
		return fmt.Sprintf("sqlite:%s/%s_%d.db?busy_timeout=600000", dir, cc.stem, cc.idx), true
	}
	env, opt := "BITT_TEST_POSTGRES_URL", "schema"
	if backend == "redis" {
		env, opt = "BITT_TEST_REDIS_URL", "prefix"
	} else if backend != "postgres" {
		t.Fatalf("unknown backend %q", backend)
	}
	base := os.Getenv(env)
	if base == "" {
		t.Fatalf("%s is not set (leave %s out of BITT_TEST_BACKENDS)", env, backend)
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return fmt.Sprintf("%s%s%s=go_%s_%s_%d", base, sep, opt, runID, cc.stem, cc.idx), true
}

func TestContract(t *testing.T) {
	cases := loadCases(t)
	runID := strconv.FormatInt(time.Now().UnixNano()%1e8, 36)
	for _, b := range contractBackends(t) {
		t.Run(b, func(t *testing.T) {
			dir := t.TempDir()
			var passed atomic.Int64
			// Runs after every case, parallel ones included.
			t.Cleanup(func() { t.Logf("contract on %s: %d of %d cases passed", b, passed.Load(), len(cases)) })
			for _, cc := range cases {
				name, _ := cc.c["name"].(string)
				t.Run(cc.stem+"/"+name, func(t *testing.T) {
					if b == "postgres" || b == "redis" {
						// Each case has its own schema or prefix; most of
						// its time is the server's (creating the schema).
						t.Parallel()
					}
					url, fileBacked := caseURL(t, b, dir, runID, cc)
					if err := runCase(url, fileBacked, cc.c); err != nil {
						t.Fatalf("%s.json: case %q on %s: %v", cc.stem, name, b, err)
					}
					passed.Add(1)
				})
			}
		})
	}
}
