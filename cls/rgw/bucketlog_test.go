package rgw

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cls"
	"github.com/shoal-project/shoal/omap"
)

// logObj is a batch object whose method writes apply at once (the OSD
// applies a method's writes with the request, or none if it fails; the
// failing calls here write nothing before failing).
type logObj struct {
	exists bool
	data   []byte
	xattrs map[string][]byte
	now    time.Time
}

func (o *logObj) Exists() bool { return o.exists }
func (o *logObj) Size() uint64 { return uint64(len(o.data)) }
func (o *logObj) Read(off, n uint64) ([]byte, error) {
	return append([]byte(nil), o.data[off:off+n]...), nil
}
func (o *logObj) GetXattr(n string) ([]byte, error) {
	if v, ok := o.xattrs[n]; ok {
		return v, nil
	}
	return nil, cls.ErrNotFound
}
func (o *logObj) Xattrs() []string                                      { return nil }
func (o *logObj) OmapGet([]string) (map[string][]byte, error)           { return nil, nil }
func (o *logObj) OmapList(string, string, int) ([]omap.KV, bool, error) { return nil, false, nil }
func (o *logObj) Caller() string                                        { return "" }
func (o *logObj) Now() time.Time                                        { return o.now }
func (o *logObj) Write(off uint64, d []byte) {
	o.exists = true
	o.data = append(o.data[:off], d...)
}
func (o *logObj) WriteFull(d []byte)          { o.exists = true; o.data = append([]byte(nil), d...) }
func (o *logObj) SetXattr(n string, v []byte) { o.exists = true; o.xattrs[n] = v }
func (o *logObj) OmapSet([]omap.KV)           {}
func (o *logObj) OmapRm([]string)             {}
func (o *logObj) Remove()                     { *o = logObj{xattrs: map[string][]byte{}, now: o.now} }

// TestLogBatch: appends start a batch at the first record and keep its
// start; a trim under the batch number read drops the committed bytes,
// keeps what came after as the next batch and counts the batch; a trim
// under a stale number (a second committer, or a stalled one) is refused
// with nothing changed.
func TestLogBatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	o := &logObj{xattrs: map[string][]byte{}, now: t0}
	since := func(out []byte) time.Time {
		var a LogAppendOut
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatal(err)
		}
		return time.Unix(0, a.Since)
	}
	if _, err := logAppend(o, nil); !errors.Is(err, cls.ErrInvalid) {
		t.Fatalf("empty record: %v", err)
	}
	out, err := logAppend(o, []byte("one\n"))
	if err != nil || !since(out).Equal(t0) {
		t.Fatalf("first append: %v %v", since(out), err)
	}
	o.now = t0.Add(time.Minute)
	if out, err := logAppend(o, []byte("two\n")); err != nil || !since(out).Equal(t0) {
		t.Fatalf("second append: the batch's start moved to %v (%v)", since(out), err)
	}
	trim := func(n, seq uint64) error {
		in, _ := json.Marshal(LogTrimIn{N: n, Seq: seq})
		_, err := logTrim(o, in)
		return err
	}
	if err := trim(4, 1); !errors.Is(err, cls.ErrBusy) || string(o.data) != "one\ntwo\n" {
		t.Fatalf("trim under a batch number not read: %v, data %q", err, o.data)
	}
	if err := trim(100, 0); !errors.Is(err, cls.ErrInvalid) {
		t.Fatalf("trim past the end: %v", err)
	}
	// a committer read "one\n" only; "two\n" came after and stays
	o.now = t0.Add(2 * time.Minute)
	if err := trim(4, 0); err != nil || string(o.data) != "two\n" {
		t.Fatalf("trim: %v, data %q", err, o.data)
	}
	if s, _ := strconv.Atoi(string(o.xattrs["seq"])); s != 1 || !LogSince(o.xattrs["since"]).Equal(o.now) {
		t.Fatalf("after the trim: seq %s, since %v", o.xattrs["seq"], LogSince(o.xattrs["since"]))
	}
	if err := trim(4, 0); !errors.Is(err, cls.ErrBusy) || string(o.data) != "two\n" {
		t.Fatalf("the same trim again: %v, data %q", err, o.data)
	}
	if err := trim(4, 1); err != nil || len(o.data) != 0 || !LogSince(o.xattrs["since"]).IsZero() {
		t.Fatalf("trimming all: %v, data %q, since %q", err, o.data, o.xattrs["since"])
	}
	o.now = t0.Add(3 * time.Minute)
	if out, err := logAppend(o, []byte("three\n")); err != nil || !since(out).Equal(o.now) {
		t.Fatalf("the append after an empty batch starts a new one: %v %v", since(out), err)
	}
}
