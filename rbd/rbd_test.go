package rbd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/rbd"
)

// cluster starts three OSDs and creates pools: "rbd" (3 replicas) and,
// with ec, "ecdata" (erasure-coded 2+1, overwrites allowed).
func cluster(t *testing.T, ctx context.Context, ec bool) (*client.Conn, *client.Pool) {
	_, cl, p := clusterConf(t, ctx, ec, "")
	return cl, p
}

// clusterConf is cluster with configuration lines conf, and the cluster
// (for more clients).
func clusterConf(t *testing.T, ctx context.Context, ec bool, conf string) (*testcluster.Cluster, *client.Conn, *client.Pool) {
	c := testcluster.Start(t, testcluster.Options{OSDs: 3, Conf: conf})
	cl := c.Client(ctx)
	cmds := [][]string{{"pool create", "name", "rbd", "size", "3", "pg_num", "8"}}
	if ec {
		cmds = append(cmds,
			[]string{"osd erasure-code-profile set", "name", "p21", "args", "k=2 m=1 crush-failure-domain=osd"},
			[]string{"pool create", "name", "ecdata", "type", "erasure", "erasure_code_profile", "p21", "pg_num", "8"},
		)
	}
	for _, c := range cmds {
		args := map[string]string{}
		for i := 1; i+1 < len(c); i += 2 {
			args[c[i]] = c[i+1]
		}
		if _, err := cl.MonCommand(ctx, c[0], args); err != nil {
			t.Fatalf("%s: %v", c[0], err)
		}
	}
	p, err := cl.Pool(ctx, "rbd")
	if err != nil {
		t.Fatal(err)
	}
	return c, cl, p
}

// harness gives a test a random source (seeded by the process id,
// logged), must (fail on an error) and open (an image, closed when the
// test ends).
func harness(ctx context.Context, t *testing.T) (*rand.Rand, func(error), func(p *client.Pool, name, snap string) *rbd.Image) {
	seed := int64(os.Getpid())
	t.Logf("seed %d", seed)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	open := func(p *client.Pool, name, snap string) *rbd.Image {
		t.Helper()
		img, err := rbd.Open(ctx, p, name, snap)
		must(err)
		t.Cleanup(func() { img.Close(context.Background()) })
		return img
	}
	return rand.New(rand.NewSource(seed)), must, open
}

// model is an image's expected content, with its snapshots'.
type model struct {
	head  []byte
	snaps map[string][]byte
}

// check reads the whole image (in pieces of random sizes) and compares.
func check(ctx context.Context, t *testing.T, rng *rand.Rand, img *rbd.Image, want []byte, what string) {
	t.Helper()
	if img.Size() != uint64(len(want)) {
		t.Fatalf("%s: size %d, want %d", what, img.Size(), len(want))
	}
	for off := 0; off < len(want); {
		n := min(len(want)-off, 1+rng.Intn(4<<20))
		got := make([]byte, n)
		for i := range got {
			got[i] = 0xee // a hole must be written over with zeros
		}
		if err := img.ReadAt(ctx, got, uint64(off)); err != nil {
			t.Fatalf("%s: read %d at %d: %v", what, n, off, err)
		}
		if !bytes.Equal(got, want[off:off+n]) {
			i := 0
			for got[i] == want[off+i] {
				i++
			}
			t.Fatalf("%s: byte %d is %#x, want %#x", what, off+i, got[i], want[off+i])
		}
		off += n
	}
}

// TestImages runs random writes, discards, resizes and snapshots on
// images of three layouts — 2 MiB objects; 1 MiB objects striped in
// 64 KiB units over 4 objects; and 2 MiB objects whose data lives in an
// erasure-coded pool — checking each against a model: every byte of
// the head and of every snapshot, thin provisioning (the data objects
// that exist), and what rbd's verbs refuse.
func TestImages(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  rbd.Options
		ec   bool
	}{
		{"plain", rbd.Options{Order: 21}, false},
		{"striped", rbd.Options{Order: 20, StripeUnit: 64 << 10, StripeCount: 4}, false},
		{"ec-data-pool", rbd.Options{Order: 21}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cl, p := cluster(t, ctx, tc.ec)
			if tc.ec {
				dp, err := cl.Pool(ctx, "ecdata")
				if err != nil {
					t.Fatal(err)
				}
				tc.opt.DataPool = dp
				if err := rbd.Create(ctx, p, "img", rbd.Options{Size: 1 << 20, DataPool: dp}); !errors.Is(err, rbd.ErrInvalid) {
					t.Fatalf("an EC data pool without overwrites: %v", err)
				}
				if err := rbd.Create(ctx, dp, "img", rbd.Options{Size: 1 << 20}); !errors.Is(err, rbd.ErrInvalid) {
					t.Fatalf("an image (its header) in an EC pool: %v", err)
				}
				if _, err := cl.MonCommand(ctx, "pool set", map[string]string{"name": "ecdata", "key": "allow_ec_overwrites", "value": "true"}); err != nil {
					t.Fatal(err)
				}
				if err := cl.RefreshMap(ctx); err != nil {
					t.Fatal(err)
				}
			}
			runImage(ctx, t, cl, p, tc.opt)
		})
	}
}

func runImage(ctx context.Context, t *testing.T, cl *client.Conn, p *client.Pool, opt rbd.Options) {
	seed := int64(os.Getpid())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	opt.Size = 12 << 20
	if err := rbd.Create(ctx, p, "img", opt); err != nil {
		t.Fatal(err)
	}
	if err := rbd.Create(ctx, p, "img", opt); !errors.Is(err, rbd.ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	img, err := rbd.Open(ctx, p, "img", "")
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close(ctx)
	info := img.Info()
	data := p
	if opt.DataPool != nil {
		data = opt.DataPool
		if info.DataPool != opt.DataPool.Name() {
			t.Fatalf("info: data pool %q", info.DataPool)
		}
	}
	m := model{head: make([]byte, opt.Size), snaps: map[string][]byte{}}
	check(ctx, t, rng, img, m.head, "new image")
	if objs := dataObjects(ctx, t, data, info.ObjectPrefix); len(objs) != 0 {
		t.Fatalf("a new image has data objects: %v", objs)
	}
	// one write of 5 bytes at the start creates exactly one object
	if err := img.WriteAt(ctx, []byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	copy(m.head, "hello")
	if objs := dataObjects(ctx, t, data, info.ObjectPrefix); len(objs) != 1 || objs[0] != info.ObjectPrefix+".0000000000000000" {
		t.Fatalf("after one small write: data objects %v", objs)
	}
	snapN := 0
	for step := range 100 {
		size := uint64(len(m.head))
		switch k := rng.Intn(20); {
		case k < 9:
			off := uint64(rng.Int63n(int64(size)))
			n := min(size-off, 1+uint64(rng.Intn(1<<20)))
			buf := make([]byte, n)
			rng.Read(buf)
			if err := img.WriteAt(ctx, buf, off); err != nil {
				t.Fatalf("step %d: write %d at %d: %v", step, n, off, err)
			}
			copy(m.head[off:], buf)
		case k < 12:
			off := uint64(rng.Int63n(int64(size)))
			n := min(size-off, 1+uint64(rng.Intn(5<<20)))
			if err := img.Discard(ctx, off, n); err != nil {
				t.Fatalf("step %d: discard %d at %d: %v", step, n, off, err)
			}
			clear(m.head[off : off+n])
		case k < 14:
			next := uint64(4<<20 + rng.Intn(12<<20))
			if err := img.Resize(ctx, next, true); err != nil {
				t.Fatalf("step %d: resize to %d: %v", step, next, err)
			}
			grown := make([]byte, next)
			copy(grown, m.head)
			m.head = grown
		case k < 16:
			snapN++
			name := fmt.Sprintf("s%d", snapN)
			if err := img.SnapCreate(ctx, name); err != nil {
				t.Fatalf("step %d: snap create: %v", step, err)
			}
			m.snaps[name] = slices.Clone(m.head)
		case k < 17 && len(m.snaps) > 0:
			name := anySnap(rng, m.snaps)
			if err := img.SnapRemove(ctx, name); err != nil {
				t.Fatalf("step %d: snap rm %s: %v", step, name, err)
			}
			delete(m.snaps, name)
		case k < 18 && len(m.snaps) > 0:
			name := anySnap(rng, m.snaps)
			if err := img.SnapRollback(ctx, name); err != nil {
				t.Fatalf("step %d: snap rollback %s: %v", step, name, err)
			}
			m.head = slices.Clone(m.snaps[name])
		default:
			check(ctx, t, rng, img, m.head, fmt.Sprintf("step %d", step))
		}
	}
	check(ctx, t, rng, img, m.head, "head")
	checkMap(ctx, t, img, "head")
	for name, want := range m.snaps {
		at, err := rbd.Open(ctx, p, "img", name)
		if err != nil {
			t.Fatal(err)
		}
		check(ctx, t, rng, at, want, "snapshot "+name)
		checkMap(ctx, t, at, "snapshot "+name)
		if err := at.WriteAt(ctx, []byte("x"), 0); !errors.Is(err, rbd.ErrReadOnly) {
			t.Fatalf("write at snapshot %s: %v", name, err)
		}
	}
	// another client's snapshot: this one's later writes clone too
	other, err := rbd.Open(ctx, p, "img", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SnapCreate(ctx, "by-other"); err != nil {
		t.Fatal(err)
	}
	other.Close(ctx)
	if ws, err := img.Watchers(ctx); err != nil || len(ws) != 1 {
		t.Fatalf("watchers with one client left: %v %v", ws, err)
	}
	m.snaps["by-other"] = slices.Clone(m.head)
	if err := img.WriteAt(ctx, bytes.Repeat([]byte{7}, 4096), 0); err != nil {
		t.Fatal(err)
	}
	copy(m.head, bytes.Repeat([]byte{7}, 4096))
	at, err := rbd.Open(ctx, p, "img", "by-other")
	if err != nil {
		t.Fatal(err)
	}
	check(ctx, t, rng, at, m.snaps["by-other"], "a snapshot another client took")
	if err := img.SnapProtect(ctx, "by-other", true); err != nil {
		t.Fatal(err)
	}
	hdr, err := rbd.OpenHeader(ctx, p, "img")
	if err != nil {
		t.Fatal(err)
	}
	// bad input changes nothing
	for _, c := range []struct {
		what string
		err  error
		want error
	}{
		{"a write past the end", img.WriteAt(ctx, []byte("x"), img.Size()), rbd.ErrInvalid},
		{"a shrink without allow-shrink", img.Resize(ctx, 1<<20, false), rbd.ErrInvalid},
		{"a snapshot name taken", img.SnapCreate(ctx, "by-other"), rbd.ErrExists},
		{"rollback to no snapshot", img.SnapRollback(ctx, "nope"), rbd.ErrNotFound},
		{"removal while open", rbd.Remove(ctx, p, "img"), rbd.ErrBusy},
		{"removal of a protected snapshot", img.SnapRemove(ctx, "by-other"), rbd.ErrBusy},
		{"a write through a header-only open", hdr.WriteAt(ctx, []byte("x"), 0), rbd.ErrReadOnly},
	} {
		if !errors.Is(c.err, c.want) {
			t.Fatalf("%s: %v, want %v", c.what, c.err, c.want)
		}
	}
	if _, err := rbd.Open(ctx, p, "nope", ""); !errors.Is(err, rbd.ErrNotFound) {
		t.Fatalf("open of no image: %v", err)
	}
	// rename, then removal: refused while snapshots remain
	img.Close(ctx)
	if err := rbd.Rename(ctx, p, "img", "disk"); err != nil {
		t.Fatal(err)
	}
	if names, err := rbd.List(ctx, p); err != nil || !slices.Equal(names, []string{"disk"}) {
		t.Fatalf("ls after mv: %v %v", names, err)
	}
	if err := rbd.Remove(ctx, p, "disk"); !errors.Is(err, rbd.ErrBusy) {
		t.Fatalf("rm with snapshots: %v", err)
	}
	img, err = rbd.Open(ctx, p, "disk", "")
	if err != nil {
		t.Fatal(err)
	}
	check(ctx, t, rng, img, m.head, "after mv")
	// a copy: the same bytes, no more data objects than the source
	if err := img.Copy(ctx, p, "copy"); err != nil {
		t.Fatal(err)
	}
	cp, err := rbd.Open(ctx, p, "copy", "")
	if err != nil {
		t.Fatal(err)
	}
	check(ctx, t, rng, cp, m.head, "copy")
	if src, dst := dataObjects(ctx, t, data, info.ObjectPrefix), dataObjects(ctx, t, data, cp.Info().ObjectPrefix); len(dst) > len(src) {
		t.Fatalf("the copy has %d data objects, the source %d", len(dst), len(src))
	}
	cp.Close(ctx)
	if err := rbd.Remove(ctx, p, "copy"); err != nil {
		t.Fatal(err)
	}
	if err := img.SnapProtect(ctx, "by-other", false); err != nil {
		t.Fatal(err)
	}
	for _, s := range img.Snapshots() {
		if err := img.SnapRemove(ctx, s.Name); err != nil {
			t.Fatal(err)
		}
	}
	img.Close(ctx)
	if err := rbd.Remove(ctx, p, "disk"); err != nil {
		t.Fatal(err)
	}
	if names, err := rbd.List(ctx, p); err != nil || len(names) != 0 {
		t.Fatalf("ls after rm: %v %v", names, err)
	}
	if objs := dataObjects(ctx, t, data, info.ObjectPrefix); len(objs) != 0 {
		t.Fatalf("data objects after rm: %v", objs)
	}
	var left []string
	if err := p.List(ctx, func(n string) bool { left = append(left, n); return true }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != clsrbd.DirectoryOID {
		t.Fatalf("objects left in the pool after rm: %v", left)
	}
}

// checkMap fails the test if the image's object map says an object that
// exists is absent.
func checkMap(ctx context.Context, t *testing.T, img *rbd.Image, what string) {
	t.Helper()
	wrong, _, err := img.CheckObjectMap(ctx)
	if err != nil || len(wrong) > 0 {
		t.Fatalf("%s: object map wrong about %v (%v)", what, wrong, err)
	}
}

func anySnap(rng *rand.Rand, snaps map[string][]byte) string {
	names := make([]string, 0, len(snaps))
	for n := range snaps {
		names = append(names, n)
	}
	slices.Sort(names)
	return names[rng.Intn(len(names))]
}

// dataObjects lists the image's data objects in pool, sorted.
func dataObjects(ctx context.Context, t *testing.T, pool *client.Pool, prefix string) []string {
	t.Helper()
	var out []string
	if err := pool.List(ctx, func(n string) bool {
		if strings.HasPrefix(n, prefix+".") {
			out = append(out, n)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestRemoveUnfinished: what an interrupted create leaves (the id
// object, empty or naming a header that was never written) can be
// removed, and the name created again; a name with nothing is still
// "not found".
func TestRemoveUnfinished(t *testing.T) {
	ctx := context.Background()
	_, p := cluster(t, ctx, false)
	for _, idData := range []string{"", "abcdef0123"} {
		if err := p.WriteFull(ctx, "rbd_id.half", []byte(idData)); err != nil {
			t.Fatal(err)
		}
		if err := rbd.Create(ctx, p, "half", rbd.Options{Size: 1 << 20}); !errors.Is(err, rbd.ErrExists) {
			t.Fatalf("create over a half-made image: %v", err)
		}
		if err := rbd.Remove(ctx, p, "half"); err != nil {
			t.Fatalf("remove a half-made image (id %q): %v", idData, err)
		}
		if _, err := p.Stat(ctx, "rbd_id.half"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("id object left: %v", err)
		}
	}
	if err := rbd.Create(ctx, p, "half", rbd.Options{Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	// a removal interrupted after the header went: the directory entry
	// and the id object are left, and a second removal finishes
	b, err := p.Read(ctx, "rbd_id.half", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Remove(ctx, "rbd_header."+string(b)); err != nil {
		t.Fatal(err)
	}
	if err := rbd.Remove(ctx, p, "half"); err != nil {
		t.Fatal(err)
	}
	if names, err := rbd.List(ctx, p); err != nil || len(names) != 0 {
		t.Fatalf("images left: %v, %v", names, err)
	}
	if err := rbd.Remove(ctx, p, "never"); !errors.Is(err, rbd.ErrNotFound) {
		t.Fatalf("remove of no image: %v", err)
	}
}
