package osdop_test

import (
	"bytes"
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osdop"
)

func TestRequestRoundTrip(t *testing.T) {
	req := &osdop.Request{Pool: 3, Seed: 0x1f, OID: "obj", Client: 42, Tid: 7, Ops: []osdop.Op{
		{Code: osdop.AssertVersion, Ver: 9},
		{Code: osdop.Write, Off: 4096, Data: []byte("hello")},
		{Code: osdop.OmapSet, KVs: []omap.KV{{Key: "a", Value: []byte("1")}}},
		{Code: osdop.OmapList, Name: "a", Prefix: "p", Max: 10},
		{Code: osdop.OmapRm, Keys: []string{"x", "y"}},
		{Code: osdop.Create, Exclusive: true},
		{Code: osdop.GetXattr, Name: "a", FailOK: true},
	}}
	e := wire.NewEncoder(nil)
	req.Encode(e)
	got, err := osdop.DecodeRequest(e.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(got), normalize(req)) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, req)
	}
	if !req.IsWrite() || (&osdop.Request{Ops: []osdop.Op{{Code: osdop.Read}, {Code: osdop.Stat}}}).IsWrite() {
		t.Fatal("IsWrite misclassifies")
	}
	b := e.Bytes()
	for _, n := range []int{0, 5, len(b) / 2, len(b) - 1} {
		if _, err := osdop.DecodeRequest(b[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: decoded", n)
		}
	}
	bad := append([]byte(nil), b...)
	bad[6+8+4+4+3+8+8+4] = 200 // first op's code
	if _, err := osdop.DecodeRequest(bad); err == nil {
		t.Fatal("unknown op code decoded")
	}
	bad = append(bad[:0], b...)
	flagsAt := 6 + 8 + 4 + 4 + 3 + 8 + 8 + 4 + 1 + 8 + 8 + 4 + 4 + 4
	bad[flagsAt] = 2 // FailOK on the first op: decodes
	if r, err := osdop.DecodeRequest(bad); err != nil || !r.Ops[0].FailOK {
		t.Fatalf("flags byte: %v", err)
	}
	bad[flagsAt] = 4 // an unknown flag
	if _, err := osdop.DecodeRequest(bad); err == nil {
		t.Fatal("unknown op flags decoded")
	}
}

func TestReplyRoundTrip(t *testing.T) {
	rep := &osdop.Reply{Ver: 5, Results: []osdop.Result{{Data: []byte("x"), More: true, Size: 9, Mtime: -1, Ver: 3,
		KVs: []omap.KV{{Key: "k", Value: []byte("v")}}}, {}}}
	e := wire.NewEncoder(nil)
	rep.Encode(e)
	got, err := osdop.DecodeReply(e.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got.Ver != 5 || len(got.Results) != 2 || string(got.Results[0].Data) != "x" || !got.Results[0].More ||
		got.Results[0].Size != 9 || got.Results[0].KVs[0].Key != "k" || got.Results[0].Mtime != -1 {
		t.Fatalf("round trip: %+v", got)
	}
}

func TestErrnoRoundTrip(t *testing.T) {
	for _, e := range []error{osdop.ErrNotFound, osdop.ErrExists, osdop.ErrNoSpace, osdop.ErrTooLarge, osdop.ErrRetry, osdop.ErrVerOlder} {
		wrapped := errors.Join(errors.New("context"), e)
		no := osdop.Errno(wrapped)
		back := osdop.FromErrno(no, e.Error()+" (op 0 read on x)")
		if !errors.Is(back, e) {
			t.Fatalf("%v -> errno %d -> %v", e, no, back)
		}
		if back.Error() != e.Error()+" (op 0 read on x)" {
			t.Fatalf("message: %q", back.Error())
		}
	}
	if osdop.Errno(errors.New("other")) != syscall.EIO {
		t.Fatal("unknown errors must be EIO")
	}
}

func FuzzDecodeRequest(f *testing.F) {
	e := wire.NewEncoder(nil)
	(&osdop.Request{Pool: 1, OID: "o", Ops: []osdop.Op{{Code: osdop.Write, Data: []byte("abc")}, {Code: osdop.OmapRm, Keys: []string{"k"}}}}).Encode(e)
	f.Add(e.Bytes())
	e = wire.NewEncoder(nil)
	(&osdop.Request{Pool: 2, OID: "s", SnapSeq: 9, Snaps: []uint64{9, 4}, Snap: 3, Ops: []osdop.Op{{Code: osdop.Rollback, Ver: 4}, {Code: osdop.Watch, Ver: 7, Len: 30}}}).Encode(e)
	f.Add(e.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := osdop.DecodeRequest(b)
		if err != nil {
			return
		}
		e := wire.NewEncoder(nil)
		r.Encode(e)
		r2, err := osdop.DecodeRequest(e.Bytes())
		if err != nil || !reflect.DeepEqual(normalize(r), normalize(r2)) {
			t.Fatalf("re-encode differs: %v", err)
		}
	})
}

// FuzzDecodeSnapSet: any input either fails to decode or decodes to a
// SnapSet whose encoding decodes to the same, with clones in increasing
// id order at most its seq.
func FuzzDecodeSnapSet(f *testing.F) {
	f.Add((&osdop.SnapSet{Seq: 7, HeadExists: true, Clones: []osdop.CloneInfo{{ID: 3, Snaps: []uint64{3, 1}, Size: 10, Overlap: []osdop.Extent{{0, 4}}}, {ID: 7, Snaps: []uint64{7}}}}).Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		ss, err := osdop.DecodeSnapSet(b)
		if err != nil {
			return
		}
		for i, c := range ss.Clones {
			if c.ID > ss.Seq || (i > 0 && c.ID <= ss.Clones[i-1].ID) {
				t.Fatalf("decoded clones out of order: %+v", ss)
			}
		}
		ss2, err := osdop.DecodeSnapSet(ss.Bytes())
		if err != nil || !reflect.DeepEqual(ss, ss2) {
			t.Fatalf("re-encode differs: %v", err)
		}
		for _, c := range ss.Clones { // every snap a clone serves resolves to it, or to an older one serving it too
			for _, snap := range c.Snaps {
				if k, head, ok := ss.Resolve(snap); ok && !head && (k >= len(ss.Clones) || ss.Clones[k].ID > c.ID) {
					t.Fatalf("snap %d of clone %d resolves to clone index %d", snap, c.ID, k)
				}
			}
		}
	})
}

// normalize maps empty slices to nil for comparison.
func normalize(r *osdop.Request) *osdop.Request {
	c := *r
	c.Ops = append([]osdop.Op(nil), r.Ops...)
	for i := range c.Ops {
		if len(c.Ops[i].Data) == 0 {
			c.Ops[i].Data = nil
		}
		if len(c.Ops[i].KVs) == 0 {
			c.Ops[i].KVs = nil
		}
		for j := range c.Ops[i].KVs {
			if len(c.Ops[i].KVs[j].Value) == 0 {
				c.Ops[i].KVs[j].Value = nil
			}
		}
		if len(c.Ops[i].Keys) == 0 {
			c.Ops[i].Keys = nil
		}
	}
	if len(c.Ops) == 0 {
		c.Ops = nil
	}
	return &c
}

// EncodeVec's parts concatenate to Encode's bytes, with large data
// referenced rather than copied, a result given as parts (Vec) encoded
// as the blob of their concatenation, and the known checksums of Vec
// parts given for exactly the elements that hold them.
func TestReplyEncodeVec(t *testing.T) {
	big := bytes.Repeat([]byte("d"), 1000)
	big2 := bytes.Repeat([]byte("e"), 1000)
	sum := crc32c.Sum{CRC: crc32c.Checksum(big2), Valid: true}
	r := &osdop.Reply{Ver: 7, Results: []osdop.Result{{Data: big, Size: 1000}, {Data: []byte("small"), KVs: []omap.KV{{Key: "k", Value: []byte("v")}}, More: true}, {},
		{Vec: [][]byte{big, []byte("tiny"), big2}, VecSums: []crc32c.Sum{{}, {CRC: crc32c.Checksum([]byte("tiny")), Valid: true}, sum}, Mtime: -1, Ver: 3}}}
	if n := r.Results[3].DataLen(); n != 2004 {
		t.Fatalf("DataLen of parts: %d", n)
	}
	e := wire.NewEncoder(nil)
	r.Encode(e)
	dec, err := osdop.DecodeReply(e.Bytes())
	if err != nil || !bytes.Equal(dec.Results[3].Data, append(append(append([]byte(nil), big...), "tiny"...), big2...)) {
		t.Fatalf("parts decode as one blob: %v", err)
	}
	parts, sums := r.EncodeVec(100)
	if len(sums) != len(parts) {
		t.Fatalf("%d sums for %d parts", len(sums), len(parts))
	}
	known := 0
	for j, s := range sums {
		if s.Valid {
			known++
			if s.CRC != crc32c.Checksum(parts[j]) || &parts[j][0] != &big2[0] {
				t.Fatalf("part %d: sum %08x, its crc32c %08x", j, s.CRC, crc32c.Checksum(parts[j]))
			}
		}
	}
	if known != 1 {
		t.Fatalf("%d parts with a known sum, want 1 (big2; tiny is copied into the encoding)", known)
	}
	r.Results[3].VecSums = nil
	if _, sums := r.EncodeVec(100); sums != nil {
		t.Fatalf("sums %v without any known", sums)
	}
	if got := bytes.Join(parts, nil); !bytes.Equal(got, e.Bytes()) {
		t.Fatalf("EncodeVec concatenation differs from Encode (%d vs %d bytes)", len(got), len(e.Bytes()))
	}
	shared := 0
	for _, p := range parts {
		if len(p) > 0 && &p[0] == &big[0] {
			shared++
		}
	}
	if shared != 2 {
		t.Fatalf("%d parts reference the large data, want 2", shared)
	}
}

// Request.EncodeVec's parts concatenate to Encode's bytes (section length
// included) and decode to the same request.
func TestRequestEncodeVec(t *testing.T) {
	big := bytes.Repeat([]byte("w"), 5000)
	req := &osdop.Request{Pool: 2, Seed: 9, OID: "tail_1", Client: 5, Tid: 11, Ops: []osdop.Op{
		{Code: osdop.Create, Exclusive: true}, {Code: osdop.WriteFull, Data: big}, {Code: osdop.SetXattr, Name: "rgw.head", Data: []byte("{}")},
		{Code: osdop.Write, Off: 5000, Data: big}}}
	e := wire.NewEncoder(nil)
	req.Encode(e)
	parts := req.EncodeVec(1000)
	joined := bytes.Join(parts, nil)
	if !bytes.Equal(joined, e.Bytes()) {
		t.Fatalf("EncodeVec concatenation differs from Encode (%d vs %d bytes)", len(joined), len(e.Bytes()))
	}
	if len(parts) != 5 {
		t.Fatalf("%d parts, want 5 (two data parts)", len(parts))
	}
	got, err := osdop.DecodeRequest(joined)
	if err != nil || got.OID != req.OID || len(got.Ops) != 4 || !bytes.Equal(got.Ops[3].Data, big) || got.Ops[2].Name != "rgw.head" {
		t.Fatalf("decoding the concatenation: %v", err)
	}
}
