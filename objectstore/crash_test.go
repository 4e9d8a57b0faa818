package objectstore_test

import (
	"bufio"
	"bytes"
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
				// objects 3-5 never have omap entries (crashPlain): their
				// removals write no range deletion
				i := rng.Intn(6)
				name := fmt.Sprintf("r%s-g%d-%d", round, g, i)
				if i >= 3 {
					name = fmt.Sprintf("r%s-g%d-%s%d", round, g, crashPlain, i)
				}
				var txn objectstore.Transaction
				if rng.Intn(8) == 0 {
					txn.Remove(crashColl, name)
					say("BEGIN %s rm", name)
				} else {
					txn.WriteFull(crashColl, name, versionData(name, v))
					txn.SetAttr(crashColl, name, "v", []byte(strconv.Itoa(v)))
					if i < 3 {
						txn.OmapSet(crashColl, name, []objectstore.KV{{Key: "v", Value: []byte(strconv.Itoa(v))}})
					}
					say("BEGIN %s %d", name, v)
				}
				err := s.Apply(&txn)
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

// crashPlain marks the names of the crash test's objects without omap
// entries.
const crashPlain = "plain"

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
				a, err1 := s.GetAttr(crashColl, name, "v")
				kv, err2 := s.OmapGet(crashColl, name, []string{"v"})
				if strings.Contains(name, crashPlain) {
					if err1 != nil || err2 != nil || len(kv) != 0 {
						t.Fatalf("round %d: %s: attr %q (%v), omap %q (%v); want an attr and no omap", round, name, a, err1, kv, err2)
					}
				} else if err1 != nil || err2 != nil || string(kv["v"]) != string(a) {
					t.Fatalf("round %d: %s: attr %q (%v) and omap %q (%v) disagree", round, name, a, err1, kv["v"], err2)
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
		}
		s.Close()
		t.Logf("round %d: killed after %d acknowledged transactions; %d objects verified", round, acks, len(want))
	}
}
