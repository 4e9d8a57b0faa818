package rbd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/rbd"
)

// TestDiff checks rbd diff, export-diff and import-diff on three images
// — 1 MiB objects; 1 MiB objects striped in 64 KiB units over 4; a clone
// of an image of random data — without an object map (the OSDs'
// SnapSets answer) and with fast-diff (the object maps answer), that
// take random writes, discards and resizes between four snapshots: between every two of the snapshots,
// the head and the empty image, every byte that differs lies in the
// changed extents; a chain of export-diffs imported into an empty image
// rebuilds each snapshot and the head; one 4 KiB write to an object after
// a snapshot changes 4 KiB (SnapSets) or that object (fast-diff); and bad
// streams change nothing.
func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   rbd.Options
		clone bool
	}{
		{"plain", rbd.Options{Order: 20, Features: noMap}, false},
		{"striped", rbd.Options{Order: 20, StripeUnit: 64 << 10, StripeCount: 4, Features: noMap}, false},
		{"clone", rbd.Options{Order: 20, Features: noMap}, true},
		{"fast-diff", rbd.Options{Order: 20}, false},
		{"fast-diff-striped", rbd.Options{Order: 20, StripeUnit: 64 << 10, StripeCount: 4}, false},
		{"fast-diff-clone", rbd.Options{Order: 20}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			_, p := cluster(t, ctx, false)
			rng, must, openIn := harness(ctx, t)
			open := func(name, snap string) *rbd.Image { t.Helper(); return openIn(p, name, snap) }
			const size = 8 << 20
			head := make([]byte, size)
			if tc.clone {
				must(rbd.Create(ctx, p, "base", rbd.Options{Size: size, Order: 21}))
				base := open("base", "")
				rng.Read(head[:size/2])
				must(base.WriteAt(ctx, head, 0))
				must(base.SnapCreate(ctx, "gold"))
				must(base.SnapProtect(ctx, "gold", true))
				must(rbd.Clone(ctx, open("base", "gold"), p, "src", tc.opt))
			} else {
				tc.opt.Size = size
				must(rbd.Create(ctx, p, "src", tc.opt))
			}
			src := open("src", "")
			names := []string{""} // "" is the empty image, then the snapshots, then the head
			content := map[string][]byte{"": nil}
			for i := range 5 {
				randomChanges(ctx, t, rng, src, &head, 6)
				if i == 4 {
					break
				}
				name := fmt.Sprintf("s%d", i+1)
				must(src.SnapCreate(ctx, name))
				names = append(names, name)
				content[name] = slices.Clone(head)
			}
			names = append(names, "HEAD")
			content["HEAD"] = head
			at := func(name string) *rbd.Image {
				if name == "HEAD" {
					return src
				}
				return open("src", name)
			}

			// no byte differs outside the changed extents
			for i, from := range names[:len(names)-1] {
				for _, to := range names[i+1:] {
					exts, err := at(to).Changed(ctx, from)
					must(err)
					a, b := content[from], content[to]
					for off := range b {
						if off < len(a) && a[off] == b[off] || off >= len(a) && b[off] == 0 {
							continue
						}
						if !slices.ContainsFunc(exts, func(e rbd.Extent) bool { return e.Off <= uint64(off) && uint64(off) < e.Off+e.Len }) {
							t.Fatalf("diff %s..%s: byte %d differs outside the extents %v", from, to, off, exts)
						}
					}
				}
			}

			// a chain of export-diffs rebuilds every snapshot, then the head
			must(rbd.Create(ctx, p, "mirror", rbd.Options{Size: 0}))
			mirror := open("mirror", "")
			for i, to := range names[1:] {
				var stream bytes.Buffer
				must(at(to).ExportDiff(ctx, names[i], &stream))
				in, err := mirror.ImportDiff(ctx, &stream)
				must(err)
				if want := map[bool]string{true: to}[to != "HEAD"]; in.To != want || in.From != names[i] {
					t.Fatalf("import-diff %s..%s: applied %+v", names[i], to, in)
				}
				check(ctx, t, rng, mirror, content[to], "mirror at "+to)
				if to != "HEAD" {
					check(ctx, t, rng, open("mirror", to), content[to], "mirror snapshot "+to)
				}
			}

			// bad streams change nothing
			must(mirror.SnapRemove(ctx, "s1"))
			var s1s2, toS2, s4head bytes.Buffer
			must(open("src", "s2").ExportDiff(ctx, "s1", &s1s2))
			must(open("src", "s2").ExportDiff(ctx, "", &toS2))
			must(src.ExportDiff(ctx, "s4", &s4head)) // what the mirror's head has: a part of it changes nothing
			for _, c := range []struct {
				what   string
				stream []byte
				want   error
			}{
				{"a stream from a snapshot the image lacks", s1s2.Bytes(), rbd.ErrNotFound},
				{"a stream to a snapshot the image has", toS2.Bytes(), rbd.ErrExists},
				{"not a diff", []byte("rbd diff v9\nxxxxxxxx"), rbd.ErrInvalid},
				{"an unknown record", []byte("rbd diff v1\nq"), rbd.ErrInvalid},
				{"a data record before the size", []byte("rbd diff v1\nw\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00x"), rbd.ErrInvalid},
				{"a truncated stream", s4head.Bytes()[:s4head.Len()/2], rbd.ErrInvalid},
			} {
				if _, err := mirror.ImportDiff(ctx, bytes.NewReader(c.stream)); !errors.Is(err, c.want) {
					t.Fatalf("%s: %v, want %v", c.what, err, c.want)
				}
				check(ctx, t, rng, mirror, head, "mirror after "+c.what)
			}

			// an object written, a snapshot, 4 KiB of it written again:
			// 4 KiB changed, or the object (1 MiB) with fast-diff
			off := min(uint64(3<<20+5), src.Size()-4096)
			must(src.WriteAt(ctx, bytes.Repeat([]byte{1}, 4096), off))
			must(src.SnapCreate(ctx, "before"))
			must(src.WriteAt(ctx, bytes.Repeat([]byte{2}, 4096), off))
			exts, err := src.Changed(ctx, "before")
			must(err)
			var n uint64
			for _, e := range exts {
				n += e.Len
			}
			if want := map[bool]uint64{true: 4096, false: 1 << 20}[tc.opt.Features == noMap]; n != want {
				t.Fatalf("one 4 KiB write after a snapshot: %d bytes changed, want %d (%v)", n, want, exts)
			}
		})
	}
}

// noMap are the features of an image without an object map.
const noMap = clsrbd.FeatureLayering | clsrbd.FeatureExclusiveLock

// randomChanges makes n random writes, discards and resizes (between
// 4 and 10 MiB) to img, and to want.
func randomChanges(ctx context.Context, t *testing.T, rng *rand.Rand, img *rbd.Image, want *[]byte, n int) {
	t.Helper()
	for range n {
		size := uint64(len(*want))
		switch k := rng.Intn(10); {
		case k < 6:
			off := uint64(rng.Int63n(int64(size)))
			buf := make([]byte, min(size-off, 1+uint64(rng.Intn(1<<20))))
			rng.Read(buf)
			if err := img.WriteAt(ctx, buf, off); err != nil {
				t.Fatal(err)
			}
			copy((*want)[off:], buf)
		case k < 9:
			off := uint64(rng.Int63n(int64(size)))
			n := min(size-off, 1+uint64(rng.Intn(3<<20)))
			if err := img.Discard(ctx, off, n); err != nil {
				t.Fatal(err)
			}
			clear((*want)[off : off+n])
		default:
			next := uint64(4<<20 + rng.Intn(6<<20))
			if err := img.Resize(ctx, next, true); err != nil {
				t.Fatal(err)
			}
			grown := make([]byte, next)
			copy(grown, *want)
			*want = grown
		}
	}
}
