package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// objectMap is `shoal osd map --format json`.
type objectMap struct {
	PGID          string  `json:"pgid"`
	Acting        []int32 `json:"acting"`
	ActingPrimary int32   `json:"acting_primary"`
}

func (c *tcluster) osdMap(pool, object string) objectMap {
	c.t.Helper()
	var om objectMap
	if err := json.Unmarshal([]byte(c.must("osd", "map", pool, object, "--format", "json")), &om); err != nil {
		c.t.Fatal(err)
	}
	return om
}

// pgStamps is a PG's scrub stamps from `shoal pg ls`.
func (c *tcluster) pgStamps(pgid string) (scrub, deep time.Time, state string) {
	c.t.Helper()
	var pgs []struct {
		PGID          string    `json:"pgid"`
		State         string    `json:"state"`
		LastScrub     time.Time `json:"last_scrub_stamp"`
		LastDeepScrub time.Time `json:"last_deep_scrub_stamp"`
	}
	if err := json.Unmarshal([]byte(c.must("pg", "ls", "--format", "json")), &pgs); err != nil {
		c.t.Fatal(err)
	}
	for _, pg := range pgs {
		if pg.PGID == pgid {
			return pg.LastScrub, pg.LastDeepScrub, pg.State
		}
	}
	c.t.Fatalf("pg ls does not list %s", pgid)
	return
}

// deepScrub runs `shoal pg CMD PGID` (deep-scrub or repair) and waits
// until the PG's deep-scrub stamp passes.
func (c *tcluster) deepScrub(cmd, pgid string) {
	c.t.Helper()
	_, before, _ := c.pgStamps(pgid)
	out := c.must("pg", cmd, pgid)
	if !strings.Contains(out, "instructing pg "+pgid) {
		c.t.Fatalf("pg %s: %q", cmd, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, deep, _ := c.pgStamps(pgid); deep.After(before) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("pg %s %s did not finish in 60 s", cmd, pgid)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// findOnDisk returns the offset of the 4 KiB block holding want in the
// data file at path, reading only its allocated extents (SEEK_DATA).
func findOnDisk(t *testing.T, path string, want []byte) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var off int64
	for {
		data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if err != nil {
			t.Fatalf("%s: no extent holds the block", path)
		}
		hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			t.Fatal(err)
		}
		for pos := data &^ 4095; pos < hole; pos += int64(len(buf)) {
			n, err := f.ReadAt(buf, pos)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			for i := 0; i+len(want) <= n; i += 4096 {
				if bytes.Equal(buf[i:i+len(want)], want) {
					return pos + int64(i)
				}
			}
		}
		off = hole
	}
}

// TestDeepScrubRepairsCorruptReplica flips a byte of one replica's copy
// on its OSD's data device: a deep scrub finds the copy unreadable (its
// block checksum fails), health turns HEALTH_ERR naming the PG, `pg
// list-inconsistent` names the object and the OSD, and `pg repair`
// rewrites the copy from a good one; a deep scrub after it is clean.
func TestDeepScrubRepairsCorruptReplica(t *testing.T) {
	c := up(t, "--osds", "3")
	data := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	file := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c.must("rados", "-p", "data", "put", "victim", file)
	om := c.osdMap("data", "victim")
	replica := om.Acting[1]
	dev := filepath.Join(c.data, fmt.Sprintf("osd.%d", replica), "store", "block")
	block := data[64<<10 : 68<<10]
	off := findOnDisk(t, dev, block)
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{block[100] ^ 0x5a}, off+100); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Logf("flipped a byte of %s on osd.%d at offset %d of its device (pg %s, acting %v)", "victim", replica, off+100, om.PGID, om.Acting)

	c.deepScrub("deep-scrub", om.PGID)
	c.waitHealth("HEALTH_ERR", 30*time.Second)
	detail, _ := c.run("health", "detail")
	for _, want := range []string{"Possible data damage: 1 pgs inconsistent", "1 scrub errors", "pg " + om.PGID + " is active+clean+inconsistent", "shoal pg repair " + om.PGID} {
		if !strings.Contains(detail, want) {
			t.Fatalf("health detail lacks %q:\n%s", want, detail)
		}
	}
	var list struct {
		Inconsistents []struct {
			Object  string `json:"object"`
			AuthOSD int32  `json:"selected_osd"`
			Shards  []struct {
				OSD    int32    `json:"osd"`
				Errors []string `json:"errors"`
			} `json:"shards"`
		} `json:"inconsistents"`
	}
	out := c.must("pg", "list-inconsistent", om.PGID)
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Inconsistents) != 1 || list.Inconsistents[0].Object != "victim" || list.Inconsistents[0].AuthOSD == replica {
		t.Fatalf("list-inconsistent:\n%s", out)
	}
	for _, sh := range list.Inconsistents[0].Shards {
		if bad := len(sh.Errors) > 0; bad != (sh.OSD == replica) || (bad && sh.Errors[0] != "read_error") {
			t.Fatalf("list-inconsistent: osd.%d errors %v (the corrupt copy is on osd.%d):\n%s", sh.OSD, sh.Errors, replica, out)
		}
	}

	c.deepScrub("repair", om.PGID)
	c.waitHealth("HEALTH_OK", 30*time.Second)
	c.deepScrub("deep-scrub", om.PGID)
	if out := c.must("pg", "list-inconsistent", om.PGID); !strings.Contains(out, `"inconsistents": []`) {
		t.Fatalf("deep scrub after repair:\n%s", out)
	}
	got := filepath.Join(t.TempDir(), "got")
	c.must("rados", "-p", "data", "get", "victim", got)
	if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("victim after repair: %v (%d bytes)", err, len(b))
	}
	if _, _, state := c.pgStamps(om.PGID); state != "active+clean" {
		t.Fatalf("pg %s after repair: %s", om.PGID, state)
	}
}
