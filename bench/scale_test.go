package bench

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// scaleMem is memTarget with stat and list.
type scaleMem struct{ *memTarget }

func (m scaleMem) StatSize(ctx context.Context, oid string) (uint64, error) {
	b, err := m.Read(ctx, oid, 0, 0)
	return uint64(len(b)), err
}

func (m scaleMem) List(ctx context.Context, fn func(string) bool) error {
	for _, n := range m.names() {
		if !fn(n) {
			return nil
		}
	}
	return nil
}

// TestScale: every level's objects are written (and the timed writes
// beyond it), each with its own content; every phase reports a rate; a
// corrupted hot object fails the read phase; levels out of order are
// refused.
func TestScale(t *testing.T) {
	ctx := context.Background()
	m := scaleMem{newMem()}
	var log bytes.Buffer
	var settled []int // the objects written when each Settle was called
	o := ScaleOptions{Levels: []int{100, 300}, ObjectSize: 64, Concurrency: 4, Writes: 50, HotSet: 20, Reads: 200, List: 30, Out: &log,
		Settle: func(context.Context) error { settled = append(settled, len(m.names())); return nil }}
	res, err := Scale(ctx, m, o)
	if err != nil {
		t.Fatal(err)
	}
	// after each level's first write window, then before its reads and
	// listing
	if want := []int{150, 200, 200, 350, 400, 400}; !slices.Equal(settled, want) {
		t.Fatalf("settled with %v objects written, want %v", settled, want)
	}
	// a Settle that fails stops the run
	if _, err := Scale(ctx, scaleMem{newMem()}, ScaleOptions{Levels: []int{10}, Settle: func(context.Context) error { return errors.New("osd.0 down") }}); err == nil || !strings.Contains(err.Error(), "osd.0 down") {
		t.Fatalf("a failing settle: %v", err)
	}
	// 0..99, 50 timed, 50 timed after settling, up to 300, 50 and 50
	if n := len(m.names()); n != 400 {
		t.Fatalf("%d objects written, want 400", n)
	}
	for i := range 400 {
		b, err := m.Read(ctx, ObjectName("scale", i), 0, 0)
		if err != nil || len(b) != 64 || newContent(prefixSeed("scale"), i, 64).check(b) >= 0 {
			t.Fatalf("object %d: %d bytes, %v", i, len(b), err)
		}
	}
	if len(res) != 2 || res[0].Objects != 100 || res[1].Objects != 300 {
		t.Fatalf("levels: %+v", res)
	}
	for _, r := range res {
		if r.WriteOps <= 0 || r.WriteOpsAfterFill <= 0 || r.StatReads <= 0 || r.FirstStatReads <= 0 || r.ListNames <= 0 || r.FirstListNames <= 0 || r.WriteBytes != r.WriteOps*64 {
			t.Errorf("level %d: %+v", r.Objects, r)
		}
	}
	if !strings.Contains(log.String(), "at 300 objects:") {
		t.Errorf("progress:\n%s", log.String())
	}

	// a hot object that reads back wrong fails the run
	bad := scaleMem{newMem()}
	if _, err := Scale(ctx, bad, ScaleOptions{Levels: []int{40}, ObjectSize: 64, Concurrency: 2, Writes: 1, HotSet: 1, Reads: 1, List: 1}); err != nil {
		t.Fatal(err)
	}
	for _, n := range bad.names() {
		bad.mutate(t, n, func(b []byte) []byte { b[0] ^= 1; return b })
	}
	if _, _, err := scaleRead(ctx, bad, ScaleOptions{ObjectSize: 64, Concurrency: 2, HotSet: 1, Reads: 1, Prefix: "scale"}, 41); err == nil || !strings.Contains(err.Error(), "not what was written") {
		t.Errorf("corrupt objects read back: %v", err)
	}

	if _, err := Scale(ctx, m, ScaleOptions{Levels: []int{10, 10}}); err == nil {
		t.Error("levels 10, 10 accepted")
	}

	// a run resumed on the 400 objects above: a level at or below them
	// is measured as it is (10 written), a higher one filled from there
	res, err = Scale(ctx, m, ScaleOptions{Levels: []int{200, 500}, Start: 400, ObjectSize: 64, Concurrency: 4, Writes: 10, HotSet: 20, Reads: 40, List: 30})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.names()); n != 510 || len(res) != 2 || res[0].Objects != 400 || res[1].Objects != 500 {
		t.Fatalf("resumed at 400: %d objects, levels %+v", n, res)
	}
	if _, err := Scale(ctx, m, ScaleOptions{Levels: []int{10}, Start: -1}); err == nil {
		t.Error("start -1 accepted")
	}
}
