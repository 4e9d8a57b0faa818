package objectstore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
)

// versionData is the content of version v of an object: a size chosen to
// exercise inline and on-device storage, bytes derived from name and v.
func versionData(name string, v int) []byte {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", name, v)
	rng := rand.New(rand.NewSource(int64(h.Sum64())))
	sizes := []int{0, 100, 5000, 40000, 70000, 300000}
	b := make([]byte, sizes[rng.Intn(len(sizes))])
	rng.Read(b)
	return b
}

const crashColl = objectstore.Coll("9.0")

// TestCrashChild is the process the crash test kills; it does nothing
// unless started by TestCrashKill9.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("SHOAL_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process for TestCrashKill9")
	}
	round := os.Getenv("SHOAL_CRASH_ROUND")
	s, err := objectstore.Open(objectstore.Options{Dir: dir, Size: 256 << 20, InlineMax: 8192})
	if err != nil {
		fmt.Println("FATAL", err)
		os.Exit(1)
	}
	var setup objectstore.Transaction
	setup.CreateCollection(crashColl)
	if err := s.Apply(&setup); err != nil && !errors.Is(err, objectstore.ErrExists) {
		fmt.Println("FATAL", err)
		os.Exit(1)
	}
	var mu sync.Mutex // one line at a time on stdout
	say := func(format string, a ...any) {
		mu.Lock()
		fmt.Printf(format+"\n", a...)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for v := 1; ; v++ {
				name := crashName(fmt.Sprintf("r%s-g%d-", round, g), rng.Intn(6))
				var txn objectstore.Transaction
				if rng.Intn(8) == 0 {
					txn.Remove(crashColl, name)
					say("BEGIN %s rm", name)
				} else {
					if rng.Intn(3) == 0 {
						// keep the version being replaced as a clone
						// sharing its blocks (refs.go), as a snapshot does
						txn.Touch(crashColl, name)
						txn.Clone(crashColl, name, name+crashSnap)
					}
					crashWrite(&txn, name, v)
					say("BEGIN %s %d", name, v)
				}
				err := s.Apply(&txn)
				switch {
				case err == nil && g == 0 && v%8 == 0:
					// flush the metadata store's memtable now and then,
					// so that the kill may fall in a flush and the reopened
					// store reads values from blob files
					err = s.FlushMeta()
				case err == nil && g == 1 && v%16 == 0:
					// or in a full compaction (shoal osd compact)
					err = s.CompactMeta(context.Background())
				}
				switch {
				case err == nil:
					say("ACK %s", name)
				case errors.Is(err, objectstore.ErrNotFound): // removing an absent object
					say("NOOP %s", name)
				default:
					say("FATAL %v", err)
					os.Exit(1)
				}
			}
		}(g)
	}
	wg.Wait()
}

// crashSnap ends the name of the clone a crash test's write may keep of
// the version it replaces.
const crashSnap = "~snap"

// crashPlain marks the names of the crash tests' objects without omap
// entries: their removals write no range deletion.
const crashPlain = "plain"

// crashName names object i (0-5) of a crash test's writer: prefix, then
// i, with crashPlain before it for objects 3-5.
func crashName(prefix string, i int) string {
	if i >= 3 {
		return fmt.Sprintf("%s%s%d", prefix, crashPlain, i)
	}
	return fmt.Sprintf("%s%d", prefix, i)
}

// crashWrite adds version v of object name to txn: its data
// (versionData), the attribute "v" and, unless the object is plain
// (crashPlain), the omap entry "v", both holding v.
func crashWrite(txn *objectstore.Transaction, name string, v int) {
	txn.WriteFull(crashColl, name, versionData(name, v))
	txn.SetAttr(crashColl, name, "v", []byte(strconv.Itoa(v)))
	if !strings.Contains(name, crashPlain) {
		txn.OmapSet(crashColl, name, []omap.KV{{Key: "v", Value: []byte(strconv.Itoa(v))}})
	}
}

// crashOmapAgrees checks object name's omap against its attribute "v"
// (attr), as crashWrite wrote them: no entry for a plain object, else the
// entry "v" equal to attr.
func crashOmapAgrees(s objectstore.Store, name string, attr []byte) error {
	kv, err := s.OmapGet(crashColl, name, []string{"v"})
	switch {
	case err != nil:
		return fmt.Errorf("%s: omap: %w", name, err)
	case strings.Contains(name, crashPlain) && len(kv) != 0:
		return fmt.Errorf("%s: omap %q, want none", name, kv)
	case !strings.Contains(name, crashPlain) && string(kv["v"]) != string(attr):
		return fmt.Errorf("%s: attr %q and omap %q disagree", name, attr, kv["v"])
	}
	return nil
}

// objState is an object's expected state: version > 0, or 0 for absent.
type objState struct{ acked, inflight int }

func TestCrashKill9(t *testing.T) {
	dir := t.TempDir()
	want := map[string]*objState{}
	rng := rand.New(rand.NewSource(int64(os.Getpid())))
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), "SHOAL_CRASH_DIR="+dir, fmt.Sprintf("SHOAL_CRASH_ROUND=%d", round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 30 + rng.Intn(300)
		acks := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch f[0] {
			case "BEGIN":
				st := want[f[1]]
				if st == nil {
					st = &objState{}
					want[f[1]] = st
				}
				st.inflight = 0
				if f[2] != "rm" {
					st.inflight, _ = strconv.Atoi(f[2])
				}
			case "ACK":
				st := want[f[1]]
				st.acked = st.inflight
				acks++
			case "NOOP":
				want[f[1]].inflight = want[f[1]].acked
			case "FATAL":
				t.Fatalf("child: %s", sc.Text())
			}
			if acks == killAfter {
				// keep reading: lines the child wrote before it died
				// (a BEGIN whose transaction may have committed) are
				// still in the pipe
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}
		cmd.Wait()
		if acks < killAfter {
			t.Fatalf("round %d: child stopped after %d acks", round, acks)
		}
		s, err := objectstore.Open(objectstore.Options{Dir: dir})
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		if err := s.Fsck(true); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for name, st := range want {
			got := 0
			data, err := s.Read(crashColl, name, 0, 0)
			if err == nil {
				a, err := s.GetAttr(crashColl, name, "v")
				if err != nil {
					t.Fatalf("round %d: %s: attr: %v", round, name, err)
				}
				if err := crashOmapAgrees(s, name, a); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				got, _ = strconv.Atoi(string(a))
				if !bytes.Equal(data, versionData(name, got)) {
					t.Fatalf("round %d: %s: data is not version %d's", round, name, got)
				}
			} else if !errors.Is(err, objectstore.ErrNotFound) {
				t.Fatalf("round %d: %s: %v", round, name, err)
			}
			if got != st.acked && got != st.inflight {
				t.Fatalf("round %d: %s at version %d; acknowledged %d, in flight %d", round, name, got, st.acked, st.inflight)
			}
			st.acked, st.inflight = got, got
			// a clone holds a whole version: its attribute's, or none
			snap, err := s.Read(crashColl, name+crashSnap, 0, 0)
			if errors.Is(err, objectstore.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatalf("round %d: %s%s: %v", round, name, crashSnap, err)
			}
			a, err := s.GetAttr(crashColl, name+crashSnap, "v")
			v, _ := strconv.Atoi(string(a))
			if (err != nil && len(snap) != 0) || (err == nil && !bytes.Equal(snap, versionData(name, v))) {
				t.Fatalf("round %d: %s%s: %d bytes, not version %q's (%v)", round, name, crashSnap, len(snap), a, err)
			}
		}
		blobs := s.MetaStats().BlobBytes
		s.Close()
		t.Logf("round %d: killed after %d acknowledged transactions; %d objects verified, %d bytes in blob files", round, acks, len(want), blobs)
		if round > 0 && blobs == 0 {
			t.Fatalf("round %d: no value in a blob file: the test did not exercise them", round)
		}
	}
}
