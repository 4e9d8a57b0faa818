package osd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/internal/durable"
	"github.com/shoal-project/shoal/objectstore"
)

// The OSD's capacity for the I/O scheduler is measured once, when the
// OSD first starts on its store (Ceph runs `osd bench` at boot for
// osd_mclock_max_capacity_iops_[hdd|ssd]; see Ceph's mClock config
// reference, "OSD capacity determination"): random 4 KiB writes into a
// few 4 MiB objects, from capacityWriters writers at once so that the
// store's group commit batches them as it batches client writes, for
// capacityOps writes or capacityTime, whichever ends first. The result is
// kept in the data directory (capacityFile) and replaces the configured
// capacity unless that is set explicitly or the result is above the
// threshold (osd_mclock_iops_capacity_threshold_*: a cache, not the
// device, answered).
const (
	capacityFile    = "mclock_capacity_iops"
	capacityWriters = 16
	capacityOps     = 1024
	capacityTime    = time.Second
	capacityObjSize = 4 << 20
	capacityColl    = objectstore.Coll("mclock_bench")
)

// measureCapacity returns the store's random 4 KiB write rate (ops/s),
// leaving nothing behind.
func measureCapacity(st objectstore.Store) (float64, error) {
	if err := removeBench(st); err != nil { // left by a crash mid-measurement
		return 0, err
	}
	var setup objectstore.Transaction
	setup.CreateCollection(capacityColl)
	if err := st.Apply(&setup); err != nil {
		return 0, fmt.Errorf("create bench collection: %w", err)
	}
	defer removeBench(st)
	block := make([]byte, objectstore.BlockSize)
	for i := range block {
		block[i] = byte(i * 7)
	}
	// each writer counts its writes and keeps its error in its own slot
	done := make([]int, capacityWriters)
	errs := make([]error, capacityWriters)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range capacityWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for ; done[w] < capacityOps/capacityWriters && time.Since(start) < capacityTime; done[w]++ {
				var t objectstore.Transaction
				t.Write(capacityColl, benchOID(w), uint64(rng.IntN(capacityObjSize/len(block))*len(block)), block)
				if errs[w] = <-st.Submit(&t); errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("bench writes: %w", err)
	}
	total := 0
	for _, n := range done {
		total += n
	}
	return float64(total) / elapsed.Seconds(), nil
}

func benchOID(w int) string { return "bench_" + strconv.Itoa(w) }

// removeBench removes the measurement's collection and objects, if any.
func removeBench(st objectstore.Store) error {
	colls, err := st.Collections()
	if err != nil || !slices.Contains(colls, capacityColl) {
		return err
	}
	oids, err := st.List(capacityColl, "", 0)
	if err != nil {
		return err
	}
	var t objectstore.Transaction
	for _, oid := range oids {
		t.Remove(capacityColl, oid)
	}
	t.RemoveCollection(capacityColl)
	if err := st.Apply(&t); err != nil {
		return fmt.Errorf("remove bench collection: %w", err)
	}
	return nil
}

// loadCapacity sets the capacity the scheduler may use instead of the
// configured one: the measurement kept in the data directory, or a new
// one for a store that can be measured (a BlockStore) unless
// osd_mclock_skip_benchmark is set. A failed measurement is logged and
// leaves the configured capacity.
func (d *OSD) loadCapacity() {
	path := filepath.Join(d.o.DataDir, capacityFile)
	if b, err := os.ReadFile(path); err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && v > 0 {
			d.qos.setMeasured(v)
			return
		}
	}
	if _, ok := d.store.(*objectstore.BlockStore); !ok || d.conf().Bool("osd_mclock_skip_benchmark") || d.o.DataDir == "" {
		return
	}
	iops, err := measureCapacity(d.store)
	if err != nil {
		d.log.Warn("measuring the device's 4 KiB write capacity failed; using osd_mclock_max_capacity_iops", "err", err)
		return
	}
	iops = math.Round(iops*10) / 10 // as kept
	if err := durable.WriteFile(path, []byte(strconv.FormatFloat(iops, 'f', 1, 64)+"\n"), 0o644); err != nil {
		d.log.Warn("keeping the measured capacity", "err", err)
	}
	d.log.Info("measured the device's random 4 KiB write capacity (for the I/O scheduler)", "iops", fmt.Sprintf("%.0f", iops), "kept_in", path)
	d.qos.setMeasured(iops)
}
